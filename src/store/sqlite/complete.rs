//! SQLite's way of completing a turn: the whole transaction, `BEGIN IMMEDIATE` to `COMMIT`,
//! as one query of several statements, which SQLite runs in one call to the connection's
//! thread. The write lock is then held only while SQLite works; with `BEGIN` and `COMMIT` as
//! calls of their own it was also held across two hand-offs to that thread, each waiting for
//! a worker of a loaded runtime while every other writer waited on the lock. PostgreSQL's
//! extended protocol takes one statement per query, so it completes in steps
//! ([`SqlStore::complete_in_steps`]), as SQLite does for a turn too long for one query.

use futures::TryStreamExt;
use sqlx::pool::PoolConnection;
use sqlx::{Either, Executor, Row, Sqlite};

use crate::store::StoreError;
use crate::store::backend::{Backend, Completion, SqlStore};
use crate::store::cluster::{done_sql, held};
use crate::store::history::{conversation_sql, messages_sql};
use crate::store::usage::{SPENT_PARAMS, spent_sql};

impl SqlStore<Sqlite> {
    /// The turn's writes as one query ([`completion_sql`]): whether other events of the
    /// conversation are unfinished, or `None`, with nothing written, when the claim no longer
    /// held.
    pub(super) async fn complete_in_one_call(
        &self,
        turn: Completion<'_>,
    ) -> Result<Option<bool>, StoreError> {
        let Completion {
            claim,
            key,
            messages,
            spent,
            now_ms,
        } = turn;
        let key_text = key.to_string();
        let spent = spent.filter(|s| !s.scopes.is_empty());
        let scopes = spent.map_or(0, |s| s.scopes.len());
        let sql = completion_sql(Sqlite::DIALECT.begin_write, messages.len(), scopes);
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
        next += SPENT_PARAMS + scopes;
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
struct ClosedUnlessReturned(Option<PoolConnection<Sqlite>>);

impl ClosedUnlessReturned {
    fn get(&mut self) -> &mut sqlx::SqliteConnection {
        self.0.as_mut().expect("held until given back")
    }

    /// The query ran to its end: the connection goes back to the pool.
    fn give_back(mut self) {
        drop(self.0.take());
    }
}

impl Drop for ClosedUnlessReturned {
    fn drop(&mut self) {
        if let Some(conn) = self.0.take() {
            drop(conn.detach());
        }
    }
}
