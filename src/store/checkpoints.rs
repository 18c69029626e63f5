//! The checkpoint half of the store: one row per workspace checkpoint (`/rewind`), with its
//! manifest, and the history cut a rewind makes. The file contents themselves live under
//! `data_dir/checkpoints` (see `crate::checkpoint`).
//!
//! Numbering: checkpoint N is the workspace after N changing calls of the conversation. A
//! rewind to N keeps N's row *reopened* (its following call is gone from the history, its
//! `call_id` empty): the next checkpoint replaces it under the same number, so numbers stay
//! meaningful after a rewind and after the oldest rows were dropped.

use async_trait::async_trait;
use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Type};
use switchboard_channel::ConversationKey;

use super::StoreError;
use super::backend::{Backend, SqlStore};
use super::text;
use crate::provider::ToolCall;

/// A checkpoint to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewCheckpoint {
    /// When it was taken (Unix ms).
    pub created_at: i64,
    /// The tool about to run.
    pub tool: String,
    /// A short, scrubbed view of its arguments.
    pub summary: String,
    /// The call's id (the history is cut before the assistant message that made it).
    pub call_id: String,
    /// The newest stored message id when it was taken (0: none).
    pub after_message: i64,
    /// The manifest, as JSON.
    pub manifest: String,
}

/// A stored checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// Its number in the conversation.
    pub number: i64,
    /// What was recorded.
    pub new: NewCheckpoint,
}

impl Checkpoint {
    /// Whether it was rewound to: its call is no longer in the history, and the next
    /// checkpoint takes its place.
    pub fn reopened(&self) -> bool {
        self.new.call_id.is_empty()
    }
}

/// Where checkpoints are kept.
#[async_trait]
pub trait CheckpointStore: Send + Sync {
    /// The newest stored message id of `key` (0 when it has none).
    async fn history_position(&self, key: &ConversationKey) -> Result<i64, StoreError>;

    /// Record a checkpoint (replacing a reopened one); returns its number.
    async fn add_checkpoint(
        &self,
        key: &ConversationKey,
        new: &NewCheckpoint,
    ) -> Result<i64, StoreError>;

    /// Every checkpoint of `key`, oldest first.
    async fn checkpoints(&self, key: &ConversationKey) -> Result<Vec<Checkpoint>, StoreError>;

    /// Drop the checkpoints `numbers` of `key`.
    async fn drop_checkpoints(
        &self,
        key: &ConversationKey,
        numbers: &[i64],
    ) -> Result<(), StoreError>;

    /// After the workspace was restored to checkpoint `number`: cut the history before the
    /// assistant message that made its call, drop the later checkpoints and reopen this one,
    /// in one transaction. Returns how many messages were removed, `None` when the call's
    /// message is not in the history (compacted away, or its turn never finished).
    async fn rewind_to(
        &self,
        key: &ConversationKey,
        checkpoint: &Checkpoint,
    ) -> Result<Option<u64>, StoreError>;
}

#[async_trait]
impl<DB> CheckpointStore for SqlStore<DB>
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
    async fn history_position(&self, key: &ConversationKey) -> Result<i64, StoreError> {
        let newest: Option<i64> =
            sqlx::query_scalar("SELECT MAX(id) FROM messages WHERE conversation_key = $1")
                .bind(key.to_string())
                .fetch_one(&self.pool)
                .await?;
        Ok(newest.unwrap_or(0))
    }

    async fn add_checkpoint(
        &self,
        key: &ConversationKey,
        new: &NewCheckpoint,
    ) -> Result<i64, StoreError> {
        let key_text = key.to_string();
        let mut tx = self.begin_write().await?;
        // A checkpoint left open by a call that never ran is reopened under its number.
        let reopened: Option<i64> = sqlx::query_scalar(
            "DELETE FROM checkpoints WHERE conversation_key = $1 AND call_id = '' RETURNING number",
        )
        .bind(key_text.as_str())
        .fetch_all(&mut *tx)
        .await?
        .into_iter()
        .max();
        let newest: Option<i64> =
            sqlx::query_scalar("SELECT MAX(number) FROM checkpoints WHERE conversation_key = $1")
                .bind(key_text.as_str())
                .fetch_one(&mut *tx)
                .await?;
        let number = reopened.or(newest.map(|n| n + 1)).unwrap_or(0);
        sqlx::query(
            "INSERT INTO checkpoints (conversation_key, number, created_at, tool, summary, call_id, after_message, manifest) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(key_text.as_str())
        .bind(number)
        .bind(new.created_at)
        .bind(text::put::<DB>(&new.tool))
        .bind(text::put::<DB>(&new.summary))
        .bind(text::put::<DB>(&new.call_id))
        .bind(new.after_message)
        .bind(new.manifest.as_str())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(number)
    }

    async fn checkpoints(&self, key: &ConversationKey) -> Result<Vec<Checkpoint>, StoreError> {
        type Row = (i64, i64, String, String, String, i64, String);
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT number, created_at, tool, summary, call_id, after_message, manifest \
             FROM checkpoints WHERE conversation_key = $1 ORDER BY number",
        )
        .bind(key.to_string())
        .fetch_all(&self.pool)
        .await?;
        let rows = rows.into_iter().map(|r| Checkpoint {
            number: r.0,
            new: NewCheckpoint {
                created_at: r.1,
                tool: text::decode(r.2),
                summary: text::decode(r.3),
                call_id: text::decode(r.4),
                after_message: r.5,
                manifest: r.6,
            },
        });
        Ok(rows.collect())
    }

    async fn drop_checkpoints(
        &self,
        key: &ConversationKey,
        numbers: &[i64],
    ) -> Result<(), StoreError> {
        let mut tx = self.begin_write().await?;
        for number in numbers {
            sqlx::query("DELETE FROM checkpoints WHERE conversation_key = $1 AND number = $2")
                .bind(key.to_string())
                .bind(*number)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn rewind_to(
        &self,
        key: &ConversationKey,
        checkpoint: &Checkpoint,
    ) -> Result<Option<u64>, StoreError> {
        let key_text = key.to_string();
        let mut tx = self.begin_write().await?;
        let candidates: Vec<(i64, Option<String>)> = sqlx::query_as(
            "SELECT id, tool_calls FROM messages WHERE conversation_key = $1 AND id > $2 \
             AND role = 'assistant' AND tool_calls IS NOT NULL ORDER BY id",
        )
        .bind(key_text.as_str())
        .bind(checkpoint.new.after_message)
        .fetch_all(&mut *tx)
        .await?;
        let made_the_call = |calls: &Option<String>| {
            let calls: Vec<ToolCall> = calls
                .as_deref()
                .and_then(|json| serde_json::from_str(json).ok())
                .unwrap_or_default();
            calls.iter().any(|c| c.id == checkpoint.new.call_id)
        };
        let cut = candidates.iter().find(|(_, calls)| made_the_call(calls));
        let mut removed = None;
        if let Some((id, _)) = cut {
            let done = sqlx::query("DELETE FROM messages WHERE conversation_key = $1 AND id >= $2")
                .bind(key_text.as_str())
                .bind(*id)
                .execute(&mut *tx)
                .await?;
            removed = Some(DB::rows_affected(&done));
        }
        sqlx::query("DELETE FROM checkpoints WHERE conversation_key = $1 AND number > $2")
            .bind(key_text.as_str())
            .bind(checkpoint.number)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "UPDATE checkpoints SET call_id = '', tool = '', summary = '' \
             WHERE conversation_key = $1 AND number = $2",
        )
        .bind(key_text.as_str())
        .bind(checkpoint.number)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(removed)
    }
}
