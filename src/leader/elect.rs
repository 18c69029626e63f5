//! One role's election loop, run in place of the channel's `start`: wait in standby until
//! the lease is free, take it (a new term), run the receive loop under that term while
//! renewing, and end the term when the lease is lost, the replica's own trust window lapses
//! (renewals failed for most of a TTL: the database may already have given the lease away),
//! the platform says another receiver runs (step-down), or the gateway stops (drain: the
//! lease is released so a standby takes over at once).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rand::Rng;
use switchboard_channel::{Channel, ChannelError, EventSink};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::lease::Lease;
use super::sink::TermSink;
use super::{Elected, Role};

/// How one term ended.
enum TermEnd {
    /// The gateway is stopping.
    Shutdown,
    /// The lease was lost or could not be renewed in time; stand by again.
    Lost,
    /// The platform reported another receiver; let someone else lead for a while.
    SteppedDown,
    /// The receive loop failed for good (a rejected token).
    Failed(ChannelError),
}

/// Stand by, lead, repeat, until `shutdown`.
pub(crate) async fn run(
    channel: Arc<dyn Channel>,
    elected: Arc<Elected>,
    lease: Lease,
    role: Arc<Mutex<Role>>,
    sink: Arc<dyn EventSink>,
    shutdown: CancellationToken,
) -> Result<(), ChannelError> {
    loop {
        let Some(term) = standby(&elected, &lease, &role, &shutdown).await else {
            return Ok(());
        };
        tracing::info!(role = %lease.role, term, "leading");
        set(&role, Role::Leading { term });
        let end = lead(&channel, &elected, &lease, term, &sink, &shutdown).await;
        set(&role, Role::Standby { holder: None });
        if let Err(err) = lease.release(term).await {
            tracing::warn!(role = %lease.role, error = %err, "could not release the lease; it runs out by itself");
        }
        match end {
            TermEnd::Shutdown => return Ok(()),
            TermEnd::Failed(err) => return Err(err),
            TermEnd::Lost => {
                tracing::warn!(role = %lease.role, term, "lost the lease; standing by")
            }
            TermEnd::SteppedDown => {
                // Give another replica the first chance at the free lease.
                tokio::select! {
                    () = shutdown.cancelled() => return Ok(()),
                    () = tokio::time::sleep(elected.settings.ttl) => {}
                }
            }
        }
    }
}

fn set(role: &Mutex<Role>, to: Role) {
    *role.lock().unwrap_or_else(PoisonError::into_inner) = to;
}

/// Look for a free lease every renew interval (or when a release is announced); the term
/// taken, or `None` on shutdown.
async fn standby(
    elected: &Elected,
    lease: &Lease,
    role: &Mutex<Role>,
    shutdown: &CancellationToken,
) -> Option<i64> {
    loop {
        if shutdown.is_cancelled() {
            return None;
        }
        match lease.try_acquire().await {
            Ok(Some(term)) => return Some(term),
            Ok(None) => {
                let holder = lease.holder_now().await.ok().flatten();
                set(role, Role::Standby { holder });
            }
            Err(err) => {
                tracing::warn!(role = %lease.role, error = %err, "leader lease look-up failed")
            }
        }
        let every = elected.settings.renew_every;
        let jitter = rand::thread_rng().gen_range(0..=every.as_millis() / 4);
        let wait = every + Duration::from_millis(u64::try_from(jitter).unwrap_or(0));
        tokio::select! {
            () = shutdown.cancelled() => return None,
            () = tokio::time::sleep(wait) => {}
            () = elected.released.notified() => {}
        }
    }
}

/// Run the receive loop under `term` until the term ends.
async fn lead(
    channel: &Arc<dyn Channel>,
    elected: &Elected,
    lease: &Lease,
    term: i64,
    sink: &Arc<dyn EventSink>,
    shutdown: &CancellationToken,
) -> TermEnd {
    let lost = shutdown.child_token();
    let stepped_down = Arc::new(Mutex::new(None));
    let term_sink: Arc<dyn EventSink> = Arc::new(TermSink {
        inner: Arc::clone(sink),
        lease: lease.clone(),
        term,
        lost: lost.clone(),
        stepped_down: Arc::clone(&stepped_down),
    });
    let receive = channel.start(term_sink, lost.clone());
    let keep = keep(elected, lease, term, &lost);
    tokio::pin!(receive, keep);
    let mut receiving = true;
    loop {
        tokio::select! {
            () = &mut keep => break,
            done = &mut receive, if receiving => match done {
                // Webhook registration returns at once; the lease is kept till the term ends.
                Ok(()) => receiving = false,
                Err(err) => {
                    lost.cancel();
                    return TermEnd::Failed(err);
                }
            },
        }
    }
    lost.cancel();
    if receiving {
        // The loop stops on `lost`; wait for it so no request of this term is in flight.
        let _ = receive.await;
    }
    if shutdown.is_cancelled() {
        TermEnd::Shutdown
    } else if stepped_down
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .is_some()
    {
        TermEnd::SteppedDown
    } else {
        TermEnd::Lost
    }
}

/// Renew the lease every renew interval until `lost` is cancelled (by shutdown, a step-down
/// or a refused cursor), the lease is gone, or no renewal succeeded for a trust window.
async fn keep(elected: &Elected, lease: &Lease, term: i64, lost: &CancellationToken) {
    let settings = &elected.settings;
    let mut trusted_until = Instant::now() + settings.trust();
    loop {
        tokio::select! {
            biased;
            () = lost.cancelled() => return,
            () = tokio::time::sleep_until(trusted_until) => {
                tracing::warn!(role = %lease.role, term, "no lease renewal within the trust window; stopping");
                return;
            }
            () = tokio::time::sleep(settings.renew_every) => {}
        }
        let sent = Instant::now();
        let renewed = tokio::select! {
            biased;
            () = lost.cancelled() => return,
            () = tokio::time::sleep_until(trusted_until) => continue,
            renewed = lease.renew(term) => renewed,
        };
        match renewed {
            Ok(true) => trusted_until = sent + settings.trust(),
            Ok(false) => {
                tracing::warn!(role = %lease.role, term, "the lease was taken over");
                return;
            }
            Err(err) => tracing::warn!(role = %lease.role, error = %err, "lease renewal failed"),
        }
    }
}
