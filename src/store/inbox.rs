//! `Store` for [`SqlStore`] on either database: the durable inbox (insert, claim under a
//! lease, complete, fail, release, counts). History reads and writes live in `history.rs`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Pool, Row, Type};
use switchboard_channel::{ChannelEvent, ConversationKey, MessageRef};

use super::backend::{Backend, SqlStore};
use super::cluster::{INBOX_CHANNEL, held};
use super::grouped::{Outcome, PendingInsert, Queued, Turn};
use super::rows::{InboxRecord, conversation_key};
use super::text;
use super::{Claim, InboxCounts, InboxRow, Insert, Store, StoreError};
use crate::ids::InboxKind;
use crate::provider::ChatMessage;

/// The rows (by index) split into waves of at most one row per conversation, in queue
/// order: a conversation's second row goes in the next wave.
fn waves(rows: &[Arc<PendingInsert>]) -> Vec<Vec<usize>> {
    let mut waves: Vec<Vec<usize>> = Vec::new();
    let mut next: HashMap<&str, usize> = HashMap::new();
    for (i, row) in rows.iter().enumerate() {
        let wave = next.entry(row.key.as_str()).or_insert(0);
        if *wave == waves.len() {
            waves.push(Vec::new());
        }
        waves[*wave].push(i);
        *wave += 1;
    }
    waves
}

