//! `MemoryStore` for both backends: writes and listing share SQL; only search differs
//! (FTS5 + BM25 on SQLite, tsvector + ts_rank on PostgreSQL).

use async_trait::async_trait;

use super::memory::{Memory, MemoryStore, fts5_query, websearch_query};
use super::{PostgresStore, SqliteStore, StoreError};
use crate::ids::MemoryScope;

fn memory_row<R: sqlx::Row>(r: &R) -> Result<Memory, StoreError>
where
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    for<'a> String: sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    for<'a> i64: sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    Ok(Memory {
        scope: r
            .try_get::<String, _>("scope")?
            .parse()
            .map_err(|e: crate::ids::ParseIdError| StoreError::Corrupt(e.to_string()))?,
        key: r.try_get("key")?,
        content: r.try_get("content")?,
        category: r.try_get("category")?,
        updated_at: r.try_get("updated_at")?,
    })
}

/// Implements [`MemoryStore`] for `$store`; `$search` is the recall SQL, binding the
/// `$query` rendering of the words, the scope and the limit, in that order.
macro_rules! impl_memory {
    ($store:ty, $query:path, $search:literal) => {
        #[async_trait]
        impl MemoryStore for $store {
            async fn recall(&self, scope: &MemoryScope, query: &str, limit: usize) -> Result<Vec<Memory>, StoreError> {
                let Some(words) = $query(query) else { return Ok(Vec::new()) };
                let rows = sqlx::query($search)
                    .bind(words)
                    .bind(scope.to_string())
                    .bind(limit as i64)
                    .fetch_all(&self.pool)
                    .await?;
                rows.iter().map(memory_row).collect()
            }

            async fn forget(&self, scope: &MemoryScope, key: &str) -> Result<bool, StoreError> {
                let done = sqlx::query("DELETE FROM memories WHERE scope = $1 AND key = $2")
                    .bind(scope.to_string())
                    .bind(key)
                    .execute(&self.pool)
                    .await?;
                Ok(done.rows_affected() > 0)
                    }

            async fn forget_scope(&self, scope: &MemoryScope) -> Result<u64, StoreError> {
                let done = sqlx::query("DELETE FROM memories WHERE scope = $1").bind(scope.to_string()).execute(&self.pool).await?;
                Ok(done.rows_affected())
                    }

            async fn memories(&self, scope: Option<&MemoryScope>, limit: usize) -> Result<Vec<Memory>, StoreError> {
                let rows = sqlx::query(
                    "SELECT scope, key, content, category, updated_at FROM memories \
                     WHERE ($1 IS NULL OR scope = $1) ORDER BY updated_at DESC, id DESC LIMIT $2",
                )
                .bind(scope.map(ToString::to_string))
                .bind(limit as i64)
                .fetch_all(&self.pool)
                .await?;
                rows.iter().map(memory_row).collect()
                    }

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
                    .bind(&m.key)
                    .bind(&m.content)
                    .bind(&m.category)
                    .bind(m.updated_at)
                    .execute(&self.pool)
                    .await?;
                Ok(done.rows_affected() > 0)
                    }
        }
    };
}

impl_memory!(
    SqliteStore,
    fts5_query,
    "SELECT m.scope, m.key, m.content, m.category, m.updated_at FROM memories_fts f \
     JOIN memories m ON m.id = f.rowid \
     WHERE memories_fts MATCH $1 AND m.scope = $2 ORDER BY bm25(memories_fts) LIMIT $3"
);

impl_memory!(
    PostgresStore,
    websearch_query,
    "SELECT scope, key, content, category, updated_at FROM memories, websearch_to_tsquery('english', $1) q \
     WHERE scope = $2 AND search @@ q ORDER BY ts_rank(search, q) DESC, id DESC LIMIT $3"
);
