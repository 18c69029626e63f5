//! The budget half of the store: LLM tokens, tool runs and characters spoken per scope (a conversation, or a
//! user on one channel) per UTC calendar day, added to after each turn and read before the
//! next. The limits themselves live in `crate::budget`.

use async_trait::async_trait;
use sqlx::query::Query;
use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Type};

use super::StoreError;
use super::backend::{Backend, SqlStore};
use super::history::insert_rows;

/// What one scope used on one day.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Used {
    /// LLM tokens (input and output).
    pub tokens: i64,
    /// Tool calls run (or refused) on the model's request.
    pub tool_runs: i64,
    /// Characters of answers spoken as voice notes (`[voice]`); counted, never limited.
    pub spoken_chars: i64,
}

/// A turn's usage, to be added to each of `scopes` for `day` (days since the epoch, UTC).
#[derive(Debug, Clone, Copy)]
pub struct Spent<'a> {
    /// The scopes it counts against (distinct, as PostgreSQL's upsert needs).
    pub scopes: &'a [String],
    /// The day it counts on.
    pub day: i64,
    /// How much.
    pub used: Used,
}

/// What one scope used on one day, as the dashboard's chart reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeDay {
    /// `conversation:<key>` or `user:<channel>:<user id>`.
    pub scope: String,
    /// Days since the epoch, UTC.
    pub day: i64,
    /// How much.
    pub used: Used,
}

/// Where budget usage is counted.
#[async_trait]
pub trait UsageStore: Send + Sync {
    /// Add `used` to each of `scopes` for `day` (days since the epoch, UTC), atomically.
    async fn add_usage(&self, scopes: &[String], day: i64, used: Used) -> Result<(), StoreError>;

    /// What `scope` used on `day` (zero when nothing was recorded).
    async fn usage(&self, scope: &str, day: i64) -> Result<Used, StoreError>;

    /// Every scope's usage on `first_day` and after, oldest day first.
    async fn usage_since(&self, first_day: i64) -> Result<Vec<ScopeDay>, StoreError>;
}

#[async_trait]
impl<DB> UsageStore for SqlStore<DB>
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
    async fn add_usage(&self, scopes: &[String], day: i64, used: Used) -> Result<(), StoreError> {
        let spent = Spent { scopes, day, used };
        let mut conn = self.pool.acquire().await?;
        Self::add_spent(&mut conn, spent).await
    }

    async fn usage(&self, scope: &str, day: i64) -> Result<Used, StoreError> {
        let row: Option<(i64, i64, i64)> = sqlx::query_as(
            "SELECT tokens, tool_runs, spoken_chars FROM budget_usage WHERE scope = $1 AND day = $2",
        )
        .bind(scope)
        .bind(day)
        .fetch_optional(&self.pool)
        .await?;
        Ok(
            row.map_or_else(Used::default, |(tokens, tool_runs, spoken_chars)| Used {
                tokens,
                tool_runs,
                spoken_chars,
            }),
        )
    }

    async fn usage_since(&self, first_day: i64) -> Result<Vec<ScopeDay>, StoreError> {
        let rows: Vec<(String, i64, i64, i64, i64)> = sqlx::query_as(
            "SELECT scope, day, tokens, tool_runs, spoken_chars FROM budget_usage \
             WHERE day >= $1 ORDER BY day, scope",
        )
        .bind(first_day)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|(scope, day, tokens, tool_runs, spoken_chars)| ScopeDay {
                scope,
                day,
                used: Used {
                    tokens,
                    tool_runs,
                    spoken_chars,
                },
            })
            .collect())
    }
}

impl<DB> SqlStore<DB>
where
    DB: Backend,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'r> i64: Type<DB> + Encode<'r, DB> + Decode<'r, DB>,
    for<'r> &'r str: Type<DB> + Encode<'r, DB>,
{
    /// Add `spent` to its scopes over `conn` (a pooled connection, or a turn's completion
    /// transaction), in one statement, so atomic without a transaction of its own.
    pub(super) async fn add_spent(
        conn: &mut DB::Connection,
        spent: Spent<'_>,
    ) -> Result<(), StoreError> {
        if spent.scopes.is_empty() {
            return Ok(());
        }
        let sql = spent_sql(1, spent.scopes.len(), None);
        Self::bind_spent(sqlx::query(&sql), spent)
            .execute(conn)
            .await?;
        Ok(())
    }

    /// Bind the parameters of [`spent_sql`] for `spent`, in their order.
    pub(super) fn bind_spent<'q>(
        query: Query<'q, DB, DB::Arguments<'q>>,
        spent: Spent<'q>,
    ) -> Query<'q, DB, DB::Arguments<'q>> {
        let mut query = query
            .bind(spent.day)
            .bind(spent.used.tokens)
            .bind(spent.used.tool_runs)
            .bind(spent.used.spoken_chars);
        for scope in spent.scopes {
            query = query.bind(scope.as_str());
        }
        query
    }
}

/// Parameters of [`spent_sql`] before its scopes.
pub(super) const SPENT_PARAMS: usize = 4;

/// The upsert adding a turn's usage to `scopes` scopes (at least one): a row per scope, the
/// day and the amounts shared, written only while `guard` holds when there is one. Its
/// parameters start at `$first`: the day, the tokens, the tool runs, the characters spoken,
/// then the scopes ([`SqlStore::bind_spent`]; [`SPENT_PARAMS`] before the scopes).
pub(super) fn spent_sql(first: usize, scopes: usize, guard: Option<&str>) -> String {
    let (tokens, runs, spoken) = (first + 1, first + 2, first + 3);
    let rows: Vec<String> = (0..scopes)
        .map(|i| {
            let scope = first + SPENT_PARAMS + i;
            format!("(${scope}, ${first}, ${tokens}, ${runs}, ${spoken})")
        })
        .collect();
    format!(
        "INSERT INTO budget_usage (scope, day, tokens, tool_runs, spoken_chars) {} \
         ON CONFLICT (scope, day) DO UPDATE SET tokens = budget_usage.tokens + excluded.tokens, \
         tool_runs = budget_usage.tool_runs + excluded.tool_runs, \
         spoken_chars = budget_usage.spoken_chars + excluded.spoken_chars",
        insert_rows(&rows.join(", "), guard)
    )
}
