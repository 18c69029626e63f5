//! The memory half of the store: scoped facts with full-text search (SQLite FTS5, its
//! matches ranked here by BM25 within the scope; PostgreSQL tsvector + ts_rank; each recall
//! query is in its database's `Dialect`).
//! Queries are built from the words of free text only, so no user input reaches either
//! search syntax. Vectors for recall by meaning, and the bound on a scope's size, are in
//! `vectors.rs`.

mod vectors;

use async_trait::async_trait;
use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Type};

use super::StoreError;
use super::backend::{Backend, SqlStore};
use super::rows::{MemoryRecord, convert};

use super::text;
use crate::ids::MemoryScope;
pub use vectors::{Nearest, Unembedded, VectorCounts, nearest, to_blob};

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

/// The embedding model vectors come from: only vectors of the same model and length are
/// ever compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VectorModel {
    /// The model's name as configured.
    pub name: String,
    /// The length of its vectors.
    pub dims: usize,
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
    /// Make the database ready to store and search vectors of `model` (PostgreSQL: the
    /// `vector` extension and an index for the model's length); a database that cannot is
    /// an error naming what is missing.
    async fn prepare_vectors(&self, model: &VectorModel) -> Result<(), StoreError>;
    /// Up to `limit` memories with no vector of `model`, oldest first.
    async fn unembedded(
        &self,
        model: &VectorModel,
        limit: usize,
    ) -> Result<Vec<Unembedded>, StoreError>;
    /// Store `memory`'s vector of `model`, replacing one of another model; nothing is
    /// stored when the memory changed or went meanwhile. Whether it was stored.
    async fn save_vector(
        &self,
        memory: &Unembedded,
        model: &VectorModel,
        vector: &[f32],
    ) -> Result<bool, StoreError>;
    /// The `limit` memories of `scope` whose vectors of `model` are most similar to
    /// `query`, best first, each with its cosine similarity.
    async fn recall_by_vector(
        &self,
        scope: &MemoryScope,
        model: &VectorModel,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<(Memory, f32)>, StoreError>;
    /// How many memories there are, and how many have a vector of `model`.
    async fn vector_counts(&self, model: &VectorModel) -> Result<VectorCounts, StoreError>;
    /// Drop every vector (all memories are embedded again); how many were dropped.
    async fn drop_vectors(&self) -> Result<u64, StoreError>;
    /// Stamp `keys` of `scope` as recalled at `now_ms` (eviction keeps those recalled
    /// lately).
    async fn stamp_recalled(
        &self,
        scope: &MemoryScope,
        keys: &[String],
        now_ms: i64,
    ) -> Result<(), StoreError>;
    /// Forget `scope`'s memories beyond `keep`, the least recently recalled first (never
    /// recalled counts as oldest), the oldest among equals; the keys forgotten.
    async fn evict_beyond(
        &self,
        scope: &MemoryScope,
        keep: usize,
    ) -> Result<Vec<String>, StoreError>;
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

    async fn prepare_vectors(&self, model: &VectorModel) -> Result<(), StoreError> {
        DB::prepare_vectors(self, model).await
    }

    async fn unembedded(
        &self,
        model: &VectorModel,
        limit: usize,
    ) -> Result<Vec<Unembedded>, StoreError> {
        SqlStore::unembedded(self, model, limit).await
    }

    async fn save_vector(
        &self,
        memory: &Unembedded,
        model: &VectorModel,
        vector: &[f32],
    ) -> Result<bool, StoreError> {
        if vector.len() != model.dims {
            return Err(StoreError::Corrupt(format!(
                "a vector of {} values for a model of {}",
                vector.len(),
                model.dims
            )));
        }
        DB::save_vector(self, memory, model, vector).await
    }

    async fn recall_by_vector(
        &self,
        scope: &MemoryScope,
        model: &VectorModel,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<(Memory, f32)>, StoreError> {
        if query.len() != model.dims {
            return Ok(Vec::new());
        }
        let ranked = DB::nearest_vectors(self, &scope.to_string(), model, query, limit).await?;
        let ids: Vec<i64> = ranked.iter().map(|(id, _)| *id).collect();
        let similarity: std::collections::HashMap<_, _> = ranked.into_iter().collect();
        let found = self.memories_by_id(&ids).await?;
        Ok(found
            .into_iter()
            .map(|(id, m)| (m, similarity.get(&id).copied().unwrap_or_default()))
            .collect())
    }

    async fn vector_counts(&self, model: &VectorModel) -> Result<VectorCounts, StoreError> {
        SqlStore::vector_counts(self, model).await
    }

    async fn drop_vectors(&self) -> Result<u64, StoreError> {
        SqlStore::drop_vectors(self).await
    }

    async fn stamp_recalled(
        &self,
        scope: &MemoryScope,
        keys: &[String],
        now_ms: i64,
    ) -> Result<(), StoreError> {
        SqlStore::stamp_recalled(self, scope, keys, now_ms).await
    }

    async fn evict_beyond(
        &self,
        scope: &MemoryScope,
        keep: usize,
    ) -> Result<Vec<String>, StoreError> {
        SqlStore::evict_beyond(self, scope, keep).await
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
