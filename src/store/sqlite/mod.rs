//! The embedded default: one SQLite file in WAL mode, nothing to install. Everything only
//! SQLite needs lives in this folder: connection options, its [`Dialect`] (FTS5 + BM25
//! recall, no row locks) and busy handler (here), WAL checkpoints run by a task and the
//! journal flush (`wal.rs`), grouped commits of inbox inserts (`grouped/`) and autosaves
//! (`autosave.rs`), and the completion of a turn in one call (`complete.rs`).

mod autosave;
mod complete;
mod grouped;
mod vectors;
mod wal;

use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::str::FromStr;
use std::time::{Duration, Instant};

use sqlx::Sqlite;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteQueryResult,
    SqliteSynchronous,
};

use self::grouped::InsertGroup;
use self::wal::{WalBounds, WalCheckpointer};
use super::backend::{Backend, Completion, Dialect, SqlStore};
use super::history::ROWS_PER_INSERT;
use super::inbox::PendingInsert;
use super::memory::{Unembedded, VectorModel, fts5_query};
use super::timeouts::migrate_at_startup;
use super::{Memory, StoreError, Timeouts};

/// Connections in all: three in the work pool, one in the request path's (see
/// [`SqlStore`]'s `front`; the inbox insert is one writer, grouped). SQLite serialises
/// writers, so more connections mostly add threads (sqlx runs each on one of its own) and
/// page caches: four answer about as many turns per second as eight, and two clearly fewer
/// (BENCHMARKS.md, "SQLite connections").
const MAX_CONNECTIONS: u32 = 4;

/// How long a pooled SQLite connection may sit unused before it is closed.
const IDLE_CLOSE: Duration = Duration::from_secs(30);

/// The WAL file's size once it starts over after a transaction larger than usual (bytes):
/// about the 1,000 pages at which a commit checkpoints by itself.
const JOURNAL_SIZE_LIMIT: &str = "4194304";

/// `Store` over a SQLite database file.
pub type SqliteStore = SqlStore<Sqlite>;

impl Backend for Sqlite {
    const DIALECT: Dialect = Dialect {
        // SQLite serialises writers, so the claim's UPDATE … WHERE id = (SELECT …) is atomic.
        claim_lock: "",
        // The query names the scope's token (`fts5_query`), so only the scope's own matches
        // are read; `m.scope` is compared too, so a token can never widen what is returned.
        // `held` has its one row only when the scope holds anything: an empty scope (a
        // conversation's first turns) is never searched. FTS5 would look up every word in
        // every segment of the index all the same, a large share of the database threads'
        // time under load. `CROSS JOIN` keeps that order and the search before the lookup
        // by id: SQLite's planner otherwise may walk the scope's memories and search once
        // for each, about a second for a scope of 2,000.
        recall_sql: "WITH held AS MATERIALIZED \
             (SELECT 1 WHERE EXISTS (SELECT 1 FROM memories WHERE scope = $2)) \
             SELECT m.scope, m.key, m.content, m.category, m.updated_at \
             FROM held CROSS JOIN memories_fts f CROSS JOIN memories m ON m.id = f.rowid \
             WHERE memories_fts MATCH $1 AND m.scope = $2 ORDER BY f.rowid LIMIT $3",
        recall_ranked: false,
        search_query: fts5_query,
        now_ms: "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)",
        // One process owns the file; it reclaims everything at start, as before.
        shared: false,
        begin_write: "BEGIN IMMEDIATE",
        // SQLite stores NUL inside text as it is.
        escape_nul: false,
    };

    type Local = Local;

    fn rows_affected(result: &SqliteQueryResult) -> u64 {
        result.rows_affected()
    }

    /// Grouped with the inserts that arrive meanwhile (`grouped/`): SQLite has one write
    /// lock, which each insert of its own would take in turn.
    async fn insert_event(
        store: &SqlStore<Sqlite>,
        row: PendingInsert,
    ) -> Result<Option<i64>, StoreError> {
        store.insert_grouped(row).await
    }

    /// In one call to the connection's thread (`complete.rs`), unless the turn has more
    /// messages than one statement takes.
    async fn complete_turn(
        store: &SqlStore<Sqlite>,
        turn: Completion<'_>,
    ) -> Result<Option<bool>, StoreError> {
        if turn.messages.len() <= ROWS_PER_INSERT {
            store.complete_in_one_call(turn).await
        } else {
            store.complete_in_steps(turn).await
        }
    }

