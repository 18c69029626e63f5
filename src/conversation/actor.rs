//! One conversation's actor: woken by the inbox, it claims that conversation's stored events
//! in arrival order and runs each as a turn; after `idle` without a wake-up it retires. Its
//! agent profile and model are resolved when it starts, and again before every batch when
//! replicas share the database.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchboard_channel::{Backoff, ConversationKey};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::registry::Signals;
use super::{Deps, Registry, turn};
use crate::cluster::Held;
use crate::profile::Active;
use crate::store::{Durable, InboxRow, Refusal, StoreError};

/// An event claimed this often without finishing (it crashed the process each time) is
/// given up on rather than crashing it forever.
const MAX_ATTEMPTS: i64 = 5;
/// Failed claims in a row after which the actor retires; the periodic sweep wakes it again.
const MAX_CLAIM_FAILURES: u32 = 5;
/// The wait after a first failed claim; it doubles per failure in a row.
const FIRST_CLAIM_BACKOFF: Duration = Duration::from_millis(400);
/// The wait after the last failed claim before retiring.
const MAX_CLAIM_BACKOFF: Duration = Duration::from_millis(6400);

/// The actor loop.
pub(super) async fn run(
    registry: Arc<Registry>,
    key: ConversationKey,
    id: u64,
    mut wake: mpsc::Receiver<()>,
    signals: Arc<Signals>,
) {
    let deps = Arc::clone(&registry.deps);
    let active = Box::pin(deps.agents.profiles().activate(deps.store.as_ref(), &key)).await;
    loop {
        tokio::select! {
            biased;
            () = deps.lifecycle.draining().cancelled() => break,
            woken = tokio::time::timeout(deps.lifecycle.idle(), wake.recv()) => match woken {
                // Both boxed: an idle actor (most of them) then keeps only this loop's few
                // words alive, not the space of a whole turn's state machine, which inlined
                // here would be held by every live conversation.
                Ok(Some(())) if Box::pin(defer(&registry, &key)).await => {}
                Ok(Some(())) => Box::pin(drain(&registry, &key, &active, &signals)).await,
                Ok(None) => break,
                Err(_) if registry.retire(&key, id, &wake) => break,
                Err(_) => {}
            },
        }
    }
}

/// Whether to leave `key`'s events to another replica for now: on a shared database, when
/// this one does not reach the chat (a web chat whose tab is open on another replica) and
/// its oldest pending event was stored less than one lease TTL ago. This replica wakes
/// itself to look again then, and takes what is still waiting (the tab may have gone).
async fn defer(registry: &Arc<Registry>, key: &ConversationKey) -> bool {
    let deps = &registry.deps;
    let Some(leases) = deps.lifecycle.leases() else {
        return false;
    };
    if deps
        .outbound
        .route(&key.channel)
        .is_none_or(|r| r.reaches(key))
    {
        return false;
    }
    let oldest = match deps.store.oldest_pending(key).await {
        Ok(Some(oldest)) => oldest,
        // Nothing pending (a row left processing is the lease's business), or unreadable:
        // the claim loop decides.
        Ok(None) | Err(_) => return false,
    };
    let age = deps
        .lifecycle
        .clock()
        .now_ms()
        .saturating_sub(oldest)
        .max(0);
    let left = leases
        .ttl()
        .saturating_sub(Duration::from_millis(age as u64));
    if left.is_zero() {
        return false;
    }
    let (registry, key) = (Arc::clone(registry), key.clone());
    tokio::spawn(async move {
        tokio::time::sleep(left + Duration::from_millis(10)).await;
        registry.wake(&key);
    });
    count(deps, "deferred");
    true
}

/// Claim and process events of `key` until none is left, under the conversation's lease
/// when replicas share the database (given up at the end, so the next batch may run on any
/// replica). A prompt of its pending approval nobody has seen is posted first.
async fn drain(registry: &Registry, key: &ConversationKey, active: &Active, signals: &Signals) {
    let deps = &registry.deps;
    // What only a shared database or an unseen prompt needs is boxed where it runs: this
    // future is held by every conversation while it has work (7.3 kB inline, measured with
    // `size_of_val`), and those paths are rare.
    let held = match deps.lifecycle.leases() {
        None => None,
        Some(leases) => match Box::pin(leases.acquire(key)).await {
            Ok(Some(held)) => Some(held),
            // Another replica holds it; the same wake-up reached it, and the fallback poll
            // looks again once its lease has expired.
            Ok(None) => return,
            Err(err) => {
                tracing::warn!(%key, error = %err, "could not take the conversation lease");
                return;
            }
        },
    };
    // Another replica may have run `/model` or `/tz` here since this actor started: on a
    // shared database the stored choices are read again before every batch.
    let refreshed;
    let active = if deps.store.shared() {
        Box::pin(deps.schedules.refresh_zone(key)).await;
        let profiles = deps.agents.profiles();
        refreshed = Box::pin(profiles.activate(deps.store.as_ref(), key)).await;
        &refreshed
    } else {
        active
    };
    // Another replica may have died between storing an approval here and posting its
    // prompt, so a replica looks before every batch; where one process owns the database,
    // the sweep says when to (start-up after a crash, a post that failed).
    let unseen = signals.unseen.swap(false, Ordering::AcqRel) || deps.store.shared();
    let trusted = !unseen
        || while_trusted(held.as_ref(), Box::pin(post_unseen(deps, key, signals)))
            .await
            .is_some();
    if trusted {
        claim_and_run(deps, key, active, &signals.current, held.as_ref()).await;
    }
    if let Some(held) = held {
        Box::pin(held.release()).await;
    }
}

