//! The live conversation registry: at most one actor per `ConversationKey`, created when the
//! inbox wakes a conversation and removed when it retires.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use dashmap::DashMap;
use switchboard_channel::ConversationKey;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::{Deps, actor};
use crate::store::StoreError;

/// A live actor as the registry sees it.
struct Handle {
    /// Distinguishes this actor from a successor under the same key.
    id: u64,
    /// Capacity 1: one pending wake-up is as good as many.
    wake: mpsc::Sender<()>,
    /// What the registry tells the actor besides waking it.
    signals: Arc<Signals>,
}

/// What the registry and a live actor share, besides the wake-up channel.
#[derive(Default)]
pub(super) struct Signals {
    /// Cancels the running turn (`/stop`). A std Mutex: held only to swap a token.
    pub(super) current: Mutex<Option<CancellationToken>>,
    /// Set by the sweep when the conversation has a pending approval whose prompt nobody
    /// has seen: the actor's next batch reads it and posts the prompt first. Where one
    /// process owns the database, only this tells the actor to look (a replica's actor
    /// looks before every batch).
    pub(super) unseen: AtomicBool,
}

/// The live conversation registry.
pub struct Registry {
    actors: DashMap<ConversationKey, Handle>,
    pub(super) deps: Arc<Deps>,
    tasks: TaskTracker,
    next_id: AtomicU64,
}

impl Registry {
    /// A registry whose actors run on `tasks`.
    pub fn new(deps: Arc<Deps>, tasks: TaskTracker) -> Arc<Self> {
        Arc::new(Self {
            actors: DashMap::new(),
            deps,
            tasks,
            next_id: AtomicU64::new(1),
        })
    }

    /// Make sure an actor for `key` runs and looks at the inbox.
    pub fn wake(self: &Arc<Self>, key: &ConversationKey) {
        self.signal(key, false);
    }

    /// [`Self::wake`], and have the actor post the prompt of its pending approval that
    /// nobody has seen (the process or replica that stored it died before posting it, or
    /// the post failed) before it claims anything.
    fn wake_unseen(self: &Arc<Self>, key: &ConversationKey) {
        self.signal(key, true);
    }

    fn signal(self: &Arc<Self>, key: &ConversationKey, unseen: bool) {
        if self.deps.lifecycle.draining().is_cancelled() {
            return; // stored events wait for the next start
        }
        let entry = self.actors.entry(key.clone()).or_insert_with(|| {
            let (tx, rx) = mpsc::channel(1);
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            let signals = Arc::new(Signals::default());
            self.tasks.spawn(actor::run(
                Arc::clone(self),
                key.clone(),
                id,
                rx,
                Arc::clone(&signals),
            ));
            Handle {
                id,
                wake: tx,
                signals,
            }
        });
        if unseen {
            // Before the wake-up, so the batch it starts sees it.
            entry.signals.unseen.store(true, Ordering::Release);
        }
        let _ = entry.wake.try_send(());
    }

    /// Cancel the turn running in `key`, if any. Returns whether one was running.
    pub fn cancel_turn(&self, key: &ConversationKey) -> bool {
        let Some(handle) = self.actors.get(key) else {
            return false;
        };
        let current = handle.signals.current.lock().expect("poisoned").take();
        current.map(|t| t.cancel()).is_some()
    }

    /// Conversations with a live actor.
    pub fn active(&self) -> usize {
        self.actors.len()
    }

    /// Remove actor `id` of `key` if nothing woke it meanwhile. Runs under the map's shard
    /// lock, so a concurrent `wake` either lands before (and the actor stays) or creates a
    /// successor after.
    pub(super) fn retire(&self, key: &ConversationKey, id: u64, rx: &mpsc::Receiver<()>) -> bool {
        let retired = self
            .actors
            .remove_if(key, |_, h| h.id == id && rx.is_empty())
            .is_some();
        if retired {
            self.deps.outbound.retired(key);
        }
        retired
    }

    /// Wake every conversation with claimable events (start-up recovery, leases that ran out
    /// on the clock). One step; the gateway's sweep loop repeats it.
    pub async fn sweep(self: &Arc<Self>) -> Result<usize, StoreError> {
        let deps = &self.deps;
        // Pending approvals: expiry timers on this replica too, and a wake-up where the
        // prompt was never seen (the actor that next holds the conversation posts it).
        // First, so that an actor this sweep starts knows of its unseen prompt before its
        // first batch.
        match deps.approvals.rearm().await {
            Ok(unseen) => unseen.iter().for_each(|key| self.wake_unseen(key)),
            Err(err) => tracing::warn!(error = %err, "could not re-arm pending approvals"),
        }
        let keys = deps.lifecycle.claimable(deps.store.as_ref()).await?;
        for key in &keys {
            self.wake(key);
        }
        Ok(keys.len())
    }

    /// The parts the actors share (the gateway's shutdown and tests reach them here).
    pub fn deps(&self) -> &Arc<Deps> {
        &self.deps
    }
}

/// The cluster's wake-up tasks reach the actors through this (`cluster` sits below).
#[async_trait::async_trait]
impl crate::cluster::Conversations for Arc<Registry> {
    fn wake(&self, key: &ConversationKey) {
        Registry::wake(self, key);
    }

    async fn sweep(&self) -> Result<usize, StoreError> {
        Registry::sweep(self).await
    }
}

/// The schedule ticker's notices about skipped fires go out through the outbound path.
#[async_trait::async_trait]
impl crate::schedule::ticker::Notify for Arc<Registry> {
    async fn notify(&self, key: &ConversationKey, text: &str) {
        let out = &self.deps().outbound;
        let Some(route) = out.route(&key.channel) else {
            return;
        };
        if let Err(err) = out.post(&route, key, text, Vec::new()).await {
            tracing::warn!(key = %key, error = %err, "could not tell a conversation about a skipped schedule");
        }
    }
}
