//! The lifecycle of this process's conversation actors: who owns inbox claims (the lease
//! owner name and how long a claim lasts, measured on the injected clock), how long an idle
//! actor lives, and the two shutdown signals. Claiming goes through here so that lease
//! expiry is decided in one place. On a shared database the actors also hold conversation
//! leases ([`Lifecycle::leases`]); a claim made under one carries its epoch.

use std::sync::Arc;
use std::time::Duration;

use switchboard_channel::ConversationKey;
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::cluster::Leases;
use crate::store::{InboxRow, Store, StoreError};

/// Leases, idleness and shutdown for one process's actors.
pub struct Lifecycle {
    /// This process's lease owner name (`gateway.instance_id`).
    owner: String,
    /// How long a claim lasts before another owner may take the event over.
    lease: Duration,
    /// Idle time before an actor retires.
    idle: Duration,
    /// Reads "now" for leases and inbox timestamps.
    clock: Clock,
    /// Fired at shutdown: actors stop claiming new events.
    draining: CancellationToken,
    /// Fired when the shutdown grace period is over: running turns stop and are handed back.
    abort: CancellationToken,
    /// Conversation leases, on a database several replicas share (`None`: alone).
    leases: Option<Arc<Leases>>,
}

impl Lifecycle {
    /// Leases owned by `owner`, lasting `lease`; actors retire after `idle`. Draining
    /// follows `shutdown`.
    pub fn new(
        owner: String,
        lease: Duration,
        idle: Duration,
        clock: Clock,
        shutdown: &CancellationToken,
    ) -> Self {
        Self {
            owner,
            lease,
            idle,
            clock,
            draining: shutdown.child_token(),
            abort: CancellationToken::new(),
            leases: None,
        }
    }

    /// Hold a conversation lease around every batch of claims (several replicas).
    pub fn with_leases(mut self, leases: Leases) -> Self {
        self.leases = Some(Arc::new(leases));
        self
    }

    /// The conversation leases, when replicas share the database.
    pub fn leases(&self) -> Option<&Arc<Leases>> {
        self.leases.as_ref()
    }

    /// This instance's id (the owner of its claims and leases).
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// Claim the next event of `key` for this process (only control events while the
    /// conversation waits on an approval), under conversation lease `epoch` (0: none).
    pub async fn claim(
        &self,
        store: &dyn Store,
        key: &ConversationKey,
        epoch: i64,
    ) -> Result<Option<InboxRow>, StoreError> {
        let now = self.clock.now_ms();
        store
            .claim_leased(key, &self.owner, now, self.lease, epoch)
            .await
    }

    /// Conversations with events this process may claim now (new ones, its own, and those
    /// whose lease ran out).
    pub async fn claimable(&self, store: &dyn Store) -> Result<Vec<ConversationKey>, StoreError> {
        store
            .claimable_conversations(&self.owner, self.clock.now_ms())
            .await
    }

    /// The clock leases and turns read.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Idle time before an actor retires.
    pub fn idle(&self) -> Duration {
        self.idle
    }

    /// Fired at shutdown: stop claiming.
    pub fn draining(&self) -> &CancellationToken {
        &self.draining
    }

    /// A token for one turn: cancelled by `/stop` or when the grace period is over.
    pub fn turn_token(&self) -> CancellationToken {
        self.abort.child_token()
    }

    /// Whether the grace period ran out (running turns hand their events back).
    pub fn aborted(&self) -> bool {
        self.abort.is_cancelled()
    }

    /// End the grace period: running turns stop and hand their events back.
    pub fn abort(&self) {
        self.abort.cancel();
    }
}
