//! The `leaders` table (migration 0011) on PostgreSQL: take a role's lease once it has run
//! out, renew it under its term, save the receive loop's cursor, release it. Expiry is
//! decided by the database's `now()` alone; every write is conditional on (holder, term), so
//! a replica that lost its lease (paused, partitioned) writes nothing.

use std::time::Duration;

use sqlx::PgPool;

/// One role's lease as one replica sees it.
#[derive(Clone)]
pub(crate) struct Lease {
    pool: PgPool,
    /// What is led (`telegram:<channel>`).
    pub(crate) role: String,
    /// This replica's instance id.
    pub(crate) holder: String,
    /// How long a lease lasts from its last renewal.
    ttl: Duration,
}

impl Lease {
    /// The lease of `role` for `holder`, lasting `ttl` per renewal.
    pub(crate) fn new(pool: PgPool, role: String, holder: String, ttl: Duration) -> Self {
        Self {
            pool,
            role,
            holder,
            ttl,
        }
    }

    fn ttl_ms(&self) -> i64 {
        i64::try_from(self.ttl.as_millis()).unwrap_or(i64::MAX)
    }

    /// Take the lease if no one holds it (the first time, once it ran out, or once it was
    /// released); the new term when taken.
    pub(crate) async fn try_acquire(&self) -> Result<Option<i64>, sqlx::Error> {
        sqlx::query_scalar(
            "INSERT INTO leaders (role, holder, term, lease_until) \
             VALUES ($1, $2, 1, now() + $3 * interval '1 millisecond') \
             ON CONFLICT (role) DO UPDATE \
               SET holder = excluded.holder, term = leaders.term + 1, \
                   lease_until = excluded.lease_until \
             WHERE leaders.lease_until <= now() \
             RETURNING term",
        )
        .bind(&self.role)
        .bind(&self.holder)
        .bind(self.ttl_ms())
        .fetch_optional(&self.pool)
        .await
    }

    /// Extend the lease by a TTL from now; `false` when it is no longer ours under `term`.
    pub(crate) async fn renew(&self, term: i64) -> Result<bool, sqlx::Error> {
        let done = sqlx::query(
            "UPDATE leaders SET lease_until = now() + $4 * interval '1 millisecond' \
             WHERE role = $1 AND holder = $2 AND term = $3 AND lease_until > now()",
        )
        .bind(&self.role)
        .bind(&self.holder)
        .bind(term)
        .bind(self.ttl_ms())
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Give the lease up at once (drain, step-down), so a standby takes it on its next look.
    pub(crate) async fn release(&self, term: i64) -> Result<(), sqlx::Error> {
        sqlx::query(
            "UPDATE leaders SET lease_until = now() \
             WHERE role = $1 AND holder = $2 AND term = $3 AND lease_until > now()",
        )
        .bind(&self.role)
        .bind(&self.holder)
        .bind(term)
        .execute(&self.pool)
        .await?;
        // Standbys listening are told at once (they also look on their own interval).
        sqlx::query("SELECT pg_notify('switchboard_leaders', $1)")
            .bind(&self.role)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Who holds the lease now, if anyone.
    pub(crate) async fn holder_now(&self) -> Result<Option<String>, sqlx::Error> {
        sqlx::query_scalar("SELECT holder FROM leaders WHERE role = $1 AND lease_until > now()")
            .bind(&self.role)
            .fetch_optional(&self.pool)
            .await
    }

    /// The cursor the last leader saved.
    pub(crate) async fn cursor(&self) -> Result<Option<i64>, sqlx::Error> {
        let row: Option<Option<i64>> =
            sqlx::query_scalar("SELECT cursor FROM leaders WHERE role = $1")
                .bind(&self.role)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.flatten())
    }

    /// Save `cursor` while the lease is ours under `term`; `false` when it is not.
    pub(crate) async fn save_cursor(&self, term: i64, cursor: i64) -> Result<bool, sqlx::Error> {
        let done = sqlx::query(
            "UPDATE leaders SET cursor = $4 \
             WHERE role = $1 AND holder = $2 AND term = $3 AND lease_until > now()",
        )
        .bind(&self.role)
        .bind(&self.holder)
        .bind(term)
        .bind(cursor)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }
}
