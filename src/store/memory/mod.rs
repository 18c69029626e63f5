//! The memory half of the store: scoped facts with full-text search (SQLite FTS5, its
//! matches ranked here by BM25 within the scope; PostgreSQL tsvector + ts_rank; each recall
//! query is in its database's `Dialect`).
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
pub trait MemoryStore: Send + Sync {
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

/// An FTS5 query matching any of the words (each quoted, so none is an operator) in the
/// key or content of `scope`'s memories. The scope is named by its token in the index
/// (`migrations/sqlite/0016_memory_recall_by_scope.sql`): its UTF-8 as hex, one word the
/// tokenizer keeps whole.
pub fn fts5_query(scope: &str, text: &str) -> Option<String> {
    let words = search_words(text);
    (!words.is_empty()).then(|| {
        let words = words
            .iter()
            .map(|w| format!("\"{w}\""))
            .collect::<Vec<_>>()
            .join(" OR ");
        let token: String = scope.bytes().map(|b| format!("{b:02x}")).collect();
        format!("scope_token : {token} AND {{key content}} : ({words})")
    })
}

/// A `websearch_to_tsquery` input matching any of the words (the query names the scope
/// in SQL).
pub fn websearch_query(_scope: &str, text: &str) -> Option<String> {
    let words = search_words(text);
    (!words.is_empty()).then(|| words.join(" or "))
}

/// BM25 (k1 = 1.2, b = 0.75, as SQLite's FTS5 uses) of `found`, the matches of `query`
/// within one scope, oldest first: the best `limit`, best first, the newest first among
/// equals. A word's weight comes from how many of these matches hold it (the form that
/// never goes negative), so ranking reads nothing beyond the scope.
fn rank(query: &str, found: Vec<Memory>, limit: usize) -> Vec<Memory> {
    const K1: f64 = 1.2;
    const B: f64 = 0.75;
    let mut words = search_words(query);
    words.sort_unstable();
    words.dedup();
    // Each match's length in words, and how often it holds each query word.
    let counts: Vec<(usize, Vec<usize>)> = found
        .iter()
        .map(|m| {
            let mut tf = vec![0; words.len()];
            let mut length = 0;
            for token in tokens(&m.key).chain(tokens(&m.content)) {
                length += 1;
                if let Ok(i) = words.binary_search(&token) {
                    tf[i] += 1;
                }
            }
            (length, tf)
        })
        .collect();
    let docs = counts.len() as f64;
    let average = counts.iter().map(|(l, _)| *l as f64).sum::<f64>() / docs.max(1.0);
    let weights: Vec<f64> = (0..words.len())
        .map(|i| {
            let holding = counts.iter().filter(|(_, tf)| tf[i] > 0).count() as f64;
            (1.0 + (docs - holding + 0.5) / (holding + 0.5)).ln()
        })
        .collect();
    let mut scored: Vec<(f64, Memory)> = counts
        .iter()
        .zip(found)
        .map(|((length, tf), memory)| {
            let norm = K1 * (1.0 - B + B * *length as f64 / average.max(1.0));
            let score = tf
                .iter()
                .zip(&weights)
                .map(|(&f, w)| w * f as f64 * (K1 + 1.0) / (f as f64 + norm))
                .sum::<f64>();
            (score, memory)
        })
        .collect();
    scored.reverse();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.truncate(limit);
    scored.into_iter().map(|(_, m)| m).collect()
}

/// The words of stored text as [`search_words`] cuts a query: letters and digits,
/// lowercased.
fn tokens(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
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
        if only_new {
            return DB::autosave(self, m).await;
        }
        self.remember_one(m, only_new).await
    }

    async fn recall(
        &self,
        scope: &MemoryScope,
        query: &str,
        limit: usize,
    ) -> Result<Vec<Memory>, StoreError> {
        let dialect = DB::DIALECT;
        let scope = scope.to_string();
        let Some(words) = (dialect.search_query)(&scope, query) else {
            return Ok(Vec::new());
        };
        let bound = if dialect.recall_ranked {
            limit as i64
        } else {
            -1
        };
        let rows: Vec<MemoryRecord> = sqlx::query_as(dialect.recall_sql)
            .bind(words)
            .bind(scope)
            .bind(bound)
            .fetch_all(&self.pool)
            .await?;
        let found = convert(rows)?;
        Ok(if dialect.recall_ranked {
            found
        } else {
            rank(query, found, limit)
        })
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
    /// One memory in its own statement (`only_new`: an existing key is left as it is).
    pub(super) async fn remember_one(
        &self,
        m: &Memory,
        only_new: bool,
    ) -> Result<bool, StoreError> {
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
}

#[cfg(test)]
mod tests;
