//! The SQL both backends share. The schemas are kept identical in shape (see
//! `migrations/*/0001_spine.sql`) so one macro can implement `Store` over either pool; the
//! only dialect difference, row locking while claiming, is passed in.

use switchboard_channel::{ChannelEvent, ConversationKey, MessageRef};

use super::{InboxRow, StoreError};
use crate::provider::{ChatMessage, Role, ToolCall};

/// Decode an inbox row's columns.
pub(super) fn inbox_row(
    id: i64,
    payload: &str,
    attempts: i64,
    draft_refs: Option<&str>,
) -> Result<InboxRow, StoreError> {
    let event: ChannelEvent = serde_json::from_str(payload)
        .map_err(|e| StoreError::Corrupt(format!("inbox {id}: {e}")))?;
    let draft_refs = match draft_refs {
        Some(json) => serde_json::from_str::<Vec<String>>(json)
            .map_err(|e| StoreError::Corrupt(format!("inbox {id} draft_refs: {e}")))?
            .into_iter()
            .map(MessageRef::new)
            .collect(),
        None => Vec::new(),
    };
    Ok(InboxRow {
        id,
        event,
        attempts,
        draft_refs,
    })
}

/// Decode a history row's columns.
pub(super) fn chat_message(
    role: &str,
    content: String,
    tool_calls: Option<&str>,
    tool_call_id: Option<String>,
) -> Result<ChatMessage, StoreError> {
    let role = Role::parse(role).ok_or_else(|| StoreError::Corrupt(format!("role {role:?}")))?;
    let tool_calls: Vec<ToolCall> = match tool_calls {
        Some(json) => serde_json::from_str(json).map_err(|e| StoreError::Corrupt(e.to_string()))?,
        None => Vec::new(),
    };
    Ok(ChatMessage {
        role,
        content,
        tool_calls,
        tool_call_id,
    })
}

/// Parse a stored conversation key.
pub(super) fn conversation_key(s: &str) -> Result<ConversationKey, StoreError> {
    s.parse()
        .map_err(|e: switchboard_channel::BadConversationKey| StoreError::Corrupt(e.to_string()))
}

/// Selects the oldest unfinished row of a conversation that `$1` (owner) may take at `$3`
/// (now), skipping the conversation while another live owner holds one of its rows.
pub(super) const CLAIMABLE_ROW: &str = "SELECT id FROM inbox \
     WHERE conversation_key = $4 \
       AND (status = 'pending' OR (status = 'processing' AND (owner = $1 OR lease_until < $3))) \
       AND ($5 = 0 OR kind = 'control') \
       AND NOT EXISTS (SELECT 1 FROM inbox busy WHERE busy.conversation_key = $4 \
           AND busy.status = 'processing' AND busy.owner <> $1 AND busy.lease_until >= $3) \
     ORDER BY id LIMIT 1";

