//! `Store` for [`SqlStore`] on either database: the durable inbox (insert, claim under a
//! lease, complete, fail, release, counts). History reads and writes live in `history.rs`;
//! how a row is inserted is each database's own ([`Backend::insert_event`]: grouped commits
//! on SQLite, a sequenced and announced insert on PostgreSQL).

use std::time::Duration;

use async_trait::async_trait;
use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Type};
use switchboard_channel::{ChannelEvent, ConversationKey, MessageRef};

use super::backend::{Backend, Completion, SqlStore};
use super::cluster::held;
use super::rows::{InboxRecord, conversation_key};
use super::text;
use super::{Claim, ConversationSummary, InboxCounts, InboxRow, Insert, Spent, Store, StoreError};
use crate::ids::InboxKind;
use crate::provider::ChatMessage;

/// An inbox row waiting to be stored.
pub struct PendingInsert {
    /// The configured channel's name.
    pub channel: String,
    /// The platform's event id, unique per channel: a redelivery is recognised by it.
    pub event_id: String,
    /// The conversation key, as stored.
    pub key: String,
    /// The event, serialised.
    pub payload: String,
    /// When it was stored, Unix ms.
    pub now_ms: i64,
    /// Its [`InboxKind`], as stored.
    pub kind: &'static str,
}

/// Selects the next unfinished row of a conversation (by its sequence number) that `$1`
/// (owner) may take at `$3` (now), skipping the conversation while another live owner holds
/// one of its rows. While one of its approvals is pending, only control events (buttons,
/// `/approve`, `/stop`) are taken, messages wait behind it: read in the same statement, so
/// an approval decided or expired a moment ago is seen without a read of its own. Under a
/// conversation lease (`$5` > 0, checked in the same statement) the lease decides instead:
/// its holder takes over rows an earlier holder left processing.
const CLAIMABLE_ROW: &str = "SELECT id FROM inbox \
     WHERE conversation_key = $4 \
       AND (status = 'pending' OR (status = 'processing' AND (owner = $1 OR lease_until < $3 OR $5 > 0))) \
       AND (kind = 'control' OR NOT EXISTS (SELECT 1 FROM approvals a \
           WHERE a.conversation_key = $4 AND a.status = 'pending')) \
       AND ($5 > 0 OR NOT EXISTS (SELECT 1 FROM inbox busy WHERE busy.conversation_key = $4 \
           AND busy.status = 'processing' AND busy.owner <> $1 AND busy.lease_until >= $3)) \
       AND ($5 = 0 OR EXISTS (SELECT 1 FROM conversation_leases l WHERE l.key = $4 \
           AND l.owner = $1 AND l.epoch = $5)) \
     ORDER BY seq, id LIMIT 1";

/// The claim: take the row [`CLAIMABLE_ROW`] selects, locked with `lock` where the
/// database needs it.
fn claim_sql(lock: &str) -> String {
    format!(
        "UPDATE inbox SET status = 'processing', owner = $1, lease_until = $2, \
         attempts = attempts + 1, updated_at = $3 WHERE id = ({CLAIMABLE_ROW} {lock}) \
         RETURNING id, payload, attempts, draft_refs"
    )
}

/// Conversations with claimable rows under conversation leases: unfinished rows whose
/// conversation no other owner holds by the database's clock.
fn claimable_leased_sql(now: &str) -> String {
    format!(
        "SELECT DISTINCT conversation_key FROM inbox i WHERE status IN ('pending', 'processing') \
         AND NOT EXISTS (SELECT 1 FROM conversation_leases l WHERE l.key = i.conversation_key \
           AND l.owner <> $1 AND l.lease_until >= {now})"
    )
}

impl<DB> SqlStore<DB>
where
    DB: Backend,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'r> i64: Type<DB> + Encode<'r, DB> + Decode<'r, DB>,
    for<'r> Option<i64>: Type<DB> + Encode<'r, DB> + Decode<'r, DB>,
    for<'r> String: Type<DB> + Encode<'r, DB> + Decode<'r, DB>,
    for<'r> Option<String>: Type<DB> + Encode<'r, DB> + Decode<'r, DB>,
    for<'r> &'r str: Type<DB> + Encode<'r, DB> + ColumnIndex<DB::Row>,
    usize: ColumnIndex<DB::Row>,
{
    /// `Ok` when a fenced write changed a row; otherwise why it was refused.
    pub(super) async fn fenced(&self, claim: Claim, rows: u64) -> Result<(), StoreError> {
        if rows == 0 {
            Err(self.refusal(claim).await)
        } else {
            Ok(())
        }
    }
}

