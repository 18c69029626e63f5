//! The embedded default: one SQLite file in WAL mode, nothing to install. This file holds
//! everything SQLite-specific: connection options and its [`Dialect`] (FTS5 + BM25 recall,
//! no row locks).

use std::str::FromStr;
use std::time::Duration;

use sqlx::Sqlite;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteQueryResult,
    SqliteSynchronous,
};

use super::backend::{Backend, Dialect, SqlStore};
use super::memory::fts5_query;
use super::{StoreError, Timeouts};

/// How long a pooled SQLite connection may sit unused before it is closed.
const IDLE_CLOSE: Duration = Duration::from_secs(30);

/// `Store` over a SQLite database file.
pub type SqliteStore = SqlStore<Sqlite>;

impl Backend for Sqlite {
    const DIALECT: Dialect = Dialect {
        // SQLite serialises writers, so the claim's UPDATE … WHERE id = (SELECT …) is atomic.
        claim_lock: "",
        recall_sql: "SELECT m.scope, m.key, m.content, m.category, m.updated_at FROM memories_fts f \
             JOIN memories m ON m.id = f.rowid \
             WHERE memories_fts MATCH $1 AND m.scope = $2 ORDER BY bm25(memories_fts) LIMIT $3",
        search_query: fts5_query,
        // Copy the WAL into the file (where secure_delete zeroed the old value) and empty it.
        flush_journal: "PRAGMA wal_checkpoint(TRUNCATE)",
        now_ms: "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)",
        // One process owns the file; it reclaims everything at start, as before.
        shared: false,
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
        // Several connections: queries of different conversations overlap (one connection,
        // tried in issue #19, answered 280 turns/s where eight answer 380). Each keeps its own
        // page cache, which SQLite throws away whenever another connection has written, so
        // under load a large cache buys nothing; after the load it stays allocated as long as
        // the connection lives. So: 1 MiB each (SQLite's default is 2 MB), and a connection
        // idle for `IDLE_CLOSE` is closed, returning its cache (BENCHMARKS.md, "SQLite
        // connections after a burst").
        let options = options.pragma("cache_size", "-1024");
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .idle_timeout(IDLE_CLOSE)
            .acquire_timeout(timeouts.acquire)
            .connect_with(options)
            .await?;
        sqlx::migrate!("migrations/sqlite").run(&pool).await?;
        Ok(Self::new(pool, timeouts))
    }
}
