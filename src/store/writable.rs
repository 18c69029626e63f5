//! Whether the database takes writes: a store whose writes are refused for a reason that
//! lasts (a full disk, a file past its size limit, a database switched to read-only) says
//! so once, at ERROR, naming where the data lives and what to do, reports it to `/readyz`
//! until a write lands again, and then says it recovered. Nothing is remembered beyond
//! that: the inbox refuses each event it cannot store (so the platform redelivers it), and
//! the first write that lands again clears the state, with no restart.

use std::sync::{Mutex, PoisonError};

use super::StoreError;

/// SQLite's primary result codes that mean the file cannot be written, not that this one
/// attempt was unlucky: an I/O error (a file past its size limit reads as a failed write),
/// a read-only file or directory, a full disk.
const SQLITE_IOERR: i32 = 10;
const SQLITE_READONLY: i32 = 8;
const SQLITE_FULL: i32 = 13;

/// PostgreSQL SQLSTATEs for a database that takes no writes for now: a full disk (53100),
/// or a read-only session (25006: `default_transaction_read_only`, a standby after a
/// failover).
const PG_DISK_FULL: &str = "53100";
const PG_READ_ONLY: &str = "25006";

/// Why writes are refused, in words an operator acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No space left on the filesystem (SQLite `SQLITE_FULL`, PostgreSQL 53100).
    Full,
    /// The file could not be written (SQLite `SQLITE_IOERR`: a file past its size limit,
    /// a failing device).
    WriteFailed,
    /// The file, its directory or the database session is read-only.
    ReadOnly,
}

impl Refusal {
    /// Whether `err` is a write the database refused for one of these lasting reasons.
    pub fn of(err: &StoreError) -> Option<Self> {
        match err {
            StoreError::Db(err) => Self::of_db(err),
            _ => None,
        }
    }

    /// [`Self::of`] for the driver's error.
    pub(super) fn of_db(err: &sqlx::Error) -> Option<Self> {
        let sqlx::Error::Database(db) = err else {
            return None;
        };
        if let Some(pg) = db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>() {
            return match pg.code() {
                PG_DISK_FULL => Some(Self::Full),
                PG_READ_ONLY => Some(Self::ReadOnly),
                _ => None,
            };
        }
        db.try_downcast_ref::<sqlx::sqlite::SqliteError>()?;
        // The primary result code is the low byte of an extended one.
        let code = db.code().and_then(|c| c.parse::<i32>().ok()).unwrap_or(0);
        match code & 0xff {
            SQLITE_FULL => Some(Self::Full),
            SQLITE_IOERR => Some(Self::WriteFailed),
            SQLITE_READONLY => Some(Self::ReadOnly),
            _ => None,
        }
    }

    /// What happened, for the log and `/readyz`.
    fn reason(self) -> &'static str {
        match self {
            Self::Full => "no space is left on its disk",
            Self::WriteFailed => {
                "its file could not be written (a file-size limit or a failing disk)"
            }
            Self::ReadOnly => "it is read-only",
        }
    }

    /// What the operator should do.
    fn fix(self) -> &'static str {
        match self {
            Self::Full => {
                "free space on the filesystem that holds it, or move data_dir and the database to a larger one"
            }
            Self::WriteFailed => {
                "check the file-size limit (ulimit -f) and the disk's health, and free space there"
            }
            Self::ReadOnly => {
                "make it writable again (file and directory modes, the mount, or PostgreSQL's default_transaction_read_only)"
            }
        }
    }
}

/// The store's view of whether its writes land.
#[derive(Debug)]
pub struct Writable {
    /// Where the data lives (the SQLite file's path, or the PostgreSQL database's name),
    /// named in the log line. Never a URL: it may carry a password.
    place: String,
    /// Why writes are refused, while they are.
    refused: Mutex<Option<Refusal>>,
}

impl Writable {
    /// Writes to `place` are assumed to land until one is refused.
    pub fn new(place: String) -> Self {
        Self {
            place,
            refused: Mutex::new(None),
        }
    }

