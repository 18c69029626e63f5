//! Several replicas on one database, the store's half: instance heartbeats, conversation
//! leases with an epoch, the fence every write of a turn carries, and `NOTIFY` wake-ups.
//! Every expiry is compared with the database's clock ([`Dialect::now_ms`]), never a
//! replica's. On SQLite ([`Dialect::shared`] false) the process is alone: nothing here is
//! used by the gateway, though the calls work alike for uniformity.
//!
//! [`Dialect::now_ms`]: super::Dialect::now_ms
//! [`Dialect::shared`]: super::Dialect::shared

use std::time::Duration;

use async_trait::async_trait;
use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Type};
use switchboard_channel::ConversationKey;

use super::backend::{Backend, SqlStore};
use super::{Claim, StoreError};

/// The `LISTEN`/`NOTIFY` channel a stored event is announced on; the payload is the
/// conversation key.
pub const INBOX_CHANNEL: &str = "switchboard_inbox";

/// A conversation's lease row as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseRow {
    /// The instance holding (or last holding) it.
    pub owner: String,
    /// Grows by one on every acquisition.
    pub epoch: i64,
    /// Whether it is still in force by the database's clock.
    pub live: bool,
}

/// One replica as its heartbeat row shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    /// Its `instance_id`.
    pub id: String,
    /// When it first beat (database ms).
    pub started_at: i64,
    /// How long ago its last heartbeat was, by the database's clock (ms).
    pub silent_ms: i64,
    /// Whether it stopped claiming (shutting down).
    pub draining: bool,
}

/// Instances, conversation leases and wake-ups (see the module documentation).
#[async_trait]
pub trait ClusterStore: Send + Sync {
    /// Whether several processes may share this database (PostgreSQL).
    fn shared(&self) -> bool;

    /// Record that `instance` is alive now (inserting its row on the first beat).
    async fn heartbeat(&self, instance: &str) -> Result<(), StoreError>;

    /// Mark `instance` as draining: it claims nothing more.
    async fn set_draining(&self, instance: &str) -> Result<(), StoreError>;

    /// Remove `instance`'s row (a clean stop).
    async fn remove_instance(&self, instance: &str) -> Result<(), StoreError>;

    /// Instances whose last heartbeat is younger than `within` and that are not draining.
    async fn live_instances(&self, within: Duration) -> Result<Vec<String>, StoreError>;

    /// Every instance row with the age of its heartbeat, by id.
    async fn instances(&self) -> Result<Vec<Instance>, StoreError>;

    /// Take conversation `key` for `owner` for `ttl`, when it is free, expired or already
    /// `owner`'s; returns the new epoch (one more than any before), or `None` while another
    /// owner's lease is in force.
    async fn acquire_conversation(
        &self,
        key: &ConversationKey,
        owner: &str,
        ttl: Duration,
    ) -> Result<Option<i64>, StoreError>;

    /// Extend `owner`'s lease of epoch `epoch` by `ttl` from now; `false` when it is no
    /// longer in force (expired or taken over).
    async fn renew_conversation(
        &self,
        key: &ConversationKey,
        owner: &str,
        epoch: i64,
        ttl: Duration,
    ) -> Result<bool, StoreError>;

    /// Give up `owner`'s lease of epoch `epoch` at once; when events of `key` are still
    /// waiting, other replicas are told (`NOTIFY`) so one takes over without waiting.
    async fn release_conversation(
        &self,
        key: &ConversationKey,
        owner: &str,
        epoch: i64,
    ) -> Result<bool, StoreError>;

    /// Give up every lease `owner` holds (shutdown), notifying for waiting events.
    async fn release_all_conversations(&self, owner: &str) -> Result<u64, StoreError>;

    /// The lease row of `key`, if it was ever taken.
    async fn conversation_lease(
        &self,
        key: &ConversationKey,
    ) -> Result<Option<LeaseRow>, StoreError>;

    /// Announce that `key` has events waiting (no-op on a database of one process).
    async fn notify_conversation(&self, key: &ConversationKey) -> Result<(), StoreError>;
}

/// Marks a claimed inbox row done at `$1`, fenced on the claim (`$2`–`$4`, see [`held`]).
pub(super) fn done_sql() -> String {
    format!(
        "UPDATE inbox SET status = 'done', owner = NULL, lease_until = NULL, updated_at = $1 \
         WHERE id = $2 AND {}",
        held(2)
    )
}

