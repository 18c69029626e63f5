//! The memory half of the store: scoped facts with full-text search (SQLite FTS5, its
//! matches ranked here by BM25 within the scope; PostgreSQL tsvector + ts_rank; each recall
//! query is in its database's `Dialect`).
//! Queries are built from the words of free text only, so no user input reaches either
//! search syntax.

use std::sync::Arc;

use async_trait::async_trait;
use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Row, Type};

use super::StoreError;
use super::backend::{Backend, SqlStore};
use super::grouped::Queued;
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
        if only_new && !DB::DIALECT.shared {
            let write = |group| self.write_autosaves(group);
            let alone = move |m: Arc<Memory>| async move { self.remember_one(&m, true).await };
            return self.autosaves.submit(m.clone(), write, alone).await;
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

/// Autosaved memories of one group in one statement, bound as one JSON array of `[scope,
/// key, content, category, updated_at]` arrays; returns the `(scope, key)` of each row it
/// stored. SQLite only (where replicas share PostgreSQL nothing is grouped).
const AUTOSAVE_GROUP: &str = "INSERT INTO memories (scope, key, content, category, created_at, updated_at) \
     SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 4 \
     FROM json_each($1) WHERE true ON CONFLICT (scope, key) DO NOTHING RETURNING scope, key";

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
    async fn remember_one(&self, m: &Memory, only_new: bool) -> Result<bool, StoreError> {
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

    /// Store a group of autosaved memories and tell each caller whether its row was new.
    ///
    /// Every transaction that touches SQLite's full-text index writes a new segment of it,
    /// which later merges fold together: a memory saved in a transaction of its own cost
    /// three times one saved without the index, sixteen in one transaction a third of that
    /// each (BENCHMARKS.md, "Round two, twelfth pass"). So the autosaves of turns that end
    /// together are written together, as the inbox groups its inserts (`grouped.rs`). A
    /// group whose statement fails is written row by row, so each caller gets its own
    /// answer.
    async fn write_autosaves(&self, group: Vec<Queued<Memory, Result<bool, StoreError>>>) {
        let (rows, answers): (Vec<_>, Vec<_>) = group.into_iter().unzip();
        if rows.len() > 1 {
            match self.autosave_group(&rows).await {
                Ok(stored) => {
                    for (answer, stored) in answers.into_iter().zip(stored) {
                        // A caller that stopped waiting needs no answer.
                        let _ = answer.send(Ok(stored));
                    }
                    return;
                }
                Err(err) => tracing::debug!(
                    rows = rows.len(),
                    error = %err,
                    "grouped autosave failed; saving its memories one by one"
                ),
            }
        }
        for (answer, row) in answers.into_iter().zip(&rows) {
            let _ = answer.send(self.remember_one(row, true).await);
        }
    }

    /// `rows` in one statement ([`AUTOSAVE_GROUP`]): for each, whether it was stored (a
    /// key already there, or earlier in the group, is not).
    async fn autosave_group(&self, rows: &[Arc<Memory>]) -> Result<Vec<bool>, StoreError> {
        // Tuples serialize as JSON arrays.
        let values: Vec<_> = rows
            .iter()
            .map(|m| {
                let (key, content) = (text::put::<DB>(&m.key), text::put::<DB>(&m.content));
                (m.scope.to_string(), key, content, &m.category, m.updated_at)
            })
            .collect();
        let json =
            serde_json::to_string(&values).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let inserted = sqlx::query(AUTOSAVE_GROUP)
            .bind(json)
            .fetch_all(&self.pool)
            .await?;
        let mut stored = vec![false; rows.len()];
        for r in &inserted {
            let (scope, key): (String, String) = (r.try_get(0)?, r.try_get(1)?);
            // The first row of that scope and key not yet accounted for.
            let at = (values.iter().zip(&stored))
                .position(|((s, k, ..), done)| !done && *s == scope && *k == key);
            if let Some(at) = at {
                stored[at] = true;
            }
        }
        Ok(stored)
    }
}

#[cfg(test)]
mod tests;