    /// Record what a write came to. The first refusal logs one ERROR line naming the
    /// place and the fix; the first write that lands after it logs the recovery. Other
    /// errors (a timeout, a lost connection) say nothing about the disk and change nothing.
    pub fn note<T>(&self, result: &Result<T, StoreError>) {
        let now = match result {
            Ok(_) => None,
            Err(err) => match Refusal::of(err) {
                Some(refusal) => Some(refusal),
                None => return,
            },
        };
        let before = std::mem::replace(
            &mut *self.refused.lock().unwrap_or_else(PoisonError::into_inner),
            now,
        );
        match (before, now) {
            (None, Some(refusal)) => tracing::error!(
                database = %self.place,
                "the database cannot store anything: {}; events are refused, not acknowledged, \
                 so the platforms redeliver them. Fix: {}. Writing resumes by itself once it can.",
                refusal.reason(),
                refusal.fix()
            ),
            (Some(_), None) => {
                tracing::info!(database = %self.place, "the database takes writes again");
            }
            _ => {}
        }
    }

    /// Why writes are refused, while they are: the error `/readyz` reports.
    pub fn refused(&self) -> Option<StoreError> {
        let refusal = *self.refused.lock().unwrap_or_else(PoisonError::into_inner);
        refusal.map(|r| StoreError::Unwritable(self.place.clone(), r.reason(), r.fix()))
    }
}

#[cfg(test)]
mod tests {
    use sqlx::{Connection, SqliteConnection};

    use super::*;

    /// A write SQLite refuses with `SQLITE_FULL`: the file may not grow past its pages.
    async fn full_disk_error() -> StoreError {
        let mut db = SqliteConnection::connect("sqlite::memory:").await.unwrap();
        sqlx::query("CREATE TABLE t (v BLOB)")
            .execute(&mut db)
            .await
            .unwrap();
        let pages: i64 = sqlx::query_scalar("PRAGMA page_count")
            .fetch_one(&mut db)
            .await
            .unwrap();
        sqlx::query(&format!("PRAGMA max_page_count = {pages}"))
            .execute(&mut db)
            .await
            .unwrap();
        let err = sqlx::query("INSERT INTO t VALUES (zeroblob(100000))")
            .execute(&mut db)
            .await
            .expect_err("the file may not grow");
        StoreError::Db(err)
    }

    #[tokio::test]
    async fn a_full_disk_is_a_refusal_that_lasts_and_is_retried() {
        let err = full_disk_error().await;
        assert_eq!(Refusal::of(&err), Some(Refusal::Full), "{err}");
        assert!(err.is_transient(), "a write that must land waits for space");
        assert_eq!(Refusal::of(&StoreError::Timeout), None);
    }

    #[tokio::test]
    async fn a_refusal_is_reported_with_the_place_and_the_fix_until_a_write_lands() {
        let writes = Writable::new("/data/switchboard.db".into());
        assert!(writes.refused().is_none());
        writes.note::<()>(&Err(full_disk_error().await));
        let why = writes.refused().expect("refused").to_string();
        assert!(why.contains("/data/switchboard.db"), "{why}");
        assert!(why.contains("no space"), "{why}");
        assert!(why.contains("free space"), "{why}");
        // An error that says nothing about the disk changes nothing.
        writes.note::<()>(&Err(StoreError::Timeout));
        assert!(writes.refused().is_some());
        writes.note(&Ok(()));
        assert!(
            writes.refused().is_none(),
            "the write that landed clears it"
        );
    }

    /// The log lines written while `f` runs on this thread.
    fn logged(f: impl FnOnce()) -> String {
        #[derive(Clone, Default)]
        struct Lines(std::sync::Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Lines {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let lines = Lines::default();
        let writer = lines.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, f);
        let bytes = lines.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    #[tokio::test]
    async fn refused_writes_log_one_error_naming_the_file_and_the_fix_then_the_recovery() {
        let writes = Writable::new("/data/switchboard.db".into());
        let (first, second) = (full_disk_error().await, full_disk_error().await);
        let log = logged(|| {
            writes.note::<()>(&Err(first));
            writes.note::<()>(&Err(second));
            writes.note(&Ok(()));
        });
        let errors: Vec<_> = log.lines().filter(|l| l.contains("ERROR")).collect();
        assert_eq!(errors.len(), 1, "{log}");
        assert!(errors[0].contains("/data/switchboard.db"), "{log}");
        assert!(errors[0].contains("Fix: free space"), "{log}");
        assert!(log.contains("takes writes again"), "{log}");
    }
}