/// Selects the next unfinished row of a conversation (by its sequence number) that `$1`
/// (owner) may take at `$3` (now), skipping the conversation while another live owner holds
/// one of its rows. Under a conversation lease (`$6` > 0, checked in the same statement) the
/// lease decides instead: its holder takes over rows an earlier holder left processing.
const CLAIMABLE_ROW: &str = "SELECT id FROM inbox \
     WHERE conversation_key = $4 \
       AND (status = 'pending' OR (status = 'processing' AND (owner = $1 OR lease_until < $3 OR $6 > 0))) \
       AND ($5 = 0 OR kind = 'control') \
       AND ($6 > 0 OR NOT EXISTS (SELECT 1 FROM inbox busy WHERE busy.conversation_key = $4 \
           AND busy.status = 'processing' AND busy.owner <> $1 AND busy.lease_until >= $3)) \
       AND ($6 = 0 OR EXISTS (SELECT 1 FROM conversation_leases l WHERE l.key = $4 \
           AND l.owner = $1 AND l.epoch = $6)) \
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

    /// Store an event with the next sequence number of its conversation and announce it to
    /// other replicas, in one transaction: the sequence row stays locked until commit, so
    /// numbers follow commit order. A redelivery rolls back (no number is used up). Where one
    /// process owns the database, [`Self::insert_grouped`] instead.
    async fn insert_sequenced(
        &self,
        event: &ChannelEvent,
        kind: InboxKind,
        payload: String,
        now_ms: i64,
    ) -> Result<Option<i64>, StoreError> {
        let key = event.key().to_string();
        if !DB::DIALECT.shared {
            let row = PendingInsert {
                channel: event.key().channel.as_str().to_owned(),
                event_id: event.event_id().to_owned(),
                key,
                payload,
                now_ms,
                kind: kind.as_str(),
            };
            return self.insert_grouped(row).await;
        }
        let mut tx = self.pool.begin().await?;
        let seq: i64 = sqlx::query_scalar(
            "INSERT INTO conversation_seq (key, last_seq) VALUES ($1, 1) \
             ON CONFLICT (key) DO UPDATE SET last_seq = conversation_seq.last_seq + 1 RETURNING last_seq",
        )
        .bind(key.as_str())
        .fetch_one(&mut *tx)
        .await?;
        let id: Option<i64> = sqlx::query_scalar(
            "INSERT INTO inbox (channel, event_id, conversation_key, payload, created_at, updated_at, kind, seq) \
             VALUES ($1, $2, $3, $4, $5, $5, $6, $7) ON CONFLICT (channel, event_id) DO NOTHING RETURNING id",
        )
        .bind(event.key().channel.as_str())
        .bind(event.event_id())
        .bind(key.as_str())
        .bind(payload)
        .bind(now_ms)
        .bind(kind.as_str())
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
        // actor for it on every replica, all racing for the same lease (in BENCHMARKS,
        // two replicas answered a third as many turns per second as one).
        let sql = format!(
            "SELECT pg_notify('{INBOX_CHANNEL}', $1) WHERE EXISTS (SELECT 1 FROM \
             conversation_leases WHERE key = $1 AND lease_until >= {})",
            DB::DIALECT.now_ms
        );
        sqlx::query(&sql)
            .bind(key.as_str())
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(id)
    }

    /// [`Self::insert_sequenced`] where one process owns the database (SQLite), grouped with
    /// the inserts that arrive while another group is being written (`grouped.rs`).
    async fn insert_grouped(&self, row: PendingInsert) -> Result<Option<i64>, StoreError> {
        let row = Arc::new(row);
        loop {
            let outcome = match self.inserts.enqueue(Arc::clone(&row)).await {
                Turn::Written(outcome) => outcome,
                Turn::Write { guard, outcome } => {
                    self.write_group(self.inserts.take()).await;
                    drop(guard);
                    outcome.await
                }
                Turn::Alone => return Self::insert_in_one_statement(&self.pool, &row).await,
            };
            // A dropped sender: the caller writing this row's group was cancelled before
            // it answered. Queue the row again; if that group did commit, it is a duplicate.
            if let Ok(outcome) = outcome {
                return outcome;
            }
        }
    }

    /// Store `group` and tell each caller its outcome. Rows of distinct conversations go in
    /// one statement (a "wave"); a conversation's next row goes in the next wave, so it is
    /// numbered after the one before. Each wave commits on its own: no transaction spans
    /// two hand-offs to the connection's thread, so the write lock is never held while this
    /// task waits for the runtime. A wave that fails is stored row by row, so each caller
    /// gets its own answer and one bad row refuses only its own event.
    async fn write_group(&self, group: Vec<Queued>) {
        let (rows, answers): (Vec<_>, Vec<_>) = group.into_iter().unzip();
        let mut answers: Vec<_> = answers.into_iter().map(Some).collect();
        let mut answer = |i: usize, outcome: Outcome| {
            if let Some(answer) = answers[i].take() {
                // A caller that stopped waiting needs no answer.
                let _ = answer.send(outcome);
            }
        };
        for wave in waves(&rows) {
            if wave.len() > 1 {
                match Self::insert_wave(&self.pool, &rows, &wave).await {
                    Ok(ids) => {
                        wave.iter().zip(ids).for_each(|(&i, id)| answer(i, Ok(id)));
                        continue;
                    }
                    Err(err) => tracing::debug!(
                        rows = wave.len(),
                        error = %err,
                        "grouped inbox insert failed; storing its rows one by one"
                    ),
                }
            }
            for i in wave {
                answer(i, Self::insert_in_one_statement(&self.pool, &rows[i]).await);
            }
        }
    }

    /// The rows `wave` of `rows`, all of distinct conversations, in one `INSERT`: each row's
    /// number comes from its own conversation's `conversation_seq` row, which no other row
    /// of the statement touches, so the order SQLite evaluates them in does not matter.
    /// Returns each row's id in `wave` order (`None` for a redelivery).
    async fn insert_wave(
        pool: &Pool<DB>,
        rows: &[Arc<PendingInsert>],
        wave: &[usize],
    ) -> Result<Vec<Option<i64>>, StoreError> {
        let values: Vec<String> = (0..wave.len())
            .map(|i| {
                let n = 6 * i;
                let (channel, event, key) = (n + 1, n + 2, n + 3);
                let (payload, at, kind) = (n + 4, n + 5, n + 6);
                format!(
                    "(${channel}, ${event}, ${key}, ${payload}, ${at}, ${at}, ${kind}, \
                     COALESCE((SELECT last_seq FROM conversation_seq WHERE key = ${key}), 0) + 1)"
                )
            })
            .collect();
        let sql = format!(
            "INSERT INTO inbox (channel, event_id, conversation_key, payload, created_at, updated_at, kind, seq) \
             VALUES {} ON CONFLICT (channel, event_id) DO NOTHING RETURNING id, channel, event_id",
            values.join(", ")
        );
        // As for history's multi-row inserts: only the small shapes stay prepared.
        let mut query = sqlx::query(&sql).persistent(wave.len() <= 8);
        for &i in wave {
            let row = &rows[i];
            query = query
                .bind(row.channel.as_str())
                .bind(row.event_id.as_str())
                .bind(row.key.as_str())
                .bind(row.payload.as_str())
                .bind(row.now_ms)
                .bind(row.kind);
        }
        let stored = query.fetch_all(pool).await?;
        let mut ids = vec![None; wave.len()];
        for r in &stored {
            let (id, channel, event_id): (i64, String, String) =
                (r.try_get(0)?, r.try_get(1)?, r.try_get(2)?);
            let at = wave
                .iter()
                .position(|&i| rows[i].channel == channel && rows[i].event_id == event_id);
            if let Some(at) = at {
                ids[at] = Some(id);
            }
        }
        Ok(ids)
    }

    /// One row in one statement: its number taken from `conversation_seq`, which a trigger
    /// (migration 0015) moves on. A transaction of three statements held SQLite's write lock
    /// across three hand-offs to the connection's thread while other writers slept in its
    /// busy handler (BENCHMARKS.md, "The inbox insert in one statement").
    async fn insert_in_one_statement<'e, E>(
        executor: E,
        row: &PendingInsert,
    ) -> Result<Option<i64>, StoreError>
    where
        E: Executor<'e, Database = DB>,
    {
        let id: Option<i64> = sqlx::query_scalar(
            "INSERT INTO inbox (channel, event_id, conversation_key, payload, created_at, updated_at, kind, seq) \
             VALUES ($1, $2, $3, $4, $5, $5, $6, \
               COALESCE((SELECT last_seq FROM conversation_seq WHERE key = $3), 0) + 1) \
             ON CONFLICT (channel, event_id) DO NOTHING RETURNING id",
        )
        .bind(row.channel.as_str())
        .bind(row.event_id.as_str())
        .bind(row.key.as_str())
        .bind(row.payload.as_str())
        .bind(row.now_ms)
        .bind(row.kind)
        .fetch_optional(executor)
        .await?;
        Ok(id)
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
        // On a webhook's path: bounded, so the platform gets a 5xx in time to retry.
        let insert = self.insert_sequenced(event, kind, payload, now_ms);
        let id = self.timeouts.bounded(insert).await?;
        Ok(id.map_or(Insert::Duplicate, Insert::Stored))
    }

    async fn claim_next(
        &self,
        key: &ConversationKey,
        owner: &str,
        now_ms: i64,
        lease: Duration,
        control_only: bool,
    ) -> Result<Option<InboxRow>, StoreError> {
        self.claim_leased(key, owner, now_ms, lease, control_only, 0)
            .await
    }

    async fn claim_leased(
        &self,
        key: &ConversationKey,
        owner: &str,
        now_ms: i64,
        lease: Duration,
        control_only: bool,
        epoch: i64,
    ) -> Result<Option<InboxRow>, StoreError> {
        let sql = claim_sql(DB::DIALECT.claim_lock);
        let row: Option<InboxRecord> = sqlx::query_as(&sql)
            .bind(owner)
            .bind(now_ms + lease.as_millis() as i64)
            .bind(now_ms)
            .bind(key.to_string())
            .bind(i64::from(control_only))
            .bind(epoch)
            .fetch_optional(&self.pool)
            .await?;
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
        now_ms: i64,
    ) -> Result<(), StoreError> {
        self.complete_turn(claim, key, messages, now_ms).await
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

    async fn ping(&self) -> Result<(), StoreError> {
        let ping = sqlx::query("SELECT 1").execute(&self.pool);
        self.timeouts.bounded(async { Ok(ping.await?) }).await?;
        Ok(())
    }

    fn open_connections(&self) -> u32 {
        self.pool.size()
    }
}

