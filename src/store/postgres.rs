//! The scale-out backend: several gateway replicas share one PostgreSQL database. This file
//! holds everything PostgreSQL-specific: connecting and its [`Dialect`] (claims lock rows
//! with `FOR UPDATE SKIP LOCKED` so two replicas never take the same event; recall uses
//! tsvector + ts_rank).

use sqlx::Postgres;
use sqlx::postgres::{PgPoolOptions, PgQueryResult};

use super::StoreError;
use super::backend::{Backend, Dialect, SqlStore};
use super::memory::websearch_query;

/// `Store` over PostgreSQL.
pub type PostgresStore = SqlStore<Postgres>;

impl Backend for Postgres {
    const DIALECT: Dialect = Dialect {
        claim_lock: "FOR UPDATE SKIP LOCKED",
        recall_sql: "SELECT scope, key, content, category, updated_at FROM memories, websearch_to_tsquery('english', $1) q \
             WHERE scope = $2 AND search @@ q ORDER BY ts_rank(search, q) DESC, id DESC LIMIT $3",
        search_query: websearch_query,
        flush_journal: "",
    };

    fn rows_affected(result: &PgQueryResult) -> u64 {
        result.rows_affected()
    }
}

impl SqlStore<Postgres> {
    /// Connect and migrate.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let pool = PgPoolOptions::new()
            .max_connections(10)
            .connect(url)
            .await?;
        sqlx::migrate!("migrations/postgres").run(&pool).await?;
        Ok(Self::new(pool))
    }
}