    /// Grouped with the autosaves of turns that end together (`autosave.rs`).
    async fn autosave(store: &SqlStore<Sqlite>, memory: &Memory) -> Result<bool, StoreError> {
        store.autosave_grouped(memory).await
    }

    /// Nothing to prepare: vectors are blobs, searched by the store (`vectors.rs`).
    async fn prepare_vectors(_: &SqlStore<Sqlite>, _: &VectorModel) -> Result<(), StoreError> {
        Ok(())
    }

    async fn save_vector(
        store: &SqlStore<Sqlite>,
        memory: &Unembedded,
        model: &VectorModel,
        vector: &[f32],
    ) -> Result<bool, StoreError> {
        store.save_blob(memory, model, vector).await
    }

    /// SQLite has no vector index of its own: the scope's vectors are read and ranked here
    /// (`vectors.rs`).
    async fn nearest_vectors(
        store: &SqlStore<Sqlite>,
        scope: &str,
        model: &VectorModel,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<(i64, f32)>, StoreError> {
        store.nearest_blobs(scope, model, query, limit).await
    }

    /// The WAL keeps the overwritten page until a checkpoint copies it back (`wal.rs`).
    async fn flush_journal(store: &SqlStore<Sqlite>) -> Result<(), StoreError> {
        store.flush_wal().await
    }

    /// The header's `user_version` written back unchanged: SQLite writes the header's page
    /// to the WAL at commit all the same, so the commit fails while the disk is full.
    async fn probe_write(store: &SqlStore<Sqlite>) -> Result<(), StoreError> {
        let mut tx = store.front.begin_with(Sqlite::DIALECT.begin_write).await?;
        let version: i64 = sqlx::query_scalar("PRAGMA user_version")
            .fetch_one(&mut *tx)
            .await?;
        // A pragma takes no bound parameter; the value is the integer just read.
        sqlx::query(&format!("PRAGMA user_version = {version}"))
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }
}

/// What SQLite's store keeps beside its pools.
pub struct Local {
    /// Inbox inserts waiting to be written as one group.
    inserts: InsertGroup,
    /// Autosaved memories waiting to be written as one group.
    autosaves: InsertGroup<Memory, Result<bool, StoreError>>,
    /// The WAL's background checkpoints: held so that its task runs as long as the store.
    #[cfg_attr(not(test), allow(dead_code, reason = "only tests read it"))]
    checkpointer: WalCheckpointer,
}

impl SqlStore<Sqlite> {
    /// Open (creating the file and its directory if needed) and migrate, with the default
    /// [`Timeouts`].
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_with(url, Timeouts::default()).await
    }

    /// Open and migrate; waits are bounded by `timeouts`.
    pub async fn connect_with(url: &str, timeouts: Timeouts) -> Result<Self, StoreError> {
        Self::open(url, timeouts, WalBounds::DEFAULT).await
    }