#[cfg(test)]
mod tests {
    use tokio::sync::oneshot;

    use super::*;
    use crate::store::SqliteStore;

    fn row(key: &str, event_id: &str) -> Arc<PendingInsert> {
        Arc::new(PendingInsert {
            channel: "slack".into(),
            event_id: event_id.into(),
            key: format!("slack:{key}"),
            payload: "{}".into(),
            now_ms: 1,
            kind: "message",
        })
    }

    /// Write `rows` as one group; each caller's outcome, in order.
    async fn write(store: &SqliteStore, rows: &[Arc<PendingInsert>]) -> Vec<Outcome> {
        let (group, answers): (Vec<Queued>, Vec<_>) = rows
            .iter()
            .map(|r| {
                let (tx, rx) = oneshot::channel();
                ((Arc::clone(r), tx), rx)
            })
            .unzip();
        store.write_group(group).await;
        let mut outcomes = Vec::new();
        for answer in answers {
            outcomes.push(answer.await.expect("every caller is answered"));
        }
        outcomes
    }

    async fn event_of(store: &SqliteStore, id: i64) -> String {
        sqlx::query_scalar("SELECT event_id FROM inbox WHERE id = $1")
            .bind(id)
            .fetch_one(&store.pool)
            .await
            .unwrap()
    }

