//! Memories' vectors (recall by meaning) and the bound on a scope's size: the queries both
//! databases share. What differs (how a vector is stored, how the nearest are found) is a
//! [`Backend`] operation: SQLite keeps little-endian `f32` blobs and ranks a scope's vectors
//! here ([`nearest`]); PostgreSQL keeps `real[]` and ranks with pgvector.

use std::collections::HashMap;

use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Row, Type};

use super::{Memory, StoreError, VectorModel};
use crate::ids::MemoryScope;
use crate::store::backend::{Backend, SqlStore};
use crate::store::rows::MemoryRecord;
use crate::store::text;

/// A memory with no vector of the configured model yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unembedded {
    /// Its row.
    pub id: i64,
    /// The text to embed.
    pub content: String,
    /// The text as stored: the vector is saved only while the memory still holds it, so a
    /// memory changed meanwhile keeps no vector of its old text.
    pub(in crate::store) stored: String,
}

/// How many memories there are, and how many have a vector of the configured model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VectorCounts {
    /// Every memory.
    pub memories: u64,
    /// Those with a vector of the model.
    pub embedded: u64,
}

impl VectorCounts {
    /// Memories waiting for their vector.
    pub fn pending(&self) -> u64 {
        self.memories.saturating_sub(self.embedded)
    }
}

/// The `limit` ids of `rows` whose vectors are most similar (cosine) to `query`, best
/// first, with their similarity; vectors of another length are skipped.
pub fn nearest(
    query: &[f32],
    rows: impl IntoIterator<Item = (i64, Vec<u8>)>,
    limit: usize,
) -> Vec<(i64, f32)> {
    let mut best = Nearest::new(query, limit);
    for (id, blob) in rows {
        best.offer(id, &blob);
    }
    best.finish()
}

/// The most similar vectors seen so far, fed one stored vector at a time so a scope's
/// vectors need not all be in memory at once.
pub struct Nearest<'q> {
    query: &'q [f32],
    query_norm: f32,
    limit: usize,
    best: Vec<(i64, f32)>,
}

impl<'q> Nearest<'q> {
    /// Nothing seen yet.
    pub fn new(query: &'q [f32], limit: usize) -> Self {
        let query_norm = query.iter().map(|v| v * v).sum::<f32>().sqrt();
        Self {
            query,
            query_norm,
            limit,
            best: Vec::with_capacity(limit + 1),
        }
    }

    /// Consider the vector `blob` (little-endian `f32`s) of memory `id`.
    pub fn offer(&mut self, id: i64, blob: &[u8]) {
        if blob.len() != self.query.len() * 4 || self.query_norm == 0.0 || self.limit == 0 {
            return;
        }
        let values = blob
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        let (mut dot, mut squares) = (0.0f32, 0.0f32);
        for (v, q) in values.zip(self.query) {
            dot += v * q;
            squares += v * v;
        }
        if squares == 0.0 {
            return;
        }
        let similarity = dot / (squares.sqrt() * self.query_norm);
        let full = self.best.len() == self.limit;
        if full && self.best.last().is_some_and(|(_, s)| *s >= similarity) {
            return;
        }
        let at = self.best.partition_point(|(_, s)| *s >= similarity);
        self.best.insert(at, (id, similarity));
        self.best.truncate(self.limit);
    }

    /// The best, best first.
    pub fn finish(self) -> Vec<(i64, f32)> {
        self.best
    }
}