    /// [`Self::connect_with`], checkpointing the WAL at `wal`'s sizes (tests use small ones).
    async fn open(url: &str, timeouts: Timeouts, wal: WalBounds) -> Result<Self, StoreError> {
        let options = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // WAL + NORMAL is durable across process crashes; only an OS crash may lose the
            // last transactions, which the platforms then redeliver.
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(timeouts.statement)
            .foreign_keys(true)
            // Freed space is zeroed, so an overwritten or deleted value (a decided approval's
            // raw call) is not left readable in the file.
            .pragma("secure_delete", "ON");
        if let Some(dir) = options.get_filename().parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::Db(sqlx::Error::Io(e)))?;
        }
        // Several connections (`MAX_CONNECTIONS`): queries of different conversations overlap
        // (one connection answers clearly fewer turns per second). Each keeps its own page
        // cache, which SQLite throws away whenever another connection has written, so under
        // load a large cache buys nothing; after the load it stays allocated as long as the
        // connection lives. So: 256 KiB each (SQLite's default is 2 MB, which kept several MB
        // more after a burst at the same turns per second), and a connection idle for
        // `IDLE_CLOSE` is closed, returning its cache.
        let options = options.pragma("cache_size", "-256");
        // Once a burst has grown the WAL past its usual size, it is cut back to that size when
        // it next starts over (SQLite otherwise keeps the file at its largest).
        let options = options.pragma("journal_size_limit", JOURNAL_SIZE_LIMIT);
        migrate(&options).await?;
        let busy_for = timeouts.statement;
        let watch = WalCheckpointer::watch(wal);
        let pool_of = |connections: u32, wait: Duration| {
            let hook = watch.clone();
            SqlitePoolOptions::new()
                .max_connections(connections)
                // sqlx pings a pooled connection when it hands it out (on by default, for
                // connections a server may have dropped) and again when it takes it back (always).
                // A SQLite connection is a thread in this process that no one else can close, and
                // the ping on return already checks it after every use; the ping on acquire would
                // be a third round trip to that thread for every statement.
                .test_before_acquire(false)
                .idle_timeout(IDLE_CLOSE)
                .acquire_timeout(wait)
                .after_connect(move |conn, _| {
                    let hook = hook.clone();
                    Box::pin(async move {
                        let mut handle = conn.lock_handle().await?;
                        let db = handle.as_raw_handle().as_ptr();
                        wait_briefly_when_busy(db, busy_for);
                        hook.install(db);
                        Ok(())
                    })
                })
                .connect_lazy_with(options.clone())
        };
        let pool = pool_of(MAX_CONNECTIONS - 1, timeouts.queue);
        let front = pool_of(1, timeouts.acquire);
        let local = Local {
            inserts: InsertGroup::default(),
            autosaves: InsertGroup::default(),
            checkpointer: WalCheckpointer::start(pool.clone(), watch),
        };
        let file = options.get_filename();
        let place = (std::fs::canonicalize(file).unwrap_or_else(|_| file.to_owned()))
            .display()
            .to_string();
        Ok(Self::new(pool, front, timeouts, local, place))
    }
}

/// Create the file if needed and apply the migrations within
/// [`STARTUP_WAIT`](super::timeouts::STARTUP_WAIT): the pool's `acquire` timeout (1 s) is for
/// the request path. Creating the file and switching it to WAL waits on the disk, which a
/// loaded machine (a test run on two cores did, in CI) or an SD card can make slower than
/// that; a start that failed there would be a gateway that never started. Later connections
/// open a file already in WAL mode.
async fn migrate(options: &SqliteConnectOptions) -> Result<(), StoreError> {
    migrate_at_startup::<Sqlite>(options.clone(), &sqlx::migrate!("migrations/sqlite")).await
}

/// Replace SQLite's busy handler on `db`: a connection that finds another one writing
/// retries within microseconds instead of after SQLite's own sleeps of 1, 2, 5, 10 … ms,
/// still giving up (`SQLITE_BUSY`) after `timeout` as the busy timeout did.
///
/// Writers on one file take turns holding its lock for tens of microseconds (a turn's
/// statements are short), so under load nearly every turn met a busy lock and slept at
/// least a millisecond for one held a fraction of that.
fn wait_briefly_when_busy(db: *mut libsqlite3_sys::sqlite3, timeout: Duration) {
    // The timeout rides in the callback's pointer argument (milliseconds as an address),
    // so nothing has to outlive the connection.
    let millis = usize::try_from(timeout.as_millis()).unwrap_or(usize::MAX);
    // SAFETY: `db` is this connection's open handle, locked away from its worker for the
    // call; the callback keeps no reference to it.
    unsafe {
        libsqlite3_sys::sqlite3_busy_handler(db, Some(on_busy), millis as *mut c_void);
    }
}

thread_local! {
    /// When the current statement of this thread's connection began to wait (sqlx runs each
    /// SQLite connection on a thread of its own, one statement at a time).
    static BUSY_SINCE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// SQLite's busy callback: `tries` counts the calls for this wait. Yields for the first
/// few, then sleeps 20 µs doubling up to 1 ms; 0 (give up) once the timeout has passed.
extern "C" fn on_busy(timeout_ms: *mut c_void, tries: c_int) -> c_int {
    let now = Instant::now();
    let since = BUSY_SINCE.with(|cell| {
        let since = match cell.get() {
            Some(since) if tries > 0 => since,
            _ => now,
        };
        cell.set(Some(since));
        since
    });
    let timeout = Duration::from_millis(timeout_ms as usize as u64);
    if now.duration_since(since) >= timeout {
        return 0;
    }
    match tries {
        0..4 => std::thread::yield_now(),
        _ => {
            let shift = u32::try_from(tries - 4).unwrap_or(u32::MAX).min(6);
            std::thread::sleep(Duration::from_micros(20 << shift).min(Duration::from_millis(1)));
        }
    }
    1
}

#[cfg(test)]
mod tests;
