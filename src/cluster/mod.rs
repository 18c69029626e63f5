//! Several gateway replicas on one PostgreSQL, the process's half (the store's half is
//! `store::cluster`): which instance this is, conversation leases held by the actors
//! ([`Leases`]), the heartbeat, the `LISTEN` task that wakes actors when another replica
//! stores an event, and leaving cleanly at shutdown. On SQLite none of it runs: one process
//! owns the file and reclaims everything at start.
//!
//! Layout: this file (instance ids, [`start`] and [`leave`]); `lease` (acquiring, renewing
//! and the trust window of one conversation lease); `listener` (wake-ups, the jittered
//! fallback poll, the heartbeat).

mod lease;
mod listener;

use std::sync::Arc;

use async_trait::async_trait;
use switchboard_channel::ConversationKey;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use lease::{Held, Leases};

use crate::config::ClusterConfig;
use crate::metrics::Metrics;
use crate::store::{ClusterStore, StoreError};

/// What the wake-up tasks drive: the conversations' actors (`conversation::Registry`, which
/// sits above this module and holds its leases through it).
#[async_trait]
pub trait Conversations: Send + Sync + 'static {
    /// Wake the actor of `key`, starting it if needed.
    fn wake(&self, key: &ConversationKey);
    /// Wake every conversation with claimable events; how many were woken.
    async fn sweep(&self) -> Result<usize, StoreError>;
}

/// This replica's part in a shared database: its store, its instance id and its metrics.
pub struct Replica {
    /// The shared store (nothing runs when it is not shared).
    pub store: Arc<dyn ClusterStore>,
    /// This process's instance id ([`instance_id`]).
    pub owner: String,
    /// Where the rescans are counted.
    pub metrics: Arc<Metrics>,
}

/// This process's instance id: the configured one, else `default` alone on SQLite, else
/// (PostgreSQL) the host name plus a random suffix, so scaled copies of one config never
/// share an id. A restart with a generated id takes its old conversations over once their
/// leases expire; a configured id takes them back at once.
pub fn instance_id(configured: Option<&str>, shared: bool) -> String {
    match configured {
        Some(id) => id.to_owned(),
        None if !shared => "default".to_owned(),
        None => {
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .or_else(|| std::env::var("HOSTNAME").ok())
                .map(|h| h.trim().to_owned())
                .filter(|h| !h.is_empty())
                .unwrap_or_else(|| "switchboard".to_owned());
            let suffix = uuid::Uuid::new_v4().simple().to_string();
            format!("{host}-{}", &suffix[..8])
        }
    }
}

/// Start the heartbeat and the wake-up listener of a replica on the shared database at
/// `url` (nothing when the store is not shared).
pub fn start(
    conversations: Arc<dyn Conversations>,
    replica: Replica,
    url: &str,
    config: ClusterConfig,
    background: &TaskTracker,
    shutdown: &CancellationToken,
) {
    if !replica.store.shared() {
        return;
    }
    tracing::info!(instance = %replica.owner, "replica of a shared database");
    background.spawn(listener::heartbeat(
        Arc::clone(&replica.store),
        replica.owner,
        config.heartbeat(),
        shutdown.child_token(),
    ));
    let woken = listener::Woken {
        conversations,
        metrics: replica.metrics,
    };
    if !config.listen {
        tracing::info!("[cluster] listen = false: waiting events are found by the poll only");
        let stop = shutdown.child_token();
        background.spawn(listener::poll_only(woken, config.poll(), stop));
        return;
    }
    background.spawn(listener::run(
        url.to_owned(),
        woken,
        config.poll(),
        shutdown.child_token(),
    ));
}

/// At the end of a shutdown: give up every conversation lease still held (with a `NOTIFY`
/// for waiting events, so another replica takes over at once) and remove the instance row.
pub async fn leave(store: &dyn ClusterStore, owner: &str) {
    if !store.shared() {
        return;
    }
    match store.release_all_conversations(owner).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(conversations = n, "handed conversations to other replicas"),
        Err(err) => {
            tracing::warn!(error = %err, "could not release conversation leases; they expire")
        }
    }
    if let Err(err) = store.remove_instance(owner).await {
        tracing::warn!(error = %err, "could not remove this instance's heartbeat row");
    }
}
