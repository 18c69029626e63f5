//! Wake-ups across replicas: a `LISTEN` on [`INBOX_CHANNEL`] wakes the local actor of every
//! conversation another replica (or this one) stored an event for; the actor then takes the
//! conversation's lease or finds it held. Notifications sent while the listener connection
//! was down are lost (sqlx's `PgListener` reconnects silently), so every (re)connection is
//! followed by a full rescan, and a jittered fallback poll rescans in any case. The
//! heartbeat lives here too: one more small loop on the shared database.

use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use sqlx::postgres::PgListener;
use tokio_util::sync::CancellationToken;

use super::Conversations;
use crate::metrics::Metrics;
use crate::store::{ClusterStore, INBOX_CHANNEL};

/// What a wake-up reaches, and where rescans are counted.
pub(super) struct Woken {
    pub(super) conversations: Arc<dyn Conversations>,
    pub(super) metrics: Arc<Metrics>,
}

/// Wait after a failed connection attempt before the next.
const RECONNECT_AFTER: Duration = Duration::from_secs(1);

/// Listen until `stop`, reconnecting (and rescanning) as needed.
pub(super) async fn run(url: String, registry: Woken, poll: Duration, stop: CancellationToken) {
    while !stop.is_cancelled() {
        let listener = match connect(&url).await {
            Ok(listener) => listener,
            Err(err) => {
                tracing::warn!(error = %err, "wake-up listener cannot connect; polling meanwhile");
                rescan(&registry).await;
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(RECONNECT_AFTER) => continue,
                }
            }
        };
        listen(listener, &registry, poll, &stop).await;
    }
}

/// Without a listener (`[cluster] listen = false`): rescan every jittered `poll` until `stop`.
pub(super) async fn poll_only(registry: Woken, poll: Duration, stop: CancellationToken) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(jittered(poll)) => rescan(&registry).await,
        }
    }
}

async fn connect(url: &str) -> Result<PgListener, sqlx::Error> {
    let mut listener = PgListener::connect(url).await?;
    listener.listen(INBOX_CHANNEL).await?;
    Ok(listener)
}

/// One listening connection: rescan first (anything stored while nobody listened), then
/// wake on every notification, rescan on every loss and every fallback poll.
async fn listen(
    mut listener: PgListener,
    registry: &Woken,
    poll: Duration,
    stop: &CancellationToken,
) {
    rescan(registry).await;
    loop {
        let received = tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(jittered(poll)) => {
                rescan(registry).await;
                continue;
            }
            received = listener.try_recv() => received,
        };
        match received {
            Ok(Some(note)) => match note.payload().parse() {
                Ok(key) => registry.conversations.wake(&key),
                Err(err) => tracing::warn!(error = %err, "ignored a malformed wake-up"),
            },
            // The connection was lost; the next `try_recv` reconnects. Whatever was
            // announced meanwhile is found by a full rescan.
            Ok(None) => {
                tracing::warn!("wake-up listener lost its connection; rescanning");
                rescan(registry).await;
            }
            Err(err) => {
                tracing::warn!(error = %err, "wake-up listener failed; reconnecting");
                rescan(registry).await;
                return;
            }
        }
    }
}

/// Wake every conversation with claimable events.
async fn rescan(registry: &Woken) {
    registry
        .metrics
        .cluster
        .with_label_values(&["rescan"])
        .inc();
    if let Err(err) = registry.conversations.sweep().await {
        tracing::warn!(error = %err, "inbox rescan failed");
    }
}

/// `poll` give or take a quarter, so replicas do not poll in step.
fn jittered(poll: Duration) -> Duration {
    let quarter = poll / 4;
    let spread = rand::thread_rng().gen_range(0..=quarter.as_millis() as u64 * 2);
    poll - quarter + Duration::from_millis(spread)
}

/// Refresh this instance's heartbeat row every `every`; at `stop`, mark it draining.
pub(super) async fn heartbeat(
    store: Arc<dyn ClusterStore>,
    instance: String,
    every: Duration,
    stop: CancellationToken,
) {
    loop {
        if let Err(err) = store.heartbeat(&instance).await {
            tracing::warn!(error = %err, "heartbeat not stored");
        }
        tokio::select! {
            () = stop.cancelled() => break,
            () = tokio::time::sleep(every) => {}
        }
    }
    if let Err(err) = store.set_draining(&instance).await {
        tracing::warn!(error = %err, "could not mark this instance draining");
    }
}
