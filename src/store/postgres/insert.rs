//! PostgreSQL's inbox insert: numbered and announced to the other replicas in one
//! transaction. Several gateways write at once here, so the sequence row stays locked until
//! commit and numbers follow commit order; SQLite, owned by one process, groups its inserts
//! instead (`sqlite/grouped/`).

use sqlx::Postgres;

use crate::store::backend::{Backend, SqlStore};
use crate::store::inbox::PendingInsert;
use crate::store::{INBOX_CHANNEL, StoreError};

impl SqlStore<Postgres> {
    /// Store `row` with the next sequence number of its conversation and announce it to the
    /// replica holding that conversation. A redelivery rolls back (no number is used up).
    pub(super) async fn insert_sequenced(
        &self,
        row: PendingInsert,
    ) -> Result<Option<i64>, StoreError> {
        // On the request path: the front pool, never in line behind the work.
        let mut tx = self.front.begin_with(Postgres::DIALECT.begin_write).await?;
        let seq: i64 = sqlx::query_scalar(
            "INSERT INTO conversation_seq (key, last_seq) VALUES ($1, 1) \
             ON CONFLICT (key) DO UPDATE SET last_seq = conversation_seq.last_seq + 1 RETURNING last_seq",
        )
        .bind(row.key.as_str())
        .fetch_one(&mut *tx)
        .await?;
        let id: Option<i64> = sqlx::query_scalar(
            "INSERT INTO inbox (channel, event_id, conversation_key, payload, created_at, updated_at, kind, seq) \
             VALUES ($1, $2, $3, $4, $5, $5, $6, $7) ON CONFLICT (channel, event_id) DO NOTHING RETURNING id",
        )
        .bind(row.channel.as_str())
        .bind(row.event_id.as_str())
        .bind(row.key.as_str())
        .bind(row.payload.as_str())
        .bind(row.now_ms)
        .bind(row.kind)
        .bind(seq)
        .fetch_optional(&mut *tx)
        .await?;
        if id.is_none() {
            tx.rollback().await?;
            return Ok(None);
        }
        // Delivered at commit, so a woken replica finds the row. Only while a replica
        // holds the conversation: the holder may have looked at the inbox for the last
        // time already. A free conversation is claimed by the replica that stored the
        // event, whose actor is woken in-process; announcing every event would wake an
        // actor for it on every replica, all racing for the same lease.
        let sql = format!(
            "SELECT pg_notify('{INBOX_CHANNEL}', $1) WHERE EXISTS (SELECT 1 FROM \
             conversation_leases WHERE key = $1 AND lease_until >= {})",
            Postgres::DIALECT.now_ms
        );
        sqlx::query(&sql)
            .bind(row.key.as_str())
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(id)
    }
}