/// Implements `Store` for `$store` (which has a `pool: sqlx::Pool<$db>`), with
/// `$lock` appended to the claim's row selection (`FOR UPDATE SKIP LOCKED` on PostgreSQL).
macro_rules! impl_store {
    ($store:ty, $db:ty, $lock:literal) => {
        #[async_trait::async_trait]
        impl $crate::store::Store for $store {
            async fn insert_event(
                &self,
                event: &switchboard_channel::ChannelEvent,
                kind: $crate::ids::InboxKind,
                now_ms: i64,
            ) -> Result<$crate::store::Insert, $crate::store::StoreError> {
                let payload = serde_json::to_string(event)
                    .map_err(|e| $crate::store::StoreError::Corrupt(e.to_string()))?;
                let id: Option<i64> = sqlx::query_scalar(
                    "INSERT INTO inbox (channel, event_id, conversation_key, payload, created_at, updated_at, kind) \
                     VALUES ($1, $2, $3, $4, $5, $5, $6) ON CONFLICT (channel, event_id) DO NOTHING RETURNING id",
                )
                .bind(&event.key().channel)
                .bind(event.event_id())
                .bind(event.key().to_string())
                .bind(payload)
                .bind(now_ms)
                .bind(kind.as_str())
                .fetch_optional(&self.pool)
                .await?;
                Ok(id.map_or($crate::store::Insert::Duplicate, $crate::store::Insert::Stored))
            }

            async fn claim_next(
                &self,
                key: &switchboard_channel::ConversationKey,
                owner: &str,
                now_ms: i64,
                lease: std::time::Duration,
                control_only: bool,
            ) -> Result<Option<$crate::store::InboxRow>, $crate::store::StoreError> {
                use sqlx::Row as _;
                let sql = format!(
                    "UPDATE inbox SET status = 'processing', owner = $1, lease_until = $2, \
                     attempts = attempts + 1, updated_at = $3 WHERE id = ({} {}) \
                     RETURNING id, payload, attempts, draft_refs",
                    $crate::store::shared::CLAIMABLE_ROW,
                    $lock
                );
                let row = sqlx::query(&sql)
                    .bind(owner)
                    .bind(now_ms + lease.as_millis() as i64)
                    .bind(now_ms)
                    .bind(key.to_string())
                    .bind(i64::from(control_only))
                    .fetch_optional(&self.pool)
                    .await?;
                row.map(|r| {
                    $crate::store::shared::inbox_row(
                        r.try_get("id")?,
                        r.try_get::<String, _>("payload")?.as_str(),
                        r.try_get::<i64, _>("attempts")?,
                        r.try_get::<Option<String>, _>("draft_refs")?.as_deref(),
                    )
                })
                .transpose()
            }

            async fn claimable_conversations(
                &self,
                owner: &str,
                now_ms: i64,
            ) -> Result<Vec<switchboard_channel::ConversationKey>, $crate::store::StoreError> {
                let keys: Vec<String> = sqlx::query_scalar(
                    "SELECT DISTINCT conversation_key FROM inbox WHERE status = 'pending' \
                     OR (status = 'processing' AND (owner = $1 OR lease_until < $2))",
                )
                .bind(owner)
                .bind(now_ms)
                .fetch_all(&self.pool)
                .await?;
                keys.iter().map(|k| $crate::store::shared::conversation_key(k)).collect()
            }

            async fn set_draft_refs(
                &self,
                inbox_id: i64,
                refs: &[switchboard_channel::MessageRef],
            ) -> Result<(), $crate::store::StoreError> {
                let ids: Vec<&str> = refs.iter().map(|r| r.id.as_str()).collect();
                sqlx::query("UPDATE inbox SET draft_refs = $1 WHERE id = $2")
                    .bind(serde_json::to_string(&ids).unwrap_or_default())
                    .bind(inbox_id)
                    .execute(&self.pool)
                    .await?;
                Ok(())
            }

            async fn complete(
                &self,
                inbox_id: i64,
                key: &switchboard_channel::ConversationKey,
                messages: &[$crate::provider::ChatMessage],
                now_ms: i64,
            ) -> Result<(), $crate::store::StoreError> {
                let key_text = key.to_string();
                let mut tx = self.pool.begin().await?;
                sqlx::query(
                    "INSERT INTO conversations (key, channel, created_at, updated_at) VALUES ($1, $2, $3, $3) \
                     ON CONFLICT (key) DO UPDATE SET updated_at = $3",
                )
                .bind(&key_text)
                .bind(&key.channel)
                .bind(now_ms)
                .execute(&mut *tx)
                .await?;
                insert_messages(&mut tx, &key_text, messages, Some(inbox_id), now_ms).await?;
                sqlx::query(
                    "UPDATE inbox SET status = 'done', owner = NULL, lease_until = NULL, updated_at = $1 WHERE id = $2",
                )
                .bind(now_ms)
                .bind(inbox_id)
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                Ok(())
            }

            async fn fail(&self, inbox_id: i64, error: &str, now_ms: i64) -> Result<(), $crate::store::StoreError> {
                sqlx::query(
                    "UPDATE inbox SET status = 'failed', error = $1, owner = NULL, lease_until = NULL, updated_at = $2 WHERE id = $3",
                )
                .bind(error)
                .bind(now_ms)
                .bind(inbox_id)
                .execute(&self.pool)
                .await?;
                Ok(())
            }

            async fn release(&self, inbox_id: i64, now_ms: i64) -> Result<(), $crate::store::StoreError> {
                sqlx::query(
                    "UPDATE inbox SET status = 'pending', owner = NULL, lease_until = NULL, updated_at = $1 \
                     WHERE id = $2 AND status = 'processing'",
                )
                .bind(now_ms)
                .bind(inbox_id)
                .execute(&self.pool)
                .await?;
                Ok(())
            }

            async fn history(
                &self,
                key: &switchboard_channel::ConversationKey,
                limit: usize,
            ) -> Result<Vec<$crate::provider::ChatMessage>, $crate::store::StoreError> {
                use sqlx::Row as _;
                let rows = sqlx::query(
                    "SELECT role, content, tool_calls, tool_call_id FROM messages \
                     WHERE conversation_key = $1 ORDER BY id DESC LIMIT $2",
                )
                .bind(key.to_string())
                .bind(limit as i64)
                .fetch_all(&self.pool)
                .await?;
                let mut messages = rows
                    .iter()
                    .rev()
                    .map(|r| {
                        $crate::store::shared::chat_message(
                            r.try_get::<String, _>("role")?.as_str(),
                            r.try_get("content")?,
                            r.try_get::<Option<String>, _>("tool_calls")?.as_deref(),
                            r.try_get("tool_call_id")?,
                        )
                    })
                    .collect::<Result<Vec<_>, $crate::store::StoreError>>()?;
                // A window must not open on tool results whose calls fell outside it.
                let orphans = messages
                    .iter()
                    .take_while(|m| m.role == $crate::provider::Role::Tool)
                    .count();
                messages.drain(..orphans);
                Ok(messages)
            }

            async fn replace_history(
                &self,
                key: &switchboard_channel::ConversationKey,
                messages: &[$crate::provider::ChatMessage],
                now_ms: i64,
            ) -> Result<(), $crate::store::StoreError> {
                let key_text = key.to_string();
                let inbox_id: Option<i64> = None;
                let mut tx = self.pool.begin().await?;
                sqlx::query("DELETE FROM messages WHERE conversation_key = $1")
                    .bind(&key_text)
                    .execute(&mut *tx)
                    .await?;
                insert_messages(&mut tx, &key_text, messages, inbox_id, now_ms).await?;
                tx.commit().await?;
                Ok(())
            }

            async fn clear_history(
                &self,
                key: &switchboard_channel::ConversationKey,
            ) -> Result<(), $crate::store::StoreError> {
                sqlx::query("DELETE FROM messages WHERE conversation_key = $1")
                    .bind(key.to_string())
                    .execute(&self.pool)
                    .await?;
                Ok(())
            }

            async fn inbox_counts(&self) -> Result<$crate::store::InboxCounts, $crate::store::StoreError> {
                let rows: Vec<(String, i64)> =
                    sqlx::query_as("SELECT status, COUNT(*) FROM inbox GROUP BY status")
                        .fetch_all(&self.pool)
                        .await?;
                let mut counts = $crate::store::InboxCounts::default();
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

            async fn ping(&self) -> Result<(), $crate::store::StoreError> {
                sqlx::query("SELECT 1").execute(&self.pool).await?;
                Ok(())
            }
        }

        /// Append `messages` to a conversation inside `tx`.
        async fn insert_messages(
            tx: &mut sqlx::Transaction<'_, $db>,
            key_text: &str,
            messages: &[$crate::provider::ChatMessage],
            inbox_id: Option<i64>,
            now_ms: i64,
        ) -> Result<(), $crate::store::StoreError> {
                for m in messages {
                    let calls = (!m.tool_calls.is_empty())
                        .then(|| serde_json::to_string(&m.tool_calls).unwrap_or_default());
                    sqlx::query(
                        "INSERT INTO messages (conversation_key, role, content, tool_calls, tool_call_id, inbox_id, created_at) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7)",
                    )
                    .bind(key_text)
                    .bind(m.role.as_str())
                    .bind(&m.content)
                    .bind(calls)
                    .bind(&m.tool_call_id)
                    .bind(inbox_id)
                    .bind(now_ms)
                    .execute(&mut **tx)
                    .await?;
                }
            Ok(())
        }
    };
}

pub(super) use impl_store;
