//! Storage: the durable inbox every event passes through, conversation history, approvals,
//! the audit log, memories and access grants. One `Store` trait (the seam the core sees), one
//! implementation: [`SqlStore<DB>`], whose queries are written once as ordinary generic
//! functions over a `sqlx` pool and run on SQLite (embedded default) or PostgreSQL
//! (replicas). Both pass one contract suite (`tests/e2e/store_contract.rs`).
//!
//! The files directly in this folder are the meaning both databases share; what only one of
//! them needs is in `sqlite/` or `postgres/`. The two part in two ways only: SQL text that
//! differs (a [`Dialect`] value: the claim's row lock, full-text recall, the clock, how a
//! write transaction begins), and four operations each does its own way, declared on
//! [`Backend`] (storing an inbox row, completing a turn, autosaving a memory, emptying a
//! journal).
//!
//! A writing statement's `RETURNING` rows are read with `fetch_all`, never `fetch_one` or
//! `fetch_optional`: SQLite hands out the first row before the statement's own commit, and
//! sqlx's SQLite driver stops stepping once it has the rows those ask for, so a commit that
//! then failed (a full disk) went unseen and the write read as done (sqlx issue 2099).
//!
//! Layout:
//! - `mod.rs`: the `Store` trait, inbox types, [`connect`].
//! - `backend.rs`: [`Dialect`], the sealed [`Backend`] trait, [`SqlStore`].
//! - `inbox.rs`: `Store` for `SqlStore` (insert, claim under a lease, finish, counts).
//! - `history.rs`: history reads and the atomic history writes.
//! - `approvals.rs`, `audit.rs`, `memory/`, `access.rs`, `checkpoints.rs`, `profiles.rs`,
//!   `schedules.rs`, `usage.rs`: each area's part of the store, its types and its SQL.
//! - `rows.rs`: selected rows as records, converted to the types above.
//! - `text.rs`: free text stored exactly on both databases (NUL escaped on PostgreSQL).
//! - `cluster.rs`: [`ClusterStore`], instances, conversation leases (epochs), the fence a
//!   turn's writes carry, and `NOTIFY` wake-ups (several replicas on PostgreSQL).
//! - `durable.rs`: [`Durable`], the retry policy for writes that follow a visible action,
//!   and which database errors are transient.
//! - `timeouts.rs`: [`Timeouts`], the bounded waits on every pool (acquire, statement).
//! - `writable.rs`: [`Writable`], whether writes land (a full disk, a read-only database):
//!   logged once with the fix, reported by `/readyz`, cleared by the next write that lands.
//! - `sqlite/`: connecting, the busy handler, WAL checkpoints in a task, grouped commits,
//!   the one-call completion.
//! - `postgres/`: connecting, the sequenced and announced inbox insert.

mod access;
mod approvals;
mod audit;
mod backend;
mod checkpoints;
mod cluster;
mod durable;
mod history;
mod inbox;
mod jobs;
mod memory;
mod postgres;
mod profiles;
mod rows;
mod schedules;
mod sqlite;
pub mod text;
mod timeouts;
mod usage;
mod writable;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use switchboard_channel::{ChannelEvent, ConversationKey, MessageRef};

pub use access::{AccessRole, AccessStore, Grant, Pairing, PairingRequest};
pub use approvals::{Approval, ApprovalCounts, ApprovalStore};
pub use audit::{AuditEntry, AuditFilter, AuditLog};
pub use backend::{Backend, Completion, Dialect, SqlStore};
pub use checkpoints::{Checkpoint, CheckpointStore, NewCheckpoint};
pub use cluster::{ClusterStore, INBOX_CHANNEL, Instance, LeaseRow};
pub use durable::Durable;
pub use history::window;
pub use memory::{
    Memory, MemoryStore, Nearest, Unembedded, VectorCounts, VectorModel, nearest, search_words,
    to_blob,
};
pub use postgres::PostgresStore;
pub use profiles::{ModelChoice, ProfileStore};
pub use schedules::{JobSource, NewSchedule, Schedule, ScheduleStore, Timing};
pub use sqlite::SqliteStore;
pub use timeouts::Timeouts;
pub use usage::{ScopeDay, Spent, UsageStore, Used};
pub use writable::Refusal;
use writable::Writable;

use crate::ids::InboxKind;
use crate::provider::ChatMessage;

