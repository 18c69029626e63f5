//! PostgreSQL's vectors: `real[]` beside the memories (no extension needed to migrate),
//! searched with pgvector. With `[memory.embeddings]` set, start-up creates the `vector`
//! extension and an HNSW index over `vector::vector(<dims>)` for the configured length; a
//! server without pgvector stops start-up with an error that names it. Queries use the
//! index's own expression, and an iterative index scan, so a scope's matches are found
//! however small the scope is beside the others.

use sqlx::{Postgres, Row};

use crate::store::StoreError;
use crate::store::backend::SqlStore;
use crate::store::memory::{Unembedded, VectorModel};

impl SqlStore<Postgres> {
    pub(super) async fn prepare_pgvector(&self, model: &VectorModel) -> Result<(), StoreError> {
        let created = sqlx::query("CREATE EXTENSION IF NOT EXISTS vector")
            .execute(&self.pool)
            .await;
        if let Err(err) = created {
            return Err(StoreError::Unavailable(format!(
                "[memory.embeddings] needs the PostgreSQL extension `vector` (pgvector), \
                 which this server could not create: {err}; install pgvector on the server \
                 (or run CREATE EXTENSION vector as a superuser)"
            )));
        }
        let dims = model.dims;
        // The length is an integer from the config, never text from outside.
        sqlx::query(&format!(
            "CREATE INDEX IF NOT EXISTS memory_vectors_hnsw_{dims} ON memory_vectors \
             USING hnsw ((vector::vector({dims})) vector_cosine_ops) WHERE dims = {dims}"
        ))
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub(super) async fn save_array(
        &self,
        memory: &Unembedded,
        model: &VectorModel,
        vector: &[f32],
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "INSERT INTO memory_vectors (memory_id, scope, model, dims, vector) \
             SELECT id, scope, $2, $3, $4 FROM memories WHERE id = $1 AND content = $5 \
             ON CONFLICT (memory_id) DO UPDATE SET model = excluded.model, dims = excluded.dims, vector = excluded.vector",
        )
        .bind(memory.id)
        .bind(model.name.as_str())
        .bind(model.dims as i32)
        .bind(vector)
        .bind(memory.stored.as_str())
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() > 0)
    }

    pub(super) async fn nearest_pgvector(
        &self,
        scope: &str,
        model: &VectorModel,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<(i64, f32)>, StoreError> {
        let dims = model.dims;
        let mut tx = self.pool.begin().await?;
        // The index yields the nearest of every scope, and the scope's own are filtered out
        // of those: pgvector 0.8's iterative scan goes on until enough are found; before it,
        // the widest candidate list has to do. (Whichever this server has; the savepoint
        // keeps the transaction usable when the setting is unknown.)
        sqlx::query("SAVEPOINT nearest").execute(&mut *tx).await?;
        let iterative = sqlx::query("SET LOCAL hnsw.iterative_scan = relaxed_order")
            .execute(&mut *tx)
            .await;
        if iterative.is_err() {
            sqlx::query("ROLLBACK TO SAVEPOINT nearest")
                .execute(&mut *tx)
                .await?;
            sqlx::query("SET LOCAL hnsw.ef_search = 1000")
                .execute(&mut *tx)
                .await?;
        }
        let rows = sqlx::query(&format!(
            "SELECT memory_id, (1 - (vector::vector({dims}) <=> $3::real[]::vector({dims})))::real AS similarity \
             FROM memory_vectors WHERE scope = $1 AND model = $2 AND dims = {dims} \
             ORDER BY vector::vector({dims}) <=> $3::real[]::vector({dims}) LIMIT $4"
        ))
        .bind(scope)
        .bind(model.name.as_str())
        .bind(query)
        .bind(limit as i64)
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        let mut found: Vec<(i64, f32)> = rows
            .iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect::<Result<_, sqlx::Error>>()?;
        // relaxed_order may return a few slightly out of order.
        found.sort_by(|a, b| b.1.total_cmp(&a.1));
        Ok(found)
    }
}
