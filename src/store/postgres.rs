//! The scale-out backend: several gateway replicas share one PostgreSQL database; claims
//! lock rows with `FOR UPDATE SKIP LOCKED` so two replicas never take the same event.

use sqlx::postgres::PgPoolOptions;

use super::StoreError;
use super::approvals::impl_approvals;
use super::audit::impl_audit;
use super::shared::impl_store;

/// `Store` over PostgreSQL.
pub struct PostgresStore {
    pub(super) pool: sqlx::PgPool,
}

impl PostgresStore {
    /// Connect and migrate.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let pool = PgPoolOptions::new()
            .max_connections(10)
            .connect(url)
            .await?;
        sqlx::migrate!("migrations/postgres").run(&pool).await?;
        Ok(Self { pool })
    }
}

impl_store!(PostgresStore, sqlx::Postgres, "FOR UPDATE SKIP LOCKED");
impl_audit!(PostgresStore);
impl_approvals!(PostgresStore, sqlx::postgres::PgRow);