/// Why a store call failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database refused or could not be reached.
    #[error("database error: {0}")]
    Db(#[from] sqlx::Error),
    /// A migration failed.
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A stored row could not be decoded.
    #[error("corrupt stored row: {0}")]
    Corrupt(String),
    /// The claim is no longer this process's: the row was claimed again (a restart, or a
    /// lease that ran out) or already finished. Nothing was written.
    #[error("inbox row {0} was claimed again; this claim's result is dropped")]
    Superseded(i64),
    /// The conversation lease this turn started under (its epoch) was taken over by another
    /// replica, or given up: nothing was written, and the turn must stop.
    #[error("conversation lease epoch {0} is no longer current; the write was refused")]
    Fenced(i64),
    /// The database did not answer within the bounded wait of a request-path call.
    #[error("the database did not answer in time")]
    Timeout,
    /// The process is stopping; a write [`Durable`] was retrying was not stored.
    #[error("stopping before the write was stored")]
    Stopped,
    /// The database lacks something the configuration needs (an extension), named in the
    /// message with how to add it.
    #[error("{0}")]
    Unavailable(String),
    /// The database refuses writes for a reason that lasts until someone acts (where it
    /// lives, what happened, the fix): a full disk, a read-only file or session.
    #[error("cannot write to {0}: {1}; fix: {2}")]
    Unwritable(String, &'static str, &'static str),
}

impl StoreError {
    /// Whether the same call may succeed later (the database was unreachable, restarting,
    /// or busy), so a write that must land is retried rather than given up.
    pub fn is_transient(&self) -> bool {
        match self {
            // A full disk or a read-only database takes the write once someone has acted.
            Self::Db(err) => durable::transient_db(err) || Refusal::of_db(err).is_some(),
            Self::Timeout | Self::Unwritable(..) => true,
            Self::Migrate(_)
            | Self::Corrupt(_)
            | Self::Superseded(_)
            | Self::Fenced(_)
            | Self::Unavailable(_)
            | Self::Stopped => false,
        }
    }
}

/// One claim of an inbox row: the row and which attempt this is. Finishing a row is fenced
/// on both, so a process that lost its claim (killed but not yet dead, or too slow for its
/// lease) cannot store a second answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    /// The inbox row id.
    pub id: i64,
    /// The row's `attempts` counter as this claim set it.
    pub attempt: i64,
    /// The conversation lease epoch it was claimed under (0: no lease, one process alone).
    pub epoch: i64,
}

/// Result of offering an event to the inbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Insert {
    /// New; stored with this row id.
    Stored(i64),
    /// Already stored earlier (same channel and platform event id).
    Duplicate,
}

/// An inbox row claimed for processing.
#[derive(Debug, Clone, PartialEq)]
pub struct InboxRow {
    /// Row id; orders events within a conversation.
    pub id: i64,
    /// The stored event.
    pub event: ChannelEvent,
    /// How many times it has been claimed, this claim included.
    pub attempts: i64,
    /// Messages already posted for this event's answer before a restart.
    pub draft_refs: Vec<MessageRef>,
    /// The conversation lease epoch it was claimed under (0: no lease).
    pub epoch: i64,
}

impl InboxRow {
    /// This claim of the row, to finish it with.
    pub fn claim(&self) -> Claim {
        Claim {
            id: self.id,
            attempt: self.attempts,
            epoch: self.epoch,
        }
    }
}

/// How many inbox rows are in each state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InboxCounts {
    /// Waiting to be processed.
    pub pending: i64,
    /// Claimed by a process.
    pub processing: i64,
    /// Answered.
    pub done: i64,
    /// Given up on.
    pub failed: i64,
}

/// One conversation as the operator's overview lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationSummary {
    /// Which conversation.
    pub key: ConversationKey,
    /// When it last stored an event or finished a turn (Unix ms).
    pub last_activity: i64,
    /// Events stored and not yet answered (the one being answered included).
    pub queued: i64,
    /// Whether a turn is running now (an event is claimed).
    pub running: bool,
    /// The profile and model `/model` chose, when one was chosen.
    pub model: Option<(String, String)>,
}