#[async_trait]
impl<DB> Store for SqlStore<DB>
where
    DB: Backend,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'r> i64: Type<DB> + Encode<'r, DB> + Decode<'r, DB>,
    for<'r> Option<i64>: Type<DB> + Encode<'r, DB> + Decode<'r, DB>,
    for<'r> String: Type<DB> + Encode<'r, DB> + Decode<'r, DB>,
    for<'r> Option<String>: Type<DB> + Encode<'r, DB> + Decode<'r, DB>,
    for<'r> &'r str: Type<DB> + Encode<'r, DB> + ColumnIndex<DB::Row>,
    usize: ColumnIndex<DB::Row>,
{
    async fn insert_event(
        &self,
        event: &ChannelEvent,
        kind: InboxKind,
        now_ms: i64,
    ) -> Result<Insert, StoreError> {
        let payload =
            serde_json::to_string(event).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let row = PendingInsert {
            channel: event.key().channel.as_str().to_owned(),
            event_id: event.event_id().to_owned(),
            key: event.key().to_string(),
            payload,
            now_ms,
            kind: kind.as_str(),
        };
        // On a webhook's path: bounded, so the platform gets a 5xx in time to retry.
        let id = self.timeouts.bounded(DB::insert_event(self, row)).await;
        self.writes.note(&id);
        Ok(id?.map_or(Insert::Duplicate, Insert::Stored))
    }

    async fn claim_next(
        &self,
        key: &ConversationKey,
        owner: &str,
        now_ms: i64,
        lease: Duration,
    ) -> Result<Option<InboxRow>, StoreError> {
        self.claim_leased(key, owner, now_ms, lease, 0).await
    }

    async fn claim_leased(
        &self,
        key: &ConversationKey,
        owner: &str,
        now_ms: i64,
        lease: Duration,
        epoch: i64,
    ) -> Result<Option<InboxRow>, StoreError> {
        let sql = claim_sql(DB::DIALECT.claim_lock);
        // `fetch_all`: the claim's commit must be known to have landed (see `mod.rs`).
        let row: Option<InboxRecord> = sqlx::query_as(&sql)
            .bind(owner)
            .bind(now_ms + lease.as_millis() as i64)
            .bind(now_ms)
            .bind(key.to_string())
            .bind(epoch)
            .fetch_all(&self.pool)
            .await?
            .pop();
        let row = row.map(InboxRow::try_from).transpose()?;
        Ok(row.map(|row| InboxRow { epoch, ..row }))
    }

    async fn claimable_conversations(
        &self,
        owner: &str,
        now_ms: i64,
    ) -> Result<Vec<ConversationKey>, StoreError> {
        let keys: Vec<String> = if DB::DIALECT.shared {
            sqlx::query_scalar(&claimable_leased_sql(DB::DIALECT.now_ms))
                .bind(owner)
                .fetch_all(&self.pool)
                .await?
        } else {
            sqlx::query_scalar(
                "SELECT DISTINCT conversation_key FROM inbox WHERE status = 'pending' \
                 OR (status = 'processing' AND (owner = $1 OR lease_until < $2))",
            )
            .bind(owner)
            .bind(now_ms)
            .fetch_all(&self.pool)
            .await?
        };
        keys.iter().map(|k| conversation_key(k)).collect()
    }

    async fn set_draft_refs(&self, claim: Claim, refs: &[MessageRef]) -> Result<(), StoreError> {
        let ids: Vec<&str> = refs.iter().map(|r| r.id.as_str()).collect();
        let sql = format!(
            "UPDATE inbox SET draft_refs = $1 WHERE id = $2 AND {}",
            held(2)
        );
        let done = sqlx::query(&sql)
            .bind(serde_json::to_string(&ids).unwrap_or_default())
            .bind(claim.id)
            .bind(claim.attempt)
            .bind(claim.epoch)
            .execute(&self.pool)
            .await?;
        self.fenced(claim, DB::rows_affected(&done)).await
    }

    async fn complete(
        &self,
        claim: Claim,
        key: &ConversationKey,
        messages: &[ChatMessage],
        spent: Option<Spent<'_>>,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        self.complete_turn(Completion {
            claim,
            key,
            messages,
            spent,
            now_ms,
        })
        .await
    }

    async fn fail(&self, claim: Claim, error: &str, now_ms: i64) -> Result<(), StoreError> {
        let sql = format!(
            "UPDATE inbox SET status = 'failed', error = $1, owner = NULL, lease_until = NULL, \
             updated_at = $2 WHERE id = $3 AND {}",
            held(3)
        );
        let done = sqlx::query(&sql)
            .bind(text::put::<DB>(error))
            .bind(now_ms)
            .bind(claim.id)
            .bind(claim.attempt)
            .bind(claim.epoch)
            .execute(&self.pool)
            .await?;
        self.fenced(claim, DB::rows_affected(&done)).await
    }

    async fn release(&self, claim: Claim, now_ms: i64) -> Result<(), StoreError> {
        let sql = format!(
            "UPDATE inbox SET status = 'pending', owner = NULL, lease_until = NULL, updated_at = $1 \
             WHERE id = $2 AND {}",
            held(2)
        );
        let done = sqlx::query(&sql)
            .bind(now_ms)
            .bind(claim.id)
            .bind(claim.attempt)
            .bind(claim.epoch)
            .execute(&self.pool)
            .await?;
        self.fenced(claim, DB::rows_affected(&done)).await
    }

    async fn history(
        &self,
        key: &ConversationKey,
        limit: usize,
    ) -> Result<Vec<ChatMessage>, StoreError> {
        self.load_history(key, limit).await
    }

    async fn replace_history(
        &self,
        key: &ConversationKey,
        messages: &[ChatMessage],
        now_ms: i64,
    ) -> Result<(), StoreError> {
        self.rewrite_history(key, messages, now_ms).await
    }

    async fn clear_history(&self, key: &ConversationKey) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM messages WHERE conversation_key = $1")
            .bind(key.to_string())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn knows_conversation(&self, key: &ConversationKey) -> Result<bool, StoreError> {
        self.conversation_exists(key).await
    }

    async fn oldest_pending(&self, key: &ConversationKey) -> Result<Option<i64>, StoreError> {
        let oldest: Option<i64> = sqlx::query_scalar(
            "SELECT MIN(created_at) FROM inbox WHERE conversation_key = $1 AND status = 'pending'",
        )
        .bind(key.to_string())
        .fetch_one(&self.pool)
        .await?;
        Ok(oldest)
    }

    async fn inbox_counts(&self) -> Result<InboxCounts, StoreError> {
        let rows: Vec<(String, i64)> =
            sqlx::query_as("SELECT status, COUNT(*) FROM inbox GROUP BY status")
                .fetch_all(&self.pool)
                .await?;
        let mut counts = InboxCounts::default();
        for (status, n) in rows {
            match status.as_str() {
                "pending" => counts.pending = n,
                "processing" => counts.processing = n,
                "done" => counts.done = n,
                _ => counts.failed += n,
            }
        }
        Ok(counts)
    }

    async fn conversations(&self, limit: usize) -> Result<Vec<ConversationSummary>, StoreError> {
        // A conversation whose first event still waits has no `conversations` row yet.
        let rows: Vec<(String, i64, i64, i64, Option<String>, Option<String>)> = sqlx::query_as(
            "WITH q AS (SELECT conversation_key AS key, COUNT(*) AS queued, \
               SUM(CASE WHEN status = 'processing' THEN 1 ELSE 0 END) AS running, \
               MAX(created_at) AS at FROM inbox WHERE status IN ('pending', 'processing') \
               GROUP BY conversation_key), \
             k AS (SELECT key, updated_at AS at FROM conversations UNION ALL SELECT key, at FROM q) \
             SELECT k.key, MAX(k.at) AS at, CAST(COALESCE(MAX(q.queued), 0) AS BIGINT), \
               CAST(COALESCE(MAX(q.running), 0) AS BIGINT), MAX(m.profile), MAX(m.model) \
             FROM k LEFT JOIN q ON q.key = k.key \
             LEFT JOIN conversation_models m ON m.conversation_key = k.key \
             GROUP BY k.key ORDER BY at DESC, k.key LIMIT $1",
        )
        .bind(limit as i64)
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter()
            .map(|(key, last_activity, queued, running, profile, model)| {
                Ok(ConversationSummary {
                    key: conversation_key(&key)?,
                    last_activity,
                    queued,
                    running: running > 0,
                    model: profile.zip(model),
                })
            })
            .collect()
    }

    async fn ping(&self) -> Result<(), StoreError> {
        let ping = sqlx::query("SELECT 1").execute(&self.front);
        self.timeouts.bounded(async { Ok(ping.await?) }).await?;
        if self.writes.refused().is_none() {
            return Ok(());
        }
        // Writes were refused: try one, so readiness comes back once the database takes
        // writes again even if no event arrives meanwhile (a load balancer that trusts
        // `/readyz` sends none while it is not ready).
        let probe = self.timeouts.bounded(DB::probe_write(self)).await;
        self.writes.note(&probe);
        match (probe, self.writes.refused()) {
            (Err(_), Some(why)) => Err(why),
            (Err(err), None) => Err(err),
            (Ok(()), _) => Ok(()),
        }
    }
}
