//! The memory half of the store: scoped facts with full-text search (SQLite FTS5 + BM25,
//! PostgreSQL tsvector + ts_rank; each recall query is in its database's `Dialect`).
//! Queries are built from the words of free text only, so no user input reaches either
//! search syntax.

use async_trait::async_trait;
use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Type};

use super::StoreError;
use super::backend::{Backend, SqlStore};
use super::rows::{MemoryRecord, convert};
use super::text;
use crate::ids::MemoryScope;

/// One remembered fact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Memory {
    /// Whose memory it is (stored as `conv:<key>` or `user:<channel>:<user id>`).
    pub scope: MemoryScope,
    /// Name the model gave it, or `auto:<hash>`.
    pub key: String,
    /// The fact.
    pub content: String,
    /// `core` or `conversation`.
    pub category: String,
    /// Last change, Unix ms.
    pub updated_at: i64,
}

/// Memory persistence.
#[async_trait]
pub trait MemoryStore {
    /// Insert or replace the memory `key` in `scope`. With `only_new`, an existing key is
    /// left as it is (autosave of an exact duplicate). Returns whether anything was written.
    async fn remember(&self, memory: &Memory, only_new: bool) -> Result<bool, StoreError>;
    /// The best `limit` matches for `query` within `scope`, best first.
    async fn recall(
        &self,
        scope: &MemoryScope,
        query: &str,
        limit: usize,
    ) -> Result<Vec<Memory>, StoreError>;
    /// Remove `key` from `scope`; whether it existed.
    async fn forget(&self, scope: &MemoryScope, key: &str) -> Result<bool, StoreError>;
    /// Remove everything in `scope`; how many were removed.
    async fn forget_scope(&self, scope: &MemoryScope) -> Result<u64, StoreError>;
    /// The newest `limit` memories, optionally of one scope.
    async fn memories(
        &self,
        scope: Option<&MemoryScope>,
        limit: usize,
    ) -> Result<Vec<Memory>, StoreError>;
}

/// The search words of `text`: letters and digits only, lowercased, at most 16, each at
/// least 2 characters long.
pub fn search_words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 2)
        .map(str::to_lowercase)
        .collect();
    words.dedup();
    words.truncate(16);
    words
}

/// An FTS5 query matching any of the words (each quoted, so none is an operator).
pub fn fts5_query(text: &str) -> Option<String> {
    let words = search_words(text);
    (!words.is_empty()).then(|| {
        words
            .iter()
            .map(|w| format!("\"{w}\""))
            .collect::<Vec<_>>()
            .join(" OR ")
    })
}

/// A `websearch_to_tsquery` input matching any of the words.
pub fn websearch_query(text: &str) -> Option<String> {
    let words = search_words(text);
    (!words.is_empty()).then(|| words.join(" or "))
}

#[async_trait]
impl<DB> MemoryStore for SqlStore<DB>
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
    async fn remember(&self, m: &Memory, only_new: bool) -> Result<bool, StoreError> {
        let sql = if only_new {
            "INSERT INTO memories (scope, key, content, category, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5) \
             ON CONFLICT (scope, key) DO NOTHING"
        } else {
            "INSERT INTO memories (scope, key, content, category, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5) \
             ON CONFLICT (scope, key) DO UPDATE SET content = excluded.content, category = excluded.category, updated_at = excluded.updated_at"
        };
        let done = sqlx::query(sql)
            .bind(m.scope.to_string())
            .bind(text::put::<DB>(&m.key))
            .bind(text::put::<DB>(&m.content))
            .bind(m.category.as_str())
            .bind(m.updated_at)
            .execute(&self.pool)
            .await?;
        Ok(DB::rows_affected(&done) > 0)
    }

    async fn recall(
        &self,
        scope: &MemoryScope,
        query: &str,
        limit: usize,
    ) -> Result<Vec<Memory>, StoreError> {
        let dialect = DB::DIALECT;
        let Some(words) = (dialect.search_query)(query) else {
            return Ok(Vec::new());
        };
        let rows: Vec<MemoryRecord> = sqlx::query_as(dialect.recall_sql)
            .bind(words)
            .bind(scope.to_string())
            .bind(limit as i64)
            .fetch_all(&self.pool)
            .await?;
        convert(rows)
    }

    async fn forget(&self, scope: &MemoryScope, key: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM memories WHERE scope = $1 AND key = $2")
            .bind(scope.to_string())
            .bind(text::put::<DB>(key))
            .execute(&self.pool)
            .await?;
        Ok(DB::rows_affected(&done) > 0)
    }

    async fn forget_scope(&self, scope: &MemoryScope) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM memories WHERE scope = $1")
            .bind(scope.to_string())
            .execute(&self.pool)
            .await?;
        Ok(DB::rows_affected(&done))
    }

    async fn memories(
        &self,
        scope: Option<&MemoryScope>,
        limit: usize,
    ) -> Result<Vec<Memory>, StoreError> {
        let rows: Vec<MemoryRecord> = sqlx::query_as(
            "SELECT scope, key, content, category, updated_at FROM memories \
             WHERE ($1 IS NULL OR scope = $1) ORDER BY updated_at DESC, id DESC LIMIT $2",
        )
        .bind(scope.map(ToString::to_string))
        .bind(limit as i64)
        .fetch_all(&self.pool)
        .await?;
        convert(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_keep_only_words_so_search_syntax_cannot_be_injected() {
        assert_eq!(
            fts5_query(r#"my dog's "name" NEAR(x) -- OR *"#).unwrap(),
            r#""my" OR "dog" OR "name" OR "near" OR "or""#
        );
        assert_eq!(
            websearch_query("Where do I live?").unwrap(),
            "where or do or live"
        );
        assert!(fts5_query("?! a").is_none());
    }
}