/// Durable state. Time is passed in (Unix ms) so leases behave alike on both databases.
#[async_trait]
pub trait Store:
    ClusterStore
    + AuditLog
    + ApprovalStore
    + MemoryStore
    + AccessStore
    + ScheduleStore
    + UsageStore
    + CheckpointStore
    + ProfileStore
    + Send
    + Sync
{
    /// Store a new event of the given kind (classified by the caller); a redelivery of a
    /// stored event is reported as `Duplicate`.
    async fn insert_event(
        &self,
        event: &ChannelEvent,
        kind: InboxKind,
        now_ms: i64,
    ) -> Result<Insert, StoreError>;

    /// Claim the oldest unfinished event of `key` for `owner` until `now_ms + lease`.
    /// Rows another live owner holds, and rows queued behind them, are left alone. While
    /// an approval of `key` is pending (a turn waits for it) only control events are
    /// claimed; the claim reads that itself, in the same statement.
    async fn claim_next(
        &self,
        key: &ConversationKey,
        owner: &str,
        now_ms: i64,
        lease: Duration,
    ) -> Result<Option<InboxRow>, StoreError>;

    /// [`Store::claim_next`] under conversation lease `epoch` (held by `owner`): the claim
    /// also takes rows another claim of an earlier epoch left processing, is refused
    /// (`None`) unless the lease is current, and every write of its turn is fenced on it.
    /// `epoch` 0 is exactly `claim_next`.
    async fn claim_leased(
        &self,
        key: &ConversationKey,
        owner: &str,
        now_ms: i64,
        lease: Duration,
        epoch: i64,
    ) -> Result<Option<InboxRow>, StoreError>;

    /// Conversations with events `owner` may claim now.
    async fn claimable_conversations(
        &self,
        owner: &str,
        now_ms: i64,
    ) -> Result<Vec<ConversationKey>, StoreError>;

    /// Remember which messages this event's answer already posted, fenced on the claim (a
    /// turn that lost its claim or lease records nothing: `Superseded` or `Fenced`).
    async fn set_draft_refs(&self, claim: Claim, refs: &[MessageRef]) -> Result<(), StoreError>;

    /// Append the turn's messages to history, add what it `spent` to its budgets and mark
    /// the event done, atomically: a turn retried after a crash counts its usage once. A
    /// claim that was superseded stores nothing (`StoreError::Superseded`). Returns whether
    /// other events of `key` were unfinished when it committed: when none were, the actor
    /// need not claim again, since an event stored later wakes it.
    async fn complete(
        &self,
        claim: Claim,
        key: &ConversationKey,
        messages: &[ChatMessage],
        spent: Option<Spent<'_>>,
        now_ms: i64,
    ) -> Result<bool, StoreError>;

    /// Give up on an event (it is never retried).
    async fn fail(&self, claim: Claim, error: &str, now_ms: i64) -> Result<(), StoreError>;

    /// Hand a claimed event back unprocessed (graceful shutdown mid-turn).
    async fn release(&self, claim: Claim, now_ms: i64) -> Result<(), StoreError>;

    /// The last `limit` messages of a conversation, oldest first.
    async fn history(
        &self,
        key: &ConversationKey,
        limit: usize,
    ) -> Result<Vec<ChatMessage>, StoreError>;

    /// Replace a conversation's whole history (compaction), atomically.
    async fn replace_history(
        &self,
        key: &ConversationKey,
        messages: &[ChatMessage],
        now_ms: i64,
    ) -> Result<(), StoreError>;

    /// Forget a conversation's history (`/new`).
    async fn clear_history(&self, key: &ConversationKey) -> Result<(), StoreError>;

    /// Whether conversation `key` exists: a turn of it finished (history cleared by `/new`
    /// or not), or an event of it waits in the inbox.
    async fn knows_conversation(&self, key: &ConversationKey) -> Result<bool, StoreError>;

    /// When the oldest pending event of `key` was stored (Unix ms, by the storing
    /// process's clock), if one is pending.
    async fn oldest_pending(&self, key: &ConversationKey) -> Result<Option<i64>, StoreError>;

    /// Inbox rows per state.
    async fn inbox_counts(&self) -> Result<InboxCounts, StoreError>;

    /// The `limit` conversations active most recently, newest first, with their queues.
    async fn conversations(&self, limit: usize) -> Result<Vec<ConversationSummary>, StoreError>;

    /// Whether the database answers, and takes writes again after it refused one for a
    /// reason that lasts ([`StoreError::Unwritable`]: a full disk, a read-only database).
    async fn ping(&self) -> Result<(), StoreError>;
}

/// Open the database named by `url` (creating a SQLite file and its directory if needed)
/// and apply migrations, with the default [`Timeouts`].
pub async fn connect(url: &str) -> Result<Arc<dyn Store>, StoreError> {
    connect_with(url, Timeouts::default()).await
}

/// [`connect`] with the given bounded waits.
pub async fn connect_with(url: &str, timeouts: Timeouts) -> Result<Arc<dyn Store>, StoreError> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(Arc::new(PostgresStore::connect_with(url, timeouts).await?))
    } else {
        Ok(Arc::new(SqliteStore::connect_with(url, timeouts).await?))
    }
}
