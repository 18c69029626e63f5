//! The retry policy for writes that must land: those that follow something people already
//! saw (an answer posted, a prompt shown), where giving up would lose history or leave the
//! inbox disagreeing with the chat. [`Durable::write`] retries a transient database error
//! ([`StoreError::is_transient`]: connection reset or closed (or cut mid-handshake, which
//! reads as a protocol or TLS error), pool timeout, I/O, PostgreSQL
//! shutting down or restarting, serialization failures and deadlocks, a busy SQLite file,
//! and a database that refuses writes until someone acts: a full disk, a read-only file or
//! session, `writable.rs`)
//! with capped exponential backoff until the write succeeds or the process stops. Any other
//! error is returned at once, `StoreError::Superseded` included: the fenced claim belongs to
//! someone else, who finishes the event.
//!
//! Writes retried here are idempotent or fenced: a commit whose answer was lost on a dying
//! connection is retried into `Superseded` (the row is already done), never stored twice.

use std::future::Future;
use std::time::Duration;

use switchboard_channel::Backoff;
use tokio_util::sync::CancellationToken;

use super::StoreError;

/// First wait after a failed write.
const FIRST_BACKOFF: Duration = Duration::from_millis(50);
/// Longest wait between two attempts, so a write lands soon after the database is back.
const MAX_BACKOFF: Duration = Duration::from_secs(2);
/// After the first failure, one warning per this many further failures.
const WARN_EVERY: u32 = 10;

/// Retries a write through transient database errors until it lands or `stop` fires.
#[derive(Clone, Debug)]
pub struct Durable {
    /// Fired when the process stops: the write is abandoned with [`StoreError::Stopped`]
    /// and the event's unfinished inbox row is picked up by the next start.
    stop: CancellationToken,
}

impl Durable {
    /// A policy that gives up only when `stop` fires.
    pub fn new(stop: CancellationToken) -> Self {
        Self { stop }
    }

    /// Run `op` until it returns anything but a transient error; `what` names the write in
    /// the log.
    pub async fn write<T, F, Fut>(&self, what: &str, mut op: F) -> Result<T, StoreError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, StoreError>>,
    {
        let mut failures = 0u32;
        let mut backoff = Backoff::new(FIRST_BACKOFF, MAX_BACKOFF);
        loop {
            let err = match op().await {
                Ok(value) => {
                    if failures > 0 {
                        tracing::info!(
                            write = what,
                            failures,
                            "database write landed after retries"
                        );
                    }
                    return Ok(value);
                }
                Err(err) if err.is_transient() => err,
                Err(err) if failures > 0 && matches!(err, StoreError::Superseded(_)) => {
                    // An earlier attempt may have committed before its connection died.
                    tracing::info!(
                        write = what,
                        "write retried after a lost connection was already applied or taken over"
                    );
                    return Err(err);
                }
                Err(err) => return Err(err),
            };
            failures += 1;
            if failures == 1 || failures.is_multiple_of(WARN_EVERY) {
                tracing::warn!(write = what, failures, error = %err, "database write failed; retrying until it lands");
            }
            tokio::select! {
                () = self.stop.cancelled() => {
                    tracing::warn!(write = what, failures, error = %err, "stopping with a write not stored; the next start finishes the event");
                    return Err(StoreError::Stopped);
                }
                () = tokio::time::sleep(backoff.next_delay()) => {}
            }
        }
    }
}

/// Whether retrying `err` later may succeed: the database was unreachable, restarting, or
/// refused this attempt only because of concurrent work.
pub(super) fn transient_db(err: &sqlx::Error) -> bool {
    match err {
        // A connection cut mid-handshake reads as a protocol or TLS error.
        sqlx::Error::Io(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => {
            if let Some(pg) = db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>() {
                transient_pg(pg.code())
            } else if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
                // The primary result code is the low byte of an extended one.
                let code = db.code().and_then(|c| c.parse::<i32>().ok()).unwrap_or(0);
                matches!(code & 0xff, SQLITE_BUSY | SQLITE_LOCKED)
            } else {
                false
            }
        }
        _ => false,
    }
}

const SQLITE_BUSY: i32 = 5;
const SQLITE_LOCKED: i32 = 6;

/// PostgreSQL SQLSTATEs worth retrying: connection exceptions (class 08), admin/crash
/// shutdown and "cannot connect now" (57P01–57P03), a statement cancelled by its timeout
/// (57014), serialization failure and deadlock (40001, 40P01), too many connections (53300)
/// and a lock not available (55P03).
fn transient_pg(code: &str) -> bool {
    code.starts_with("08")
        || matches!(
            code,
            "57P01" | "57P02" | "57P03" | "57014" | "40001" | "40P01" | "53300" | "55P03"
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn io() -> StoreError {
        StoreError::Db(sqlx::Error::Io(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "Connection reset by peer",
        )))
    }

    #[tokio::test(start_paused = true)]
    async fn a_transient_failure_is_retried_until_the_write_lands() {
        let tries = AtomicU32::new(0);
        let durable = Durable::new(CancellationToken::new());
        let landed = durable
            .write("test", || async {
                if tries.fetch_add(1, Ordering::SeqCst) < 30 {
                    Err(io())
                } else {
                    Ok(7)
                }
            })
            .await;
        assert_eq!(landed.unwrap(), 7);
        assert_eq!(tries.load(Ordering::SeqCst), 31);
    }

    #[tokio::test(start_paused = true)]
    async fn superseded_and_other_errors_are_returned_at_once() {
        let tries = AtomicU32::new(0);
        let durable = Durable::new(CancellationToken::new());
        let lost = durable
            .write("test", || async {
                tries.fetch_add(1, Ordering::SeqCst);
                Err::<(), _>(StoreError::Superseded(4))
            })
            .await;
        assert!(matches!(lost, Err(StoreError::Superseded(4))));
        let corrupt = durable
            .write("test", || async {
                tries.fetch_add(1, Ordering::SeqCst);
                Err::<(), _>(StoreError::Corrupt("x".into()))
            })
            .await;
        assert!(matches!(corrupt, Err(StoreError::Corrupt(_))));
        assert_eq!(tries.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn stopping_the_process_ends_the_retries() {
        let stop = CancellationToken::new();
        let durable = Durable::new(stop.clone());
        let stopper = async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            stop.cancel();
        };
        let (gave_up, ()) = tokio::join!(
            durable.write("test", || async { Err::<(), _>(io()) }),
            stopper
        );
        assert!(matches!(gave_up, Err(StoreError::Stopped)));
    }

    #[test]
    fn pool_timeouts_and_io_are_transient_but_bad_rows_and_lost_claims_are_not() {
        assert!(io().is_transient());
        assert!(StoreError::Db(sqlx::Error::PoolTimedOut).is_transient());
        assert!(StoreError::Timeout.is_transient());
        assert!(!StoreError::Db(sqlx::Error::RowNotFound).is_transient());
        assert!(!StoreError::Db(sqlx::Error::PoolClosed).is_transient());
        assert!(!StoreError::Superseded(1).is_transient());
        assert!(!StoreError::Corrupt("x".into()).is_transient());
        for code in ["08006", "57P01", "57P02", "57P03", "40001", "57014"] {
            assert!(transient_pg(code), "{code}");
        }
        for code in ["22021", "23505", "42P01"] {
            assert!(!transient_pg(code), "{code}");
        }
    }
}
