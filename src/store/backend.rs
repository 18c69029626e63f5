//! Where the two databases part: the [`Dialect`] (SQL text that is not the same on both)
//! and the sealed [`Backend`] trait, which ties a `sqlx` driver to its dialect and names the
//! few operations each database does its own way (storing an inbox row, completing a turn,
//! autosaving a memory, emptying a journal). [`SqlStore`] is the one store type; its queries
//! are written once, generic over the backend, in the files beside this one. What only one
//! database needs lives in `sqlite/` or `postgres/`, which implement [`Backend`].
//!
//! Why generic code over `sqlx::Pool<DB>` rather than `sqlx::Any` or a macro: the compiler
//! checks every query body once for both drivers, errors point at ordinary functions, and
//! both backends keep their native types (`Any` cannot carry PostgreSQL's `tsvector`
//! queries and narrows the value types).
//!
//! Every generic `impl` in this module tree repeats one `where` clause (see [`SqlStore`]):
//! Rust does not yet imply bounds written on a trait's `where`, so they cannot live on
//! `Backend` alone. Both drivers satisfy them; the list only names what the queries use.

use sqlx::database::HasStatementCache;
use sqlx::{Database, Pool, Transaction};

use switchboard_channel::ConversationKey;

use super::inbox::PendingInsert;
use super::memory::{Unembedded, VectorModel};
use super::{Claim, Memory, Spent, StoreError, Timeouts, Writable};
use crate::provider::ChatMessage;

/// SQL text that differs between the databases. Everything else is shared, written with
/// `$n` placeholders, which both SQLite and PostgreSQL accept.
#[derive(Debug)]
pub struct Dialect {
    /// Appended to the claim's row selection so concurrent claimers skip each other's rows
    /// (`FOR UPDATE SKIP LOCKED`); empty on SQLite, whose writers are serialised anyway.
    pub claim_lock: &'static str,
    /// Memory recall: binds the rendered search query, the scope and the limit, in that
    /// order, and selects `scope, key, content, category, updated_at` of the scope's
    /// matches: best first when `recall_ranked`, else every match (the limit bound is -1)
    /// oldest first, for the store to rank.
    pub recall_sql: &'static str,
    /// Whether `recall_sql` ranks its matches itself (PostgreSQL's `ts_rank`). SQLite's
    /// BM25 counts each word over every scope's memories, so recall would grow with all
    /// that every conversation ever said; the store ranks the scope's matches instead.
    pub recall_ranked: bool,
    /// Renders free text as this dialect's search query within a scope (given as stored;
    /// `None` when no words are left).
    pub search_query: fn(scope: &str, text: &str) -> Option<String>,
    /// Whether free text containing NUL must be escaped (PostgreSQL `text` cannot hold
    /// U+0000); see `text.rs` for the encoding.
    pub escape_nul: bool,
    /// An SQL expression for the database's own clock in Unix ms: leases and heartbeats
    /// are compared with it alone, so replicas never compare their clocks with each other.
    pub now_ms: &'static str,
    /// Whether several processes may share this database (PostgreSQL): conversation
    /// leases, `NOTIFY` wake-ups and heartbeats are used only then.
    pub shared: bool,
    /// Opens a transaction that will write. On SQLite `BEGIN IMMEDIATE`: it takes the write
    /// lock at once, waiting for it like any writer, where a deferred transaction that read
    /// first fails without waiting (`SQLITE_BUSY_SNAPSHOT`) if another connection committed
    /// before its first write, which the WAL's background checkpoints make common.
    pub begin_write: &'static str,
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for sqlx::Sqlite {}
    impl Sealed for sqlx::Postgres {}
}

/// A finished turn to store: its claim, its messages and what it spent (see
/// [`Store::complete`](super::Store::complete)).
#[derive(Debug, Clone, Copy)]
pub struct Completion<'a> {
    /// The claim the turn ran under; nothing is written unless it still holds.
    pub claim: Claim,
    /// The conversation.
    pub key: &'a ConversationKey,
    /// Messages appended to its history.
    pub messages: &'a [ChatMessage],
    /// Usage added to its budgets.
    pub spent: Option<Spent<'a>>,
    /// Now, Unix ms.
    pub now_ms: i64,
}

/// A database `SqlStore` runs on: SQLite or PostgreSQL (sealed). Besides the dialect, the
/// operations below are the places where the two take different paths for the same
/// meaning; each implementation says why at that place.
pub trait Backend: Database + HasStatementCache + sealed::Sealed {
    /// This database's SQL differences.
    const DIALECT: Dialect;

    /// What this database's store keeps beside its pools (SQLite: its write groups and
    /// WAL task; nothing on PostgreSQL).
    type Local: Send + Sync;

    /// Rows changed by an `INSERT`, `UPDATE` or `DELETE` (an inherent method on each
    /// driver's result type, so it is reached through the backend).
    fn rows_affected(result: &Self::QueryResult) -> u64;

    /// Store a new inbox row, numbered after its conversation's last one; `None` when the
    /// event was stored before (a redelivery). Runs on the request path.
    fn insert_event(
        store: &SqlStore<Self>,
        row: PendingInsert,
    ) -> impl Future<Output = Result<Option<i64>, StoreError>> + Send;

