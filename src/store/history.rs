//! Conversation history on [`SqlStore`]: the windowed read and the two atomic writes (a
//! finished turn, a compaction). Called from the `Store` implementation in `inbox.rs`.

use sqlx::query::Query;
use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Transaction, Type};
use switchboard_channel::ConversationKey;

use super::StoreError;
use super::backend::{Backend, Completion, SqlStore};
use super::rows::{MessageRecord, convert};
use super::text;
use crate::provider::{ChatMessage, Role};

/// Messages written by one `INSERT` (four parameters each, well under SQLite's limit).
pub(super) const ROWS_PER_INSERT: usize = 64;

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
    /// its budgets, atomically, the way this database does it best
    /// ([`Backend::complete_turn`]); nothing is stored when the claim was superseded.
    pub(super) async fn complete_turn(&self, turn: Completion<'_>) -> Result<bool, StoreError> {
        let completed = DB::complete_turn(self, turn).await;
        self.writes.note(&completed);
        match completed? {
            Some(more) => Ok(more),
            None => Err(self.refusal(turn.claim).await),
        }
    }

    /// A finished turn's writes in one transaction, one statement at a time: whether other
    /// events of the conversation are unfinished, or `None`, with nothing written (rolled
    /// back), when the fence refused the claim.
    pub(super) async fn complete_in_steps(
        &self,
        turn: Completion<'_>,
    ) -> Result<Option<bool>, StoreError> {
        let mut tx = self.begin_write().await?;
        let more = Self::write_turn(&mut tx, turn).await?;
        match more {
            Some(_) => tx.commit().await?,
            None => tx.rollback().await?,
        }
        Ok(more)
    }

    /// [`Self::complete_in_steps`] inside `tx`.
    async fn write_turn(
        tx: &mut Transaction<'_, DB>,
        turn: Completion<'_>,
    ) -> Result<Option<bool>, StoreError> {
        let Completion {
            claim,
            key,
            messages,
            spent,
            now_ms,
        } = turn;
        // The fence: this claim, under the conversation lease it was made with.
        if !Self::mark_done_fenced(tx, claim, now_ms).await? {
            return Ok(None);
        }
        if let Some(spent) = spent {
            Self::add_spent(tx, spent).await?;
        }
        let key_text = key.to_string();
        let unfinished: i64 = sqlx::query_scalar(&conversation_sql(1, 2, 3, 4, None))
            .bind(key_text.as_str())
            .bind(key.channel.as_str())
            .bind(now_ms)
            .bind(claim.id)
            .fetch_one(&mut **tx)
            .await?;
        Self::insert_messages(tx, &key_text, messages, Some(claim.id), now_ms).await?;
        Ok(Some(unfinished > 0))
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
            let sql = messages_sql([1, 2, 3], 4, chunk.len(), None);
            // Common shapes (a few messages) stay prepared; a long tool turn's is not cached,
            // so it never pushes the hot statements out of the connection's cache.
            let query = sqlx::query(&sql)
                .persistent(chunk.len() <= 8)
                .bind(key_text)
                .bind(inbox_id)
                .bind(now_ms);
            Self::bind_messages(query, chunk).execute(&mut **tx).await?;
        }
        Ok(())
    }

    /// Bind the four parameters of each of `messages`' rows in [`messages_sql`], in order.
    pub(super) fn bind_messages<'q>(
        mut query: Query<'q, DB, DB::Arguments<'q>>,
        messages: &'q [ChatMessage],
    ) -> Query<'q, DB, DB::Arguments<'q>> {
        for m in messages {
            let calls = (!m.tool_calls.is_empty())
                .then(|| serde_json::to_string(&m.tool_calls).unwrap_or_default());
            query = query
                .bind(m.role.as_str())
                .bind(text::put::<DB>(&m.content))
                .bind(calls)
                .bind(text::put_opt::<DB>(m.tool_call_id.as_deref()));
        }
        query
    }
}

/// An `INSERT`'s rows: its `VALUES` list, or, under `guard` (an SQL condition), the same
/// rows selected only while it holds.
pub(super) fn insert_rows(values: &str, guard: Option<&str>) -> String {
    match guard {
        None => format!("VALUES {values}"),
        Some(guard) => format!("SELECT * FROM (VALUES {values}) WHERE {guard}"),
    }
}

/// Records that a conversation had a turn at `$time`: its row, created on its first.
/// Returns how many of its events other than inbox row `$inbox` are unfinished (through
/// the `inbox_unfinished` index), so the actor knows whether to claim again.
pub(super) fn conversation_sql(
    key: usize,
    channel: usize,
    time: usize,
    inbox: usize,
    guard: Option<&str>,
) -> String {
    let row = format!("(${key}, ${channel}, ${time}, ${time})");
    format!(
        "INSERT INTO conversations (key, channel, created_at, updated_at) {} \
         ON CONFLICT (key) DO UPDATE SET updated_at = ${time} \
         RETURNING (SELECT COUNT(*) FROM inbox WHERE conversation_key = ${key} \
           AND status IN ('pending', 'processing') AND id <> ${inbox})",
        insert_rows(&row, guard)
    )
}

/// Appends `rows` messages: the parameters of the key, the inbox id and the time are
/// `shared`; each row's role, content, tool calls and tool call id follow from `$first`, four
/// a row ([`SqlStore::bind_messages`]), written only while `guard` holds when there is one.
/// The rows of one `VALUES` list take their ids in list order (selected from it too), which
/// is the order history is read back in.
pub(super) fn messages_sql(
    shared: [usize; 3],
    first: usize,
    rows: usize,
    guard: Option<&str>,
) -> String {
    let [key, inbox, time] = shared;
    let values: Vec<String> = (0..rows)
        .map(|i| {
            let n = first + 4 * i;
            format!(
                "(${key}, ${n}, ${}, ${}, ${}, ${inbox}, ${time})",
                n + 1,
                n + 2,
                n + 3
            )
        })
        .collect();
    format!(
        "INSERT INTO messages (conversation_key, role, content, tool_calls, tool_call_id, inbox_id, created_at) {}",
        insert_rows(&values.join(", "), guard)
    )
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