    #[test]
    fn waves_hold_one_row_per_conversation_in_queue_order() {
        let rows = [row("A", "1"), row("B", "2"), row("A", "3"), row("A", "4")];
        assert_eq!(waves(&rows), vec![vec![0, 1], vec![2], vec![3]]);
    }

    #[tokio::test]
    async fn a_group_tells_each_caller_its_own_row_and_a_refused_row_fails_alone() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/group.db", dir.path().display());
        let store = SqliteStore::connect(&url).await.unwrap();

        // Distinct conversations: one statement; a redelivery inside it stores nothing.
        let first = [row("X", "x1"), row("Y", "y1"), row("Z", "z1")];
        let outcomes = write(&store, &first).await;
        for (row, outcome) in first.iter().zip(outcomes) {
            let id = outcome.unwrap().expect("stored");
            assert_eq!(event_of(&store, id).await, row.event_id);
        }
        let again = write(&store, &[row("W", "w1"), row("Y", "y1")]).await;
        assert!(matches!(again[0], Ok(Some(_))));
        assert!(matches!(again[1], Ok(None)), "a redelivery is no new row");

        // A refused row makes its statement fail; its wave is stored row by row.
        sqlx::query(
            "CREATE TRIGGER refuse_one BEFORE INSERT ON inbox WHEN NEW.event_id = 'bad' \
             BEGIN SELECT RAISE(ABORT, 'refused'); END",
        )
        .execute(&store.pool)
        .await
        .unwrap();
        let second = [
            row("A", "a1"),
            row("B", "bad"),
            row("A", "a2"),
            row("C", "c1"),
        ];
        let outcomes = write(&store, &second).await;
        assert!(outcomes[1].is_err(), "the refused row fails");
        for i in [0, 2, 3] {
            let id = outcomes[i].as_ref().unwrap().expect("stored");
            assert_eq!(event_of(&store, id).await, second[i].event_id);
        }
        // A's second row is numbered after its first.
        let seq_of = |event_id: &'static str| {
            sqlx::query_scalar::<_, i64>("SELECT seq FROM inbox WHERE event_id = $1")
                .bind(event_id)
                .fetch_one(&store.pool)
        };
        assert_eq!(
            (seq_of("a1").await.unwrap(), seq_of("a2").await.unwrap()),
            (1, 2)
        );
    }
}
