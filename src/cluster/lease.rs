//! One conversation lease as an actor holds it: acquired before claiming (its epoch fences
//! every write of the turns run under it), renewed in the background, and trusted only for
//! [`ClusterConfig::trust`] after the start of the last successful renewal. When trust
//! lapses, or a renewal finds the lease taken, [`Held::lost`] fires and the actor stops
//! before the database would give the conversation to another replica.

use std::sync::{Arc, Mutex};

use switchboard_channel::ConversationKey;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::ClusterConfig;
use crate::metrics::Metrics;
use crate::store::{ClusterStore, StoreError};

/// Acquires conversation leases for this instance.
pub struct Leases {
    store: Arc<dyn ClusterStore>,
    /// This instance's id, the lease owner.
    owner: String,
    config: ClusterConfig,
    metrics: Arc<Metrics>,
}

impl Leases {
    /// Leases owned by `owner` on `store`, timed by `config`.
    pub fn new(
        store: Arc<dyn ClusterStore>,
        owner: String,
        config: ClusterConfig,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self {
            store,
            owner,
            config,
            metrics,
        }
    }

    /// How long a lease lasts without renewal.
    pub fn ttl(&self) -> std::time::Duration {
        self.config.lease_ttl()
    }

    /// Take `key`'s lease and start renewing it; `None` while another replica holds it
    /// (that replica was woken by the same `NOTIFY`, or the fallback poll retries).
    pub async fn acquire(&self, key: &ConversationKey) -> Result<Option<Held>, StoreError> {
        let started = Instant::now();
        let ttl = self.config.lease_ttl();
        let Some(epoch) = self
            .store
            .acquire_conversation(key, &self.owner, ttl)
            .await?
        else {
            self.count("lease_busy");
            return Ok(None);
        };
        self.count("lease_acquired");
        let lost = CancellationToken::new();
        let trusted_until = Arc::new(Mutex::new(started + self.config.trust()));
        let renewer = tokio::spawn(renew(
            Arc::clone(&self.store),
            (key.clone(), self.owner.clone(), epoch),
            self.config,
            Arc::clone(&trusted_until),
            lost.clone(),
        ));
        Ok(Some(Held {
            key: key.clone(),
            owner: self.owner.clone(),
            epoch,
            lost,
            trusted_until,
            renewer,
            store: Arc::clone(&self.store),
        }))
    }

    /// Count one coordination event.
    pub fn count(&self, event: &str) {
        self.metrics.cluster.with_label_values(&[event]).inc();
    }
}

/// A conversation lease this process holds.
pub struct Held {
    key: ConversationKey,
    owner: String,
    epoch: i64,
    /// Fired when the lease can no longer be trusted.
    lost: CancellationToken,
    /// The end of the trust window, moved on by each successful renewal. Checked on this
    /// process's own monotonic clock, so a process that was paused (`SIGSTOP`) sees the
    /// window lapsed the moment it runs again, before its renewal task has had a turn.
    /// A std Mutex: held only to copy or set an `Instant`.
    trusted_until: Arc<Mutex<Instant>>,
    /// The background renewal, stopped on release.
    renewer: tokio::task::JoinHandle<()>,
    store: Arc<dyn ClusterStore>,
}

impl Held {
    /// The epoch every write under this lease is fenced on.
    pub fn epoch(&self) -> i64 {
        self.epoch
    }

    /// Fires when the lease is lost (taken over, or not renewed within the trust window).
    pub fn lost(&self) -> &CancellationToken {
        &self.lost
    }

    /// Whether the lease may still be trusted now.
    pub fn trusted(&self) -> bool {
        !self.lost.is_cancelled() && Instant::now() < self.deadline()
    }

    /// Resolves once the lease can no longer be trusted (lost, or its window lapsed).
    pub async fn lapsed(&self) {
        loop {
            let deadline = self.deadline();
            tokio::select! {
                () = self.lost.cancelled() => return,
                () = tokio::time::sleep_until(deadline) => {}
            }
            if Instant::now() >= self.deadline() {
                return;
            }
        }
    }

    fn deadline(&self) -> Instant {
        *self.trusted_until.lock().expect("poisoned")
    }

    /// Stop renewing and give the lease up (telling other replicas when events wait).
    pub async fn release(self) {
        self.renewer.abort();
        if self.lost.is_cancelled() {
            return; // nothing of ours is left to give up
        }
        let released = self
            .store
            .release_conversation(&self.key, &self.owner, self.epoch)
            .await;
        if let Err(err) = released {
            tracing::warn!(key = %self.key, error = %err, "could not release a conversation lease; it expires");
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.renewer.abort();
    }
}

/// Renew every `config.renew()` until refused or until `trusted_until` passes without a
/// successful renewal; then fire `lost`.
async fn renew(
    store: Arc<dyn ClusterStore>,
    (key, owner, epoch): (ConversationKey, String, i64),
    config: ClusterConfig,
    trusted_until: Arc<Mutex<Instant>>,
    lost: CancellationToken,
) {
    loop {
        tokio::time::sleep(config.renew()).await;
        let started = Instant::now();
        let deadline = *trusted_until.lock().expect("poisoned");
        let renewal = store.renew_conversation(&key, &owner, epoch, config.lease_ttl());
        match tokio::time::timeout_at(deadline, renewal).await {
            Ok(Ok(true)) if Instant::now() < deadline => {
                *trusted_until.lock().expect("poisoned") = started + config.trust();
            }
            Ok(Ok(true)) => {
                tracing::warn!(%key, epoch, "conversation lease renewed too late to trust; stopping");
                break;
            }
            Ok(Ok(false)) => {
                tracing::warn!(%key, epoch, "conversation lease was taken over; stopping");
                break;
            }
            Ok(Err(err)) if Instant::now() < deadline => {
                tracing::warn!(%key, error = %err, "could not renew a conversation lease; retrying");
            }
            Ok(Err(_)) | Err(_) => {
                tracing::warn!(%key, epoch, "conversation lease not renewed in time; stopping");
                break;
            }
        }
    }
    lost.cancel();
}
