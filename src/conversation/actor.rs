//! One conversation's actor: woken by the inbox, it claims that conversation's stored events
//! in arrival order and runs each as a turn; after `idle` without a wake-up it retires. Its
//! agent profile and model are resolved once, when it starts.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchboard_channel::ConversationKey;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Registry, turn};
use crate::profile::Active;

/// An event claimed this often without finishing (it crashed the process each time) is
/// given up on rather than crashing it forever.
const MAX_ATTEMPTS: i64 = 5;

/// The actor loop.
pub(super) async fn run(
    registry: Arc<Registry>,
    key: ConversationKey,
    id: u64,
    mut wake: mpsc::Receiver<()>,
    current: Arc<Mutex<Option<CancellationToken>>>,
) {
    let deps = Arc::clone(&registry.deps);
    let active = deps
        .agents
        .profiles()
        .activate(deps.store.as_ref(), &key)
        .await;
    loop {
        tokio::select! {
            biased;
            () = deps.lifecycle.draining().cancelled() => break,
            woken = tokio::time::timeout(deps.lifecycle.idle(), wake.recv()) => match woken {
                Ok(Some(())) => drain(&registry, &key, &active, &current).await,
                Ok(None) => break,
                Err(_) if registry.retire(&key, id, &wake) => break,
                Err(_) => {}
            },
        }
    }
}

/// Claim and process events of `key` until none is left.
async fn drain(
    registry: &Registry,
    key: &ConversationKey,
    active: &Active,
    current: &Mutex<Option<CancellationToken>>,
) {
    let deps = &registry.deps;
    let mut store_failures = 0u32;
    while !deps.lifecycle.draining().is_cancelled() {
        // While a turn waits for an approval, only control events (buttons, /stop,
        // /approve, /deny) are taken; messages wait behind it in order.
        // A failure of either read is retried below like any claim failure, so a database
        // that is briefly away does not leave the conversation waiting for the sweep.
        let claimed = match deps.store.pending_approval(key).await {
            Ok(pending) => {
                let waiting = pending.is_some();
                deps.lifecycle
                    .claim(deps.store.as_ref(), key, waiting)
                    .await
            }
            Err(err) => Err(err),
        };
        let row = match claimed {
            Ok(Some(row)) => row,
            Ok(None) => return,
            Err(err) => {
                store_failures += 1;
                tracing::error!(%key, error = %err, "claiming from the inbox failed");
                if store_failures > 5 {
                    return; // the periodic sweep wakes us again
                }
                tokio::time::sleep(Duration::from_millis(200 << store_failures)).await;
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
        turn::process(deps, active, row, token).await;
        current.lock().expect("poisoned").take();
    }
}