    /// Append a finished turn's messages, add its usage and mark its row done, atomically
    /// and only while its claim holds: whether other events of the conversation are
    /// unfinished, or `None`, with nothing written, when the claim no longer held.
    fn complete_turn(
        store: &SqlStore<Self>,
        turn: Completion<'_>,
    ) -> impl Future<Output = Result<Option<bool>, StoreError>> + Send;

    /// Save a memory unless its key exists in its scope; whether it was new.
    fn autosave(
        store: &SqlStore<Self>,
        memory: &Memory,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Make the database ready for vectors of `model` (see
    /// [`MemoryStore::prepare_vectors`](super::MemoryStore::prepare_vectors)).
    fn prepare_vectors(
        store: &SqlStore<Self>,
        model: &VectorModel,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Store `memory`'s vector of `model` (of the model's length) while the memory still
    /// holds the text it was made from; whether it was stored.
    fn save_vector(
        store: &SqlStore<Self>,
        memory: &Unembedded,
        model: &VectorModel,
        vector: &[f32],
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// The ids of the `limit` memories of `scope` whose vectors of `model` are most similar
    /// (cosine) to `query`, best first, with their similarity.
    fn nearest_vectors(
        store: &SqlStore<Self>,
        scope: &str,
        model: &VectorModel,
        query: &[f32],
        limit: usize,
    ) -> impl Future<Output = Result<Vec<(i64, f32)>, StoreError>> + Send;

    /// Write something that changes nothing but must reach the disk, to learn whether the
    /// database takes writes again after it refused them (see `writable.rs`).
    fn probe_write(store: &SqlStore<Self>) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// After a raw value was overwritten, make sure no older copy stays in a journal file
    /// that a grep of the data directory could find.
    fn flush_journal(store: &SqlStore<Self>)
    -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// The `Store` over one database pool; see [`SqliteStore`](super::SqliteStore) and
/// [`PostgresStore`](super::PostgresStore).
///
/// Its trait implementations are generic over `DB` under this `where` clause, repeated on
/// each `impl` because Rust does not imply it from [`Backend`]:
///
/// ```text
/// DB: Backend,
/// for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,  // pool and transactions run queries
/// for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,             // bound parameters
/// for<'r> i64: Type<DB> + Encode<'r, DB> + Decode<'r, DB>,      // integer columns
/// for<'r> Option<i64>: Type<DB> + Encode<'r, DB> + Decode<'r, DB>,
/// for<'r> String: Type<DB> + Encode<'r, DB> + Decode<'r, DB>,   // text columns
/// for<'r> Option<String>: Type<DB> + Encode<'r, DB> + Decode<'r, DB>,
/// for<'r> &'r str: Type<DB> + Encode<'r, DB> + ColumnIndex<DB::Row>, // text binds, named columns
/// usize: ColumnIndex<DB::Row>,                                  // scalars and tuples
/// ```
///
/// (`Option<T>` needs its own line: `sqlx` implements `Encode` for it per driver.)
pub struct SqlStore<DB: Backend> {
    /// The pool of the store's own work: claims, history, recall, completions, sweeps.
    /// Its connections are taken in arrival order and waited for up to `Timeouts::queue`.
    pub(super) pool: Pool<DB>,
    /// The pool of calls on an inbound request's path (the inbox insert, the access lookup,
    /// the readiness ping), which must answer within the platform's patience (Slack retries
    /// after 3 s) and so never wait in line behind the work: with one pool, an overloaded
    /// gateway's queued turns held every connection, and webhooks were refused with a 500
    /// (BENCHMARKS.md, "The request path's own pool").
    pub(super) front: Pool<DB>,
    /// The bounds of request-path calls (the pool applies the others itself).
    pub(super) timeouts: Timeouts,
    /// What only this database's store keeps ([`Backend::Local`]).
    pub(super) local: DB::Local,
    /// Whether writes land: fed by the inbox insert and the completion, read by the
    /// readiness ping.
    pub(super) writes: Writable,
}

impl<DB: Backend> SqlStore<DB> {
    /// A store over open pools of a migrated database configured with `timeouts`: `pool`
    /// for the work, `front` for the request path; `place` names the data in the log (the
    /// SQLite file, the PostgreSQL database; never a URL, which may hold a password).
    pub(super) fn new(
        pool: Pool<DB>,
        front: Pool<DB>,
        timeouts: Timeouts,
        local: DB::Local,
        place: String,
    ) -> Self {
        Self {
            pool,
            front,
            timeouts,
            local,
            writes: Writable::new(place),
        }
    }
}

impl<DB: Backend> SqlStore<DB> {
    /// A transaction for statements that write (see [`Dialect::begin_write`]). Every
    /// transaction of the store that writes opens with this, whatever its first statement,
    /// so a read added in front later cannot bring the race back.
    pub(super) async fn begin_write(&self) -> Result<Transaction<'static, DB>, sqlx::Error> {
        self.pool.begin_with(DB::DIALECT.begin_write).await
    }
}
