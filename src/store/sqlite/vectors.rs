//! SQLite's vectors: little-endian `f32` blobs beside the memories, searched here. A recall
//! reads its scope's vectors of the configured model by index and keeps the most similar
//! (`memory::nearest`); no extension to load or keep in step with SQLite's own version.
//! What that costs as a scope grows is measured in BENCHMARKS.md ("Recall by meaning").

use futures::TryStreamExt;
use sqlx::{Row, Sqlite};

use crate::store::StoreError;
use crate::store::backend::SqlStore;
use crate::store::memory::{Nearest, Unembedded, VectorModel, to_blob};

/// A vector, replacing one of another model, while the memory still holds `$5`.
const SAVE: &str = "INSERT INTO memory_vectors (memory_id, scope, model, dims, vector) \
     SELECT id, scope, $2, $3, $4 FROM memories WHERE id = $1 AND content = $5 \
     ON CONFLICT (memory_id) DO UPDATE SET model = excluded.model, dims = excluded.dims, vector = excluded.vector";

impl SqlStore<Sqlite> {
    pub(super) async fn save_blob(
        &self,
        memory: &Unembedded,
        model: &VectorModel,
        vector: &[f32],
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(SAVE)
            .bind(memory.id)
            .bind(model.name.as_str())
            .bind(model.dims as i64)
            .bind(to_blob(vector))
            .bind(memory.stored.as_str())
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    pub(super) async fn nearest_blobs(
        &self,
        scope: &str,
        model: &VectorModel,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<(i64, f32)>, StoreError> {
        let mut rows = sqlx::query(
            "SELECT memory_id, vector FROM memory_vectors WHERE scope = $1 AND model = $2 AND dims = $3",
        )
        .bind(scope)
        .bind(model.name.as_str())
        .bind(model.dims as i64)
        .fetch(&self.pool);
        let mut best = Nearest::new(query, limit);
        while let Some(row) = rows.try_next().await? {
            let id: i64 = row.try_get(0)?;
            let blob: &[u8] = row.try_get(1)?;
            best.offer(id, blob);
        }
        Ok(best.finish())
    }
}
