//! The embedded default: one SQLite file in WAL mode, nothing to install.

use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

use super::StoreError;
use super::approvals::impl_approvals;
use super::audit::impl_audit;
use super::shared::impl_store;

/// `Store` over a SQLite database file.
pub struct SqliteStore {
    pub(super) pool: sqlx::SqlitePool,
}

impl SqliteStore {
    /// Open (creating the file and its directory if needed) and migrate.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let options = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // WAL + NORMAL is durable across process crashes; only an OS crash may lose the
            // last transactions, which the platforms then redeliver.
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(5))
            .foreign_keys(true);
        if let Some(dir) = options.get_filename().parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::Db(sqlx::Error::Io(e)))?;
        }
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .connect_with(options)
            .await?;
        sqlx::migrate!("migrations/sqlite").run(&pool).await?;
        Ok(Self { pool })
    }
}

impl_store!(SqliteStore, sqlx::Sqlite, "");
impl_audit!(SqliteStore);
impl_approvals!(SqliteStore, sqlx::sqlite::SqliteRow);
