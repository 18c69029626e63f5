//! Conversation history on [`SqlStore`]: the windowed read and the two atomic writes (a
//! finished turn, a compaction). Called from the `Store` implementation in `inbox.rs`.

use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Transaction, Type};
use switchboard_channel::ConversationKey;

use super::backend::{Backend, SqlStore};
use super::rows::{MessageRecord, convert};
use super::text;
use super::{Claim, Spent, StoreError};
use crate::provider::{ChatMessage, Role};

/// Messages written by one `INSERT` (four parameters each, well under SQLite's limit).
const ROWS_PER_INSERT: usize = 64;

/// The last `limit` of `messages` (oldest first): the window a turn sees of its history. It
/// never opens on tool results whose calls fell outside it.
pub fn window(mut messages: Vec<ChatMessage>, limit: usize) -> Vec<ChatMessage> {
    messages.drain(..messages.len().saturating_sub(limit));
    let orphans = messages.iter().take_while(|m| m.role == Role::Tool).count();
    messages.drain(..orphans);
    messages
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
    /// The last `limit` messages, oldest first, never opening on orphaned tool results.
    pub(super) async fn load_history(
        &self,
        key: &ConversationKey,
        limit: usize,
    ) -> Result<Vec<ChatMessage>, StoreError> {
        let mut rows: Vec<MessageRecord> = sqlx::query_as(
            "SELECT role, content, tool_calls, tool_call_id FROM messages \
             WHERE conversation_key = $1 ORDER BY id DESC LIMIT $2",
        )
        .bind(key.to_string())
        .bind(limit as i64)
        .fetch_all(&self.pool)
        .await?;
        rows.reverse();
        Ok(window(convert(rows)?, limit))
    }

    /// Whether `key` has a finished turn (its `conversations` row stays through `/new`) or
    /// unfinished inbox rows; both lookups use an index (the primary key, `inbox_unfinished`).
    pub(super) async fn conversation_exists(
        &self,
        key: &ConversationKey,
    ) -> Result<bool, StoreError> {
        let found: i64 = sqlx::query_scalar(
            "SELECT (SELECT COUNT(*) FROM conversations WHERE key = $1) \
             + (SELECT COUNT(*) FROM inbox WHERE conversation_key = $1 \
                AND status IN ('pending', 'processing'))",
        )
        .bind(key.to_string())
        .fetch_one(&self.pool)
        .await?;
        Ok(found > 0)
    }

    /// Mark the claimed inbox row done, append its turn's messages and add what it spent to
    /// its budgets, in one transaction that stores nothing when the claim was superseded
    /// (the fence comes first).
    pub(super) async fn complete_turn(
        &self,
        claim: Claim,
        key: &ConversationKey,
        messages: &[ChatMessage],
        spent: Option<Spent<'_>>,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let key_text = key.to_string();
        let mut tx = self.begin_write().await?;
        // The fence: this claim, under the conversation lease it was made with.
        if !Self::mark_done_fenced(&mut tx, claim, now_ms).await? {
            tx.rollback().await?;
            return Err(self.refusal(claim).await);
        }
        if let Some(spent) = spent {
            Self::add_spent(&mut tx, spent).await?;
        }
        sqlx::query(
            "INSERT INTO conversations (key, channel, created_at, updated_at) VALUES ($1, $2, $3, $3) \
             ON CONFLICT (key) DO UPDATE SET updated_at = $3",
        )
        .bind(key_text.as_str())
        .bind(key.channel.as_str())
        .bind(now_ms)
        .execute(&mut *tx)
        .await?;
        Self::insert_messages(&mut tx, &key_text, messages, Some(claim.id), now_ms).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Replace the whole history (compaction), in one transaction.
    pub(super) async fn rewrite_history(
        &self,
        key: &ConversationKey,
        messages: &[ChatMessage],
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let key_text = key.to_string();
        let mut tx = self.begin_write().await?;
        sqlx::query("DELETE FROM messages WHERE conversation_key = $1")
            .bind(key_text.as_str())
            .execute(&mut *tx)
            .await?;
        Self::insert_messages(&mut tx, &key_text, messages, None, now_ms).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Append `messages` to a conversation inside `tx`: one statement per [`ROWS_PER_INSERT`]
    /// messages. The rows of one `VALUES` list take their ids in list order, which is the
    /// order history is read back in.
    async fn insert_messages(
        tx: &mut Transaction<'_, DB>,
        key_text: &str,
        messages: &[ChatMessage],
        inbox_id: Option<i64>,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        for chunk in messages.chunks(ROWS_PER_INSERT) {
            // $1–$3 are shared (key, inbox id, time); each row adds four.
            let rows: Vec<String> = (0..chunk.len())
                .map(|i| {
                    let n = 4 + 4 * i;
                    format!("($1, ${n}, ${}, ${}, ${}, $2, $3)", n + 1, n + 2, n + 3)
                })
                .collect();
            let sql = format!(
                "INSERT INTO messages (conversation_key, role, content, tool_calls, tool_call_id, inbox_id, created_at) \
                 VALUES {}",
                rows.join(", ")
            );
            // Common shapes (a few messages) stay prepared; a long tool turn's is not cached,
            // so it never pushes the hot statements out of the connection's cache.
            let mut query = sqlx::query(&sql)
                .persistent(chunk.len() <= 8)
                .bind(key_text)
                .bind(inbox_id)
                .bind(now_ms);
            for m in chunk {
                let calls = (!m.tool_calls.is_empty())
                    .then(|| serde_json::to_string(&m.tool_calls).unwrap_or_default());
                query = query
                    .bind(m.role.as_str())
                    .bind(text::put::<DB>(&m.content))
                    .bind(calls)
                    .bind(text::put_opt::<DB>(m.tool_call_id.as_deref()));
            }
            query.execute(&mut **tx).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(role: Role, text: &str) -> ChatMessage {
        ChatMessage::new(role, text.to_owned())
    }

    #[test]
    fn a_window_keeps_the_newest_and_never_opens_on_tool_results() {
        let all = vec![
            message(Role::User, "one"),
            message(Role::Assistant, "calls a tool"),
            message(Role::Tool, "result a"),
            message(Role::Tool, "result b"),
            message(Role::Assistant, "two"),
        ];
        let texts = |w: Vec<ChatMessage>| w.into_iter().map(|m| m.content).collect::<Vec<_>>();
        assert_eq!(texts(window(all.clone(), 10)).len(), 5);
        assert_eq!(
            texts(window(all.clone(), 4)),
            ["calls a tool", "result a", "result b", "two"]
        );
        // The two newest open on a result whose call fell outside: it goes too.
        assert_eq!(texts(window(all.clone(), 3)), ["two"]);
        assert!(window(all, 0).is_empty());
    }
}