/// The fence of a claim, as an SQL condition binding `$n` (inbox id), `$n+1` (attempt) and
/// `$n+2` (epoch): the row is still this claim's, and (epoch > 0) the conversation lease it
/// was claimed under is still the current one with the same owner. Bind with [`Claim`]'s
/// fields in that order.
pub(super) fn held(n: usize) -> String {
    let (id, attempt, epoch) = (n, n + 1, n + 2);
    format!(
        "EXISTS (SELECT 1 FROM inbox fi WHERE fi.id = ${id} AND fi.attempts = ${attempt} \
         AND fi.status = 'processing' AND (${epoch} = 0 OR EXISTS (SELECT 1 FROM conversation_leases fl \
         WHERE fl.key = fi.conversation_key AND fl.owner = fi.owner AND fl.epoch = ${epoch})))"
    )
}

/// `SELECT pg_notify(...)` for every key with unfinished events among those `keys_sql`
/// selects (as a column named `key`).
fn notify_waiting(keys_sql: &str) -> String {
    format!(
        "SELECT pg_notify('{INBOX_CHANNEL}', k.key) FROM ({keys_sql}) k WHERE EXISTS \
         (SELECT 1 FROM inbox w WHERE w.conversation_key = k.key AND w.status IN ('pending', 'processing'))"
    )
}

impl<DB> SqlStore<DB>
where
    DB: Backend,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'r> i64: Type<DB> + Encode<'r, DB> + Decode<'r, DB>,
    for<'r> &'r str: Type<DB> + Encode<'r, DB> + ColumnIndex<DB::Row>,
    usize: ColumnIndex<DB::Row>,
{
    /// Mark `claim`'s inbox row done on `conn` (inside a turn's closing transaction), fenced
    /// on the claim and the conversation lease it was made under. False when the fence
    /// refused it: the caller rolls back and reports [`Self::refusal`].
    pub(super) async fn mark_done_fenced(
        conn: &mut DB::Connection,
        claim: Claim,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(&done_sql())
            .bind(now_ms)
            .bind(claim.id)
            .bind(claim.attempt)
            .bind(claim.epoch)
            .execute(&mut *conn)
            .await?;
        Ok(DB::rows_affected(&done) != 0)
    }

    /// Why a fenced write changed nothing: `Fenced` when the conversation lease the claim
    /// was made under is no longer the current one, `Superseded` otherwise.
    pub(super) async fn refusal(&self, claim: Claim) -> StoreError {
        if claim.epoch == 0 {
            return StoreError::Superseded(claim.id);
        }
        let current: Result<Option<i64>, _> = sqlx::query_scalar(
            "SELECT l.epoch FROM conversation_leases l JOIN inbox i ON i.conversation_key = l.key \
             WHERE i.id = $1",
        )
        .bind(claim.id)
        .fetch_optional(&self.pool)
        .await;
        match current {
            Ok(Some(epoch)) if epoch == claim.epoch => StoreError::Superseded(claim.id),
            // Unreadable now: the lease is the likelier cause; either way nothing was written.
            _ => StoreError::Fenced(claim.epoch),
        }
    }
}

