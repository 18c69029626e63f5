//! The embedded default: one SQLite file in WAL mode, nothing to install. This file holds
//! everything SQLite-specific: connection options and its [`Dialect`] (FTS5 + BM25 recall,
//! no row locks).

use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::str::FromStr;
use std::time::{Duration, Instant};

use sqlx::Sqlite;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteQueryResult,
    SqliteSynchronous,
};

use super::backend::{Backend, Dialect, SqlStore};
use super::memory::fts5_query;
use super::timeouts::migrate_at_startup;
use super::wal::{Checkpointer, WalBounds};
use super::{StoreError, Timeouts};

/// Connections in all: three in the work pool, one in the request path's (see
/// [`SqlStore`]'s `front`; the inbox insert is one writer, grouped). Each runs on a thread of
/// its own, and glibc gives each such thread an arena whose free top `malloc_trim` does not
/// return; sqlx hands idle connections out in turn, so a light load keeps them all open. On
/// two cores four answer as many turns per second at 1,000 offered and store as many events
/// as eight did; at twice capacity (2,000 offered) 2 – 8 % fewer, none refused; two answer
/// 16 % fewer. After a burst of 10,000 conversations four keep 2.6 – 3.9 MB less
/// (BENCHMARKS.md, "Round two, ninth pass").
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
        // every segment of the index all the same, about a sixth of the database threads'
        // time under load (issue #19, twenty-first pass). `CROSS JOIN` keeps that order and
        // the search before the lookup by id: SQLite 3.51 (Python's, tried on a copy of the
        // database) otherwise walks the scope's memories and searches once for each, a
        // second for a scope of 2,000.
        recall_sql: "WITH held AS MATERIALIZED \
             (SELECT 1 WHERE EXISTS (SELECT 1 FROM memories WHERE scope = $2)) \
             SELECT m.scope, m.key, m.content, m.category, m.updated_at \
             FROM held CROSS JOIN memories_fts f CROSS JOIN memories m ON m.id = f.rowid \
             WHERE memories_fts MATCH $1 AND m.scope = $2 ORDER BY f.rowid LIMIT $3",
        recall_ranked: false,
        search_query: fts5_query,
        // Copy the WAL into the file (where secure_delete zeroed the old value) and empty it.
        flush_journal: "PRAGMA wal_checkpoint(TRUNCATE)",
        now_ms: "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)",
        // One process owns the file; it reclaims everything at start, as before.
        shared: false,
        begin_write: "BEGIN IMMEDIATE",
        multi_statement: true,
        // SQLite stores NUL inside text as it is.
        escape_nul: false,
    };

    fn rows_affected(result: &SqliteQueryResult) -> u64 {
        result.rows_affected()
    }
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
    pub(super) async fn open(
        url: &str,
        timeouts: Timeouts,
        wal: WalBounds,
    ) -> Result<Self, StoreError> {
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
        // (one connection, tried in issue #19, answered 280 turns/s where eight answered 380).
        // Each keeps its own page cache, which SQLite throws away whenever another connection
        // has written, so under load a large cache buys nothing; after the load it stays
        // allocated as long as the connection lives, and a light steady load keeps every
        // connection alive. So: 256 KiB each (SQLite's default is 2 MB; 1 MiB kept 5 MB more
        // after a burst of 10,000 conversations, at the same turns per second), and a
        // connection idle for `IDLE_CLOSE` is closed, returning its cache (BENCHMARKS.md,
        // "SQLite connections after a burst" and "Round two, fifth pass").
        let options = options.pragma("cache_size", "-256");
        // Once a burst has grown the WAL past its usual size, it is cut back to that size when
        // it next starts over (SQLite otherwise keeps the file at its largest).
        let options = options.pragma("journal_size_limit", JOURNAL_SIZE_LIMIT);
        migrate(&options).await?;
        let busy_for = timeouts.statement;
        let watch = Checkpointer::watch(wal);
        let pool_of = |connections: u32, wait: Duration| {
            let hook = watch.clone();
            SqlitePoolOptions::new()
                .max_connections(connections)
                // sqlx pings a pooled connection when it hands it out (on by default, for
                // connections a server may have dropped) and again when it takes it back (always).
                // A SQLite connection is a thread in this process that no one else can close, and
                // the ping on return already checks it after every use; the ping on acquire was a
                // third round trip to that thread for every statement (BENCHMARKS.md, "Round two,
                // tenth pass").
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
        let mut store = Self::new(pool.clone(), front, timeouts);
        store.checkpointer = Some(Checkpointer::start(pool, watch));
        Ok(store)
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
/// least a millisecond for one held a fraction of that (BENCHMARKS.md, issue #19).
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
mod tests {
    use sqlx::Connection;

    use crate::store::{AccessRole, AccessStore, Store};

    use super::*;

    /// With every connection of the work pool taken for longer than the front's acquire
    /// timeout, an inbox insert, an access lookup and the readiness ping still get a
    /// connection at once, and a query of the work waits its turn, then runs, instead of
    /// failing with a timeout.
    #[tokio::test]
    async fn work_waits_its_turn_while_the_request_path_goes_past() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/lanes.db", dir.path().display());
        let hurried = Timeouts {
            acquire: Duration::from_millis(100),
            ..Timeouts::default()
        };
        let store = SqliteStore::connect_with(&url, hurried).await.unwrap();
        let mut taken = Vec::new();
        for _ in 0..store.pool.options().get_max_connections() {
            taken.push(store.pool.acquire().await.unwrap());
        }

        let row = super::super::grouped::PendingInsert {
            channel: "slack".into(),
            event_id: "Ev1".into(),
            key: "slack:D1".into(),
            payload: "{}".into(),
            now_ms: 1,
            kind: "message",
        };
        let id = store
            .insert_grouped(row)
            .await
            .expect("the insert goes past");
        assert!(id.is_some());
        let granted = store.has_grant("slack", "U1", AccessRole::User).await;
        assert!(!granted.expect("the access lookup goes past"));
        store.ping().await.expect("the ping goes past");

        let work =
            sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM inbox").fetch_one(&store.pool);
        let mut work = std::pin::pin!(work);
        let early = tokio::time::timeout(Duration::from_millis(300), &mut work).await;
        assert!(
            early.is_err(),
            "work took a connection while the work pool was all taken"
        );
        taken.pop();
        assert_eq!(work.await.expect("work runs once a connection is free"), 1);
    }

    /// Opening the store creates and migrates the file within the start-up wait, not the
    /// request path's acquire timeout: a start on a slow disk (CI's, once) failed with
    /// `PoolTimedOut` when both were one. An acquire timeout of one nanosecond leaves no
    /// time to open any connection, and the store still opens, migrated.
    #[tokio::test]
    async fn a_new_file_is_created_and_migrated_whatever_the_acquire_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/sub/new.db", dir.path().display());
        let hurried = Timeouts {
            acquire: Duration::from_nanos(1),
            queue: Duration::from_nanos(1),
            ..Timeouts::default()
        };
        SqliteStore::connect_with(&url, hurried)
            .await
            .expect("the store opens");
        let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
        let applied: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM _sqlx_migrations")
            .fetch_one(&mut conn)
            .await
            .unwrap();
        assert_eq!(
            applied,
            sqlx::migrate!("migrations/sqlite").iter().count() as i64
        );
    }

    /// A transaction opened with `begin_write` holds the write lock from its start, so a
    /// read first cannot be overtaken: another connection's commit between the read and the
    /// write would otherwise make the write fail at once with `SQLITE_BUSY_SNAPSHOT` (as
    /// checkpoints and rewinds did under load). Here the other writer does not wait: with
    /// a deferred transaction it commits and the transaction's write is refused; with
    /// `BEGIN IMMEDIATE` it is the one refused, and nothing is lost.
    #[tokio::test]
    async fn a_write_transaction_that_reads_first_is_not_overtaken_by_another_commit() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/tx.db", dir.path().display());
        let store = SqliteStore::connect(&url).await.unwrap();
        sqlx::query("CREATE TABLE t (x INTEGER)")
            .execute(&store.pool)
            .await
            .unwrap();

        let mut tx = store.begin_write().await.unwrap();
        let seen: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM t")
            .fetch_one(&mut *tx)
            .await
            .unwrap();
        assert_eq!(seen, 0);

        let mut other = store.pool.acquire().await.unwrap().detach();
        sqlx::query("PRAGMA busy_timeout = 0")
            .execute(&mut other)
            .await
            .unwrap();
        let overtaking = sqlx::query("INSERT INTO t VALUES (1)")
            .execute(&mut other)
            .await;
        assert!(
            overtaking.is_err(),
            "another connection committed inside the write transaction"
        );

        sqlx::query("INSERT INTO t VALUES (2)")
            .execute(&mut *tx)
            .await
            .expect("the transaction's own write");
        tx.commit().await.unwrap();
        let rows: Vec<i64> = sqlx::query_scalar("SELECT x FROM t")
            .fetch_all(&mut other)
            .await
            .unwrap();
        assert_eq!(rows, [2]);
        other.close().await.unwrap();
    }

    /// A connection's checkpoint (`wal_checkpoint(TRUNCATE)`), begun and held open: it has
    /// copied the WAL and waits, holding SQLite's checkpoint lock, for `reader` to leave.
    /// Returns once the lock is seen held (another checkpoint then reports busy at once).
    async fn hold_the_checkpoint_lock(
        store: &SqliteStore,
    ) -> tokio::task::JoinHandle<(i64, i64, i64)> {
        let mut probe = store.pool.acquire().await.unwrap().detach();
        loop {
            let mut holder = store.pool.acquire().await.unwrap().detach();
            let held = tokio::spawn(async move {
                let done = sqlx::query_as("PRAGMA wal_checkpoint(TRUNCATE)")
                    .fetch_one(&mut holder)
                    .await
                    .unwrap();
                holder.close().await.unwrap();
                done
            });
            // The probe is refused while the holder has the lock; it may also take the lock
            // first, and the holder then returns at once: begin again.
            while !held.is_finished() {
                let (busy, _, _): (i64, i64, i64) =
                    sqlx::query_as("PRAGMA wal_checkpoint(PASSIVE)")
                        .fetch_one(&mut probe)
                        .await
                        .unwrap();
                if busy == 1 {
                    probe.close().await.unwrap();
                    return held;
                }
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
        }
    }

    /// The journal flush that follows a decided approval's overwritten raw call runs again
    /// while another connection holds the checkpoint (the store's WAL task, in production):
    /// a flush that ran once would report busy and leave the WAL, and the raw call in it,
    /// as it was (`stored_secrets` caught that race once).
    #[tokio::test]
    async fn the_journal_flush_waits_out_another_connections_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/flush.db", dir.path().display());
        // No checkpoint but this test's: the store's task would take the lock at moments of
        // its own, and would let the reader below read from the file instead of the WAL.
        let never = WalBounds {
            background_at: c_int::MAX,
            inline_at: c_int::MAX,
        };
        let store = SqliteStore::open(&url, Timeouts::default(), never)
            .await
            .unwrap();
        sqlx::query("CREATE TABLE t (x TEXT)")
            .execute(&store.pool)
            .await
            .unwrap();
        sqlx::query("INSERT INTO t VALUES ('a raw call')")
            .execute(&store.pool)
            .await
            .unwrap();
        let wal = dir.path().join("flush.db-wal");

        let mut reader = store.pool.acquire().await.unwrap().detach();
        let mut reading = reader.begin().await.unwrap();
        let _: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM t")
            .fetch_one(&mut *reading)
            .await
            .unwrap();
        let held = hold_the_checkpoint_lock(&store).await;
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(!held.is_finished(), "the checkpoint waits for the reader");

        let flush = tokio::spawn(async move {
            let result = store.flush_journal().await;
            (store, result)
        });
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        assert!(
            !flush.is_finished(),
            "the flush returned while another connection held the checkpoint"
        );
        assert!(std::fs::metadata(&wal).unwrap().len() > 0);

        reading.commit().await.unwrap();
        assert_eq!(held.await.unwrap().0, 0, "the holder's checkpoint");
        let (_store, result) = flush.await.unwrap();
        result.expect("the flush, once the checkpoint was done");
        assert_eq!(std::fs::metadata(&wal).unwrap().len(), 0, "the WAL emptied");
        reader.close().await.unwrap();
    }
}