/// A vector as SQLite stores it: little-endian `f32`s.
pub fn to_blob(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|v| v.to_le_bytes()).collect()
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
    /// Up to `limit` memories without a vector of `model`, oldest first.
    pub(in crate::store) async fn unembedded(
        &self,
        model: &VectorModel,
        limit: usize,
    ) -> Result<Vec<Unembedded>, StoreError> {
        let rows = sqlx::query(
            "SELECT m.id, m.content FROM memories m LEFT JOIN memory_vectors v \
             ON v.memory_id = m.id AND v.model = $1 AND v.dims = $2 \
             WHERE v.memory_id IS NULL ORDER BY m.id LIMIT $3",
        )
        .bind(model.name.as_str())
        .bind(model.dims as i64)
        .bind(limit as i64)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                let stored: String = r.try_get(1)?;
                Ok(Unembedded {
                    id: r.try_get(0)?,
                    content: text::decode(stored.clone()),
                    stored,
                })
            })
            .collect()
    }

    /// The memories `ids` names with their ids, in that order (those gone meanwhile left
    /// out).
    pub(in crate::store) async fn memories_by_id(
        &self,
        ids: &[i64],
    ) -> Result<Vec<(i64, Memory)>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let list = ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
        // The list is integers this process formatted, never text from outside.
        let rows = sqlx::query(&format!(
            "SELECT id, scope, key, content, category, updated_at FROM memories WHERE id IN ({list})"
        ))
        .fetch_all(&self.pool)
        .await?;
        let mut found = HashMap::new();
        for r in &rows {
            let id: i64 = r.try_get(0)?;
            let record = MemoryRecord::new(
                r.try_get(1)?,
                r.try_get(2)?,
                r.try_get(3)?,
                r.try_get(4)?,
                r.try_get(5)?,
            );
            found.insert(id, record);
        }
        ids.iter()
            .filter_map(|id| found.remove(id).map(|r| (*id, r)))
            .map(|(id, r)| Ok((id, Memory::try_from(r)?)))
            .collect()
    }

    /// Counts for `model` (every memory, and those embedded with it).
    pub(in crate::store) async fn vector_counts(
        &self,
        model: &VectorModel,
    ) -> Result<VectorCounts, StoreError> {
        let row = sqlx::query(
            "SELECT (SELECT COUNT(*) FROM memories), \
             (SELECT COUNT(*) FROM memory_vectors WHERE model = $1 AND dims = $2)",
        )
        .bind(model.name.as_str())
        .bind(model.dims as i64)
        .fetch_one(&self.pool)
        .await?;
        let (memories, embedded): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
        Ok(VectorCounts {
            memories: memories.max(0) as u64,
            embedded: embedded.max(0) as u64,
        })
    }

    /// Drop every vector: all memories become pending.
    pub(in crate::store) async fn drop_vectors(&self) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM memory_vectors")
            .execute(&self.pool)
            .await?;
        Ok(DB::rows_affected(&done))
    }

    /// Stamp `keys` of `scope` as recalled at `now_ms`.
    pub(in crate::store) async fn stamp_recalled(
        &self,
        scope: &MemoryScope,
        keys: &[String],
        now_ms: i64,
    ) -> Result<(), StoreError> {
        for key in keys {
            sqlx::query("UPDATE memories SET recalled_at = $1 WHERE scope = $2 AND key = $3")
                .bind(now_ms)
                .bind(scope.to_string())
                .bind(text::put::<DB>(key))
                .execute(&self.pool)
                .await?;
        }
        Ok(())
    }

    /// Forget `scope`'s memories beyond `keep`: the least recently recalled first (never
    /// recalled counts as oldest), the oldest among equals. Returns the keys forgotten.
    pub(in crate::store) async fn evict_beyond(
        &self,
        scope: &MemoryScope,
        keep: usize,
    ) -> Result<Vec<String>, StoreError> {
        let scope = scope.to_string();
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM memories WHERE scope = $1")
            .bind(scope.as_str())
            .fetch_one(&self.pool)
            .await?;
        let excess = count - keep as i64;
        if excess <= 0 {
            return Ok(Vec::new());
        }
        let rows = sqlx::query(
            "DELETE FROM memories WHERE id IN (SELECT id FROM memories WHERE scope = $1 \
             ORDER BY COALESCE(recalled_at, 0), updated_at, id LIMIT $2) RETURNING key",
        )
        .bind(scope.as_str())
        .bind(excess)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| Ok(text::decode(r.try_get(0)?)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_ranks_by_cosine_and_skips_vectors_of_another_length() {
        let rows = vec![
            (1, to_blob(&[1.0, 0.0])),
            (2, to_blob(&[0.0, 1.0])),
            (3, to_blob(&[2.0, 2.0])),
            (4, to_blob(&[1.0, 0.0, 0.0])),
            (5, to_blob(&[0.0, 0.0])),
        ];
        let found = nearest(&[1.0, 0.1], rows, 2);
        assert_eq!(found.iter().map(|f| f.0).collect::<Vec<_>>(), [1, 3]);
        assert!(found[0].1 > 0.99 && found[1].1 < found[0].1);
    }
}