#[async_trait]
impl<DB> ClusterStore for SqlStore<DB>
where
    DB: Backend,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'r> i64: Type<DB> + Encode<'r, DB> + Decode<'r, DB>,
    for<'r> String: Type<DB> + Encode<'r, DB> + Decode<'r, DB>,
    for<'r> &'r str: Type<DB> + Encode<'r, DB> + ColumnIndex<DB::Row>,
    usize: ColumnIndex<DB::Row>,
{
    fn shared(&self) -> bool {
        DB::DIALECT.shared
    }

    async fn heartbeat(&self, instance: &str) -> Result<(), StoreError> {
        let now = DB::DIALECT.now_ms;
        let sql = format!(
            "INSERT INTO instances (instance_id, started_at, heartbeat_at, draining) \
             VALUES ($1, {now}, {now}, 0) \
             ON CONFLICT (instance_id) DO UPDATE SET heartbeat_at = {now}"
        );
        sqlx::query(&sql).bind(instance).execute(&self.pool).await?;
        Ok(())
    }

    async fn set_draining(&self, instance: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE instances SET draining = 1 WHERE instance_id = $1")
            .bind(instance)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn remove_instance(&self, instance: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM instances WHERE instance_id = $1")
            .bind(instance)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn live_instances(&self, within: Duration) -> Result<Vec<String>, StoreError> {
        let sql = format!(
            "SELECT instance_id FROM instances WHERE draining = 0 AND heartbeat_at >= {} - $1 \
             ORDER BY instance_id",
            DB::DIALECT.now_ms
        );
        let ids = sqlx::query_scalar(&sql)
            .bind(millis(within))
            .fetch_all(&self.pool)
            .await?;
        Ok(ids)
    }

    async fn instances(&self) -> Result<Vec<Instance>, StoreError> {
        let sql = format!(
            "SELECT instance_id, started_at, {} - heartbeat_at, draining FROM instances \
             ORDER BY instance_id",
            DB::DIALECT.now_ms
        );
        let rows: Vec<(String, i64, i64, i64)> = sqlx::query_as(&sql).fetch_all(&self.pool).await?;
        Ok(rows
            .into_iter()
            .map(|(id, started_at, silent_ms, draining)| Instance {
                id,
                started_at,
                silent_ms,
                draining: draining != 0,
            })
            .collect())
    }

    async fn acquire_conversation(
        &self,
        key: &ConversationKey,
        owner: &str,
        ttl: Duration,
    ) -> Result<Option<i64>, StoreError> {
        let now = DB::DIALECT.now_ms;
        // The conflict branch runs only while the lease is free, expired or ours; either
        // way the epoch grows, so a previous holder's turns are fenced out.
        let sql = format!(
            "INSERT INTO conversation_leases (key, owner, epoch, lease_until) \
             VALUES ($1, $2, 1, {now} + $3) \
             ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, \
               epoch = conversation_leases.epoch + 1, lease_until = excluded.lease_until \
             WHERE conversation_leases.owner = excluded.owner OR conversation_leases.lease_until < {now} \
             RETURNING epoch"
        );
        // `fetch_all`: the lease is ours only once its commit landed (see `mod.rs`).
        let epoch = sqlx::query_scalar(&sql)
            .bind(key.to_string())
            .bind(owner)
            .bind(millis(ttl))
            .fetch_all(&self.pool)
            .await?
            .pop();
        Ok(epoch)
    }

    async fn renew_conversation(
        &self,
        key: &ConversationKey,
        owner: &str,
        epoch: i64,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let now = DB::DIALECT.now_ms;
        let sql = format!(
            "UPDATE conversation_leases SET lease_until = {now} + $4 \
             WHERE key = $1 AND owner = $2 AND epoch = $3 AND lease_until >= {now}"
        );
        let done = sqlx::query(&sql)
            .bind(key.to_string())
            .bind(owner)
            .bind(epoch)
            .bind(millis(ttl))
            .execute(&self.pool)
            .await?;
        Ok(DB::rows_affected(&done) == 1)
    }

    async fn release_conversation(
        &self,
        key: &ConversationKey,
        owner: &str,
        epoch: i64,
    ) -> Result<bool, StoreError> {
        let sql = format!(
            "UPDATE conversation_leases SET lease_until = {} - 1 \
             WHERE key = $1 AND owner = $2 AND epoch = $3",
            DB::DIALECT.now_ms
        );
        let mut tx = self.begin_write().await?;
        let done = sqlx::query(&sql)
            .bind(key.to_string())
            .bind(owner)
            .bind(epoch)
            .execute(&mut *tx)
            .await?;
        if DB::DIALECT.shared {
            let notify = notify_waiting("SELECT $1 AS key");
            sqlx::query(&notify)
                .bind(key.to_string())
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(DB::rows_affected(&done) == 1)
    }

    async fn release_all_conversations(&self, owner: &str) -> Result<u64, StoreError> {
        let now = DB::DIALECT.now_ms;
        let mut tx = self.begin_write().await?;
        if DB::DIALECT.shared {
            let keys = format!(
                "SELECT key FROM conversation_leases WHERE owner = $1 AND lease_until >= {now}"
            );
            sqlx::query(&notify_waiting(&keys))
                .bind(owner)
                .execute(&mut *tx)
                .await?;
        }
        let sql = format!(
            "UPDATE conversation_leases SET lease_until = {now} - 1 \
             WHERE owner = $1 AND lease_until >= {now}"
        );
        let done = sqlx::query(&sql).bind(owner).execute(&mut *tx).await?;
        // Notifications are delivered at commit, after the leases are free.
        tx.commit().await?;
        Ok(DB::rows_affected(&done))
    }

    async fn conversation_lease(
        &self,
        key: &ConversationKey,
    ) -> Result<Option<LeaseRow>, StoreError> {
        let sql = format!(
            "SELECT owner, epoch, CAST(CASE WHEN lease_until >= {} THEN 1 ELSE 0 END AS BIGINT) \
             FROM conversation_leases WHERE key = $1",
            DB::DIALECT.now_ms
        );
        let row: Option<(String, i64, i64)> = sqlx::query_as(&sql)
            .bind(key.to_string())
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|(owner, epoch, live)| LeaseRow {
            owner,
            epoch,
            live: live == 1,
        }))
    }

    async fn notify_conversation(&self, key: &ConversationKey) -> Result<(), StoreError> {
        if DB::DIALECT.shared {
            sqlx::query(&format!("SELECT pg_notify('{INBOX_CHANNEL}', $1)"))
                .bind(key.to_string())
                .execute(&self.pool)
                .await?;
        }
        Ok(())
    }
}

/// A duration as the whole milliseconds the lease columns hold.
fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 4)
}