/// The claim loop of [`drain`]: stops when nothing is left, at shutdown, or when the lease
/// is lost (a running turn is then dropped where it stands: it must not write or post).
async fn claim_and_run(
    deps: &Deps,
    key: &ConversationKey,
    active: &Active,
    current: &Mutex<Option<CancellationToken>>,
    held: Option<&Held>,
) {
    let epoch = held.map_or(0, Held::epoch);
    let mut store_failures = 0u32;
    let mut backoff = Backoff::new(FIRST_CLAIM_BACKOFF, MAX_CLAIM_BACKOFF);
    while !deps.lifecycle.draining().is_cancelled() && held.is_none_or(Held::trusted) {
        // A failure is retried below, so a database that is briefly away does not leave
        // the conversation waiting for the sweep.
        let claimed = claim_next(deps, key, held).await;
        let row = match claimed {
            Ok(Some(row)) => row,
            Ok(None) => return,
            Err(err) => {
                store_failures += 1;
                log_claim_failure(key, &err);
                if store_failures > MAX_CLAIM_FAILURES {
                    return; // the periodic sweep wakes us again
                }
                tokio::time::sleep(backoff.next_delay()).await;
                continue;
            }
        };
        if row.attempts > MAX_ATTEMPTS {
            tracing::error!(%key, inbox = row.id, attempts = row.attempts, "event keeps failing; giving up on it");
            let now = deps.lifecycle.clock().now_ms();
            let _ = deps
                .store
                .fail(row.claim(), "gave up after repeated attempts", now)
                .await;
            continue;
        }
        let token = deps.lifecycle.turn_token();
        *current.lock().expect("poisoned") = Some(token.clone());
        let ended = tokio::select! {
            // Checked first, so a process resumed after a pause drops the turn before it
            // takes another step.
            biased;
            () = lapsed(held) => None,
            ended = while_trusted(held, Box::pin(turn::process(deps, active, row, token))) => ended,
        };
        let ended = ended.unwrap_or_else(|| {
            // Whatever the dropped turn was sending may or may not have arrived.
            tracing::warn!(%key, epoch, "conversation lease lost mid-turn; the turn is dropped");
            count(deps, "unknown_outcome");
            turn::Ended::Fenced
        });
        current.lock().expect("poisoned").take();
        match ended {
            turn::Ended::Fenced => {
                count(deps, "lease_lost");
                return;
            }
            turn::Ended::Drained => return,
            turn::Ended::Normally => {}
        }
    }
}

/// A claim that failed: at ERROR, unless the database refuses writes for a reason that
/// lasts, which the store logged once at ERROR with the fix.
fn log_claim_failure(key: &ConversationKey, err: &StoreError) {
    if Refusal::of(err).is_some() {
        tracing::warn!(%key, error = %err, "claiming from the inbox was refused");
    } else {
        tracing::error!(%key, error = %err, "claiming from the inbox failed");
    }
}

/// The next event of `key` to run. While a turn waits for an approval, the claim takes
/// only control events (buttons, /stop, /approve, /deny) and messages wait behind it in
/// order.
async fn claim_next(
    deps: &Deps,
    key: &ConversationKey,
    held: Option<&Held>,
) -> Result<Option<InboxRow>, StoreError> {
    let epoch = held.map_or(0, Held::epoch);
    deps.lifecycle.claim(deps.store.as_ref(), key, epoch).await
}

/// Post the prompt of `key`'s pending approval if its turn stored it but nobody has seen
/// it: the process or replica that suspended the turn died between the two, or the post
/// failed. A failure is logged; the next sweep tries again.
async fn post_unseen(deps: &Deps, key: &ConversationKey, signals: &Signals) {
    let approval = match deps.store.pending_approval(key).await {
        Ok(Some(approval)) if approval.prompt_ref.is_none() => approval,
        Ok(_) => return,
        Err(err) => {
            tracing::warn!(%key, error = %err, "could not read the pending approval");
            signals.unseen.store(true, Ordering::Release);
            return;
        }
    };
    let Some(route) = deps.outbound.route(&key.channel) else {
        return;
    };
    let durable = Durable::new(deps.lifecycle.turn_token());
    let posted = deps
        .approvals
        .post_unseen(&deps.outbound, &route, &approval, &durable)
        .await;
    if let Err(err) = posted {
        tracing::warn!(%key, approval = %approval.id, error = %err, "could not post an unseen approval prompt");
    }
}

/// `turn`, polled only while `held` is trusted (`None` once it is not). The window is read
/// from the clock before every poll: after a pause (`SIGSTOP`) the lease timer fires only
/// once the runtime has turned its timer wheel, and the turn could otherwise take one more
/// step (an edit of the draft another replica has finished) before that.
async fn while_trusted<T, F: Future<Output = T>>(held: Option<&Held>, turn: F) -> Option<T> {
    let mut turn = std::pin::pin!(turn);
    std::future::poll_fn(|cx| {
        if held.is_some_and(|h| !h.trusted()) {
            return std::task::Poll::Ready(None);
        }
        turn.as_mut().poll(cx).map(Some)
    })
    .await
}

/// Resolves when `held` can no longer be trusted; never without a lease.
async fn lapsed(held: Option<&Held>) {
    match held {
        Some(held) => held.lapsed().await,
        None => std::future::pending().await,
    }
}

/// Count one replica coordination event.
fn count(deps: &Deps, event: &str) {
    deps.metrics.cluster.with_label_values(&[event]).inc();
}
