//! Bounded waits wherever the database is on a request path. A webhook stores its event
//! before it answers (Slack gives up after 3 s and retries), and `/readyz` must say
//! "database down" rather than hang, so no store call waits for the database without a limit:
//! the request path's pool gives up acquiring a connection (connecting included) after
//! `acquire`, the store's own work waits in line for one up to `queue`,
//! PostgreSQL cancels a statement after `statement` (SQLite waits at most that long on a
//! locked file), and the calls on an inbound request's path (inbox insert, access lookups,
//! the readiness ping) give up after `request` on the client side too, which also covers a
//! connection whose peer went silent. Start-up is the exception: it waits up to
//! [`STARTUP_WAIT`] for the database to come up (a container started alongside it).

use std::future::Future;
use std::time::Duration;

use sqlx::migrate::{Migrate, Migrator};
use sqlx::pool::PoolOptions;
use sqlx::{Connection, Database};

use super::StoreError;

/// How long opening the store waits for the database to accept connections.
pub const STARTUP_WAIT: Duration = Duration::from_secs(30);

/// The bounded waits of one store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// Longest wait for a connection on an inbound request's path (the front pool), opening
    /// a new one included.
    pub acquire: Duration,
    /// Longest the store's own work (claims, history, recall, completions, sweeps) waits in
    /// line for a connection of its pool. Long: under overload work should wait its turn,
    /// not fail and be retried after a back-off.
    pub queue: Duration,
    /// Longest a statement may run (PostgreSQL `statement_timeout`; SQLite's busy timeout).
    pub statement: Duration,
    /// Longest a request-path call (inbox insert, access lookup, ping) may take in all.
    pub request: Duration,
}

impl Default for Timeouts {
    /// 1 s to get a connection and 2 s for a request-path call, so a webhook answers 5xx
    /// well inside Slack's 3 s while the database is away; 10 s in line for work; 5 s per
    /// statement.
    fn default() -> Self {
        Self {
            acquire: Duration::from_secs(1),
            queue: Duration::from_secs(10),
            statement: Duration::from_secs(5),
            request: Duration::from_secs(2),
        }
    }
}

impl Timeouts {
    /// Run a request-path call, giving up after `self.request` with [`StoreError::Timeout`].
    pub(super) async fn bounded<T>(
        &self,
        call: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        tokio::time::timeout(self.request, call)
            .await
            .unwrap_or(Err(StoreError::Timeout))
    }
}

/// Apply `migrator` over a pool of one connection of its own, waiting up to [`STARTUP_WAIT`]
/// for it (a server still starting up, a new SQLite file on a slow disk), with `options` as
/// given (PostgreSQL's carry no statement timeout: a migration may rightly take long).
pub(super) async fn migrate_at_startup<DB>(
    options: <DB::Connection as Connection>::Options,
    migrator: &Migrator,
) -> Result<(), StoreError>
where
    DB: Database,
    DB::Connection: Migrate,
{
    let pool = PoolOptions::<DB>::new()
        .max_connections(1)
        .acquire_timeout(STARTUP_WAIT)
        .connect_with(options)
        .await?;
    migrator.run(&pool).await?;
    pool.close().await;
    Ok(())
}
