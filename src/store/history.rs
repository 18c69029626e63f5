//! Conversation history on [`SqlStore`]: the windowed read and the two atomic writes (a
//! finished turn, a compaction). Called from the `Store` implementation in `inbox.rs`.

use futures::TryStreamExt;
use futures::future::BoxFuture;
use sqlx::pool::PoolConnection;
use sqlx::query::Query;
use sqlx::{
    ColumnIndex, Database, Decode, Either, Encode, Executor, IntoArguments, Row, Transaction, Type,
};
use switchboard_channel::ConversationKey;

use super::backend::{Backend, SqlStore};
use super::cluster::{done_sql, held};
use super::rows::{MessageRecord, convert};
use super::text;
use super::usage::spent_sql;
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
    /// its budgets, in one transaction that stores nothing when the claim was superseded.
    pub(super) async fn complete_turn(
        &self,
        claim: Claim,
        key: &ConversationKey,
        messages: &[ChatMessage],
        spent: Option<Spent<'_>>,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let more = if DB::DIALECT.multi_statement && messages.len() <= ROWS_PER_INSERT {
            // A trait object: PostgreSQL never comes here, but this future's drop code would
            // be kept for it all the same inside this function's own (2.9 kB, issue #19).
            let one_call: BoxFuture<'_, Result<Option<bool>, StoreError>> =
                Box::pin(self.complete_in_one_call(claim, key, messages, spent, now_ms));
            one_call.await?
        } else {
            let mut tx = self.begin_write().await?;
            let more =
                Self::complete_in_steps(&mut tx, claim, key, messages, spent, now_ms).await?;
            match more {
                Some(_) => tx.commit().await?,
                None => tx.rollback().await?,
            }
            more
        };
        match more {
            Some(more) => Ok(more),
            None => Err(self.refusal(claim).await),
        }
    }

    /// [`Self::complete_turn`] as one query holding the whole transaction, `BEGIN` to
    /// `COMMIT` ([`completion_sql`]): SQLite runs it in one call to the connection's thread,
    /// so the write lock is held only while SQLite works. With `BEGIN` and `COMMIT` as calls
    /// of their own it was also held across two hand-offs, each waiting for a worker of a
    /// loaded runtime while every other writer waited on the lock (BENCHMARKS.md, "Round
    /// two, twentieth pass"). Whether other events of the conversation are unfinished, or
    /// `None`, with nothing written, when the claim no longer held.
    async fn complete_in_one_call(
        &self,
        claim: Claim,
        key: &ConversationKey,
        messages: &[ChatMessage],
        spent: Option<Spent<'_>>,
        now_ms: i64,
    ) -> Result<Option<bool>, StoreError> {
        let key_text = key.to_string();
        let spent = spent.filter(|s| !s.scopes.is_empty());
        let scopes = spent.map_or(0, |s| s.scopes.len());
        let sql = completion_sql(DB::DIALECT.begin_write, messages.len(), scopes);
        let query = sqlx::query(&sql)
            .persistent(messages.len() <= 8)
            .bind(now_ms)
            .bind(claim.id)
            .bind(claim.attempt)
            .bind(claim.epoch)
            .bind(key_text.as_str())
            .bind(key.channel.as_str());
        let query = match spent {
            Some(spent) => Self::bind_spent(query, spent),
            None => query,
        };
        let query = Self::bind_messages(query, messages);
        let mut conn = ClosedUnlessReturned(Some(self.pool.acquire().await?));
        // Every write but the fence's is guarded by the fence's condition, which they do not
        // change, so all land or none: the `conversations` upsert returns its row exactly
        // when the claim held.
        let mut more = None;
        let mut results = conn.get().fetch_many(query);
        while let Some(result) = results.try_next().await? {
            if let Either::Right(row) = result {
                more = Some(row.try_get::<i64, _>(0)? > 0);
            }
        }
        drop(results);
        conn.give_back();
        Ok(more)
    }

    /// [`Self::complete_turn`]'s writes one statement at a time (PostgreSQL takes one per
    /// query): whether other events of the conversation are unfinished, or `None`, with
    /// nothing written, when the fence refused the claim.
    async fn complete_in_steps(
        tx: &mut Transaction<'_, DB>,
        claim: Claim,
        key: &ConversationKey,
        messages: &[ChatMessage],
        spent: Option<Spent<'_>>,
        now_ms: i64,
    ) -> Result<Option<bool>, StoreError> {
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
    fn bind_messages<'q>(
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

/// A finished turn's transaction as one query of several statements: `begin`, the
/// `conversations` row (key `$5`, channel `$6`), the budget usage when it counts against
/// `scopes` scopes (from `$7`), the `messages` rows, each written only while the claim
/// (`$2`–`$4`) holds, then the fence marking it done at `$1` ([`done_sql`]), and `COMMIT`.
fn completion_sql(begin: &str, messages: usize, scopes: usize) -> String {
    let guard = held(2);
    let mut sql = format!("{begin}; {}", conversation_sql(5, 6, 1, 2, Some(&guard)));
    let mut next = 7;
    if scopes > 0 {
        sql = format!("{sql}; {}", spent_sql(next, scopes, Some(&guard)));
        next += 3 + scopes;
    }
    if messages > 0 {
        sql = format!(
            "{sql}; {}",
            messages_sql([5, 2, 1], next, messages, Some(&guard))
        );
    }
    format!("{sql}; {}; COMMIT", done_sql())
}

/// A pooled connection that is closed rather than returned to the pool unless
/// [`Self::give_back`] is called: a query holding its own `BEGIN` that ended early (an
/// error, or its future dropped mid-call) may have left its transaction open, and closing
/// the connection is what rolls it back.
struct ClosedUnlessReturned<DB: Database>(Option<PoolConnection<DB>>);

impl<DB: Database> ClosedUnlessReturned<DB> {
    fn get(&mut self) -> &mut DB::Connection {
        self.0.as_mut().expect("held until given back")
    }

    /// The query ran to its end: the connection goes back to the pool.
    fn give_back(mut self) {
        drop(self.0.take());
    }
}

impl<DB: Database> Drop for ClosedUnlessReturned<DB> {
    fn drop(&mut self) {
        if let Some(conn) = self.0.take() {
            drop(conn.detach());
        }
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
fn conversation_sql(
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
fn messages_sql(shared: [usize; 3], first: usize, rows: usize, guard: Option<&str>) -> String {
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
