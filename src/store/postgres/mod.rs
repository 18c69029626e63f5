//! The scale-out backend: several gateway replicas share one PostgreSQL database. Everything
//! only PostgreSQL needs lives in this folder: connecting and its [`Dialect`] (claims lock
//! rows with `FOR UPDATE SKIP LOCKED` so two replicas never take the same event; recall uses
//! tsvector + ts_rank) here, the sequenced and announced inbox insert in `insert.rs`.

mod insert;
mod vectors;

use std::str::FromStr;

use sqlx::Postgres;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgQueryResult};

use super::backend::{Backend, Completion, Dialect, SqlStore};
use super::inbox::PendingInsert;
use super::memory::{Unembedded, VectorModel, websearch_query};
use super::timeouts::migrate_at_startup;
use super::{Memory, StoreError, Timeouts};

/// `Store` over PostgreSQL.
pub type PostgresStore = SqlStore<Postgres>;

/// Connections of the work pool (see [`SqlStore`]'s `front`): ten in all, as before the
/// request path had its own.
const WORK_CONNECTIONS: u32 = 8;

/// Connections of the request path's pool: two, so one slow insert does not hold up the
/// webhooks behind it.
const FRONT_CONNECTIONS: u32 = 2;

impl Backend for Postgres {
    const DIALECT: Dialect = Dialect {
        claim_lock: "FOR UPDATE SKIP LOCKED",
        recall_sql: "SELECT scope, key, content, category, updated_at FROM memories, websearch_to_tsquery('english', $1) q \
             WHERE scope = $2 AND search @@ q ORDER BY ts_rank(search, q) DESC, id DESC LIMIT $3",
        recall_ranked: true,
        search_query: websearch_query,
        escape_nul: true,
        now_ms: "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT",
        shared: true,
        // Row locks are taken by each statement; a read first is no hazard.
        begin_write: "BEGIN",
    };

    type Local = ();

    fn rows_affected(result: &PgQueryResult) -> u64 {
        result.rows_affected()
    }

    /// Numbered and announced to the replica holding the conversation (`insert.rs`).
    async fn insert_event(
        store: &SqlStore<Postgres>,
        row: PendingInsert,
    ) -> Result<Option<i64>, StoreError> {
        store.insert_sequenced(row).await
    }

    /// One statement per query: the extended protocol takes no more.
    async fn complete_turn(
        store: &SqlStore<Postgres>,
        turn: Completion<'_>,
    ) -> Result<Option<bool>, StoreError> {
        store.complete_in_steps(turn).await
    }

    /// Each on its own: the full-text index has no per-transaction segments to save on, and
    /// replicas share the table.
    async fn autosave(store: &SqlStore<Postgres>, memory: &Memory) -> Result<bool, StoreError> {
        store.remember_one(memory, true).await
    }

    /// The `vector` extension and an index for the model's length (`vectors.rs`).
    async fn prepare_vectors(
        store: &SqlStore<Postgres>,
        model: &VectorModel,
    ) -> Result<(), StoreError> {
        store.prepare_pgvector(model).await
    }

    async fn save_vector(
        store: &SqlStore<Postgres>,
        memory: &Unembedded,
        model: &VectorModel,
        vector: &[f32],
    ) -> Result<bool, StoreError> {
        store.save_array(memory, model, vector).await
    }

    /// Ranked by pgvector (`vectors.rs`).
    async fn nearest_vectors(
        store: &SqlStore<Postgres>,
        scope: &str,
        model: &VectorModel,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<(i64, f32)>, StoreError> {
        store.nearest_pgvector(scope, model, query, limit).await
    }

    /// Nothing to do: PostgreSQL's write-ahead log is not in the data directory a tool or a
    /// grep of the gateway's files reaches.
    async fn flush_journal(_: &SqlStore<Postgres>) -> Result<(), StoreError> {
        Ok(())
    }

    /// An `UPDATE` of no row: PostgreSQL refuses it in a read-only session all the same,
    /// and writes nothing otherwise.
    async fn probe_write(store: &SqlStore<Postgres>) -> Result<(), StoreError> {
        sqlx::query("UPDATE conversation_seq SET last_seq = last_seq WHERE false")
            .execute(&store.front)
            .await?;
        Ok(())
    }
}

impl SqlStore<Postgres> {
    /// Connect and migrate, with the default [`Timeouts`].
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_with(url, Timeouts::default()).await
    }

    /// Migrate (waiting up to [`STARTUP_WAIT`](super::timeouts::STARTUP_WAIT) for the server),
    /// then open a pool whose waits are bounded by `timeouts`. A `statement_timeout` given in
    /// the URL's `options` wins over `timeouts.statement`.
    pub async fn connect_with(url: &str, timeouts: Timeouts) -> Result<Self, StoreError> {
        let base = PgConnectOptions::from_str(url)?;
        migrate(&base).await?;
        let place = format!(
            "the PostgreSQL database {} on {}",
            base.get_database().unwrap_or("(default)"),
            base.get_host()
        );
        let options = if base
            .get_options()
            .is_some_and(|o| o.contains("statement_timeout"))
        {
            base
        } else {
            let ms = timeouts.statement.as_millis().to_string();
            base.options([("statement_timeout", ms)])
        };
        let pool = PgPoolOptions::new()
            .max_connections(WORK_CONNECTIONS)
            .acquire_timeout(timeouts.queue)
            .connect_lazy_with(options.clone());
        let front = PgPoolOptions::new()
            .max_connections(FRONT_CONNECTIONS)
            .acquire_timeout(timeouts.acquire)
            .connect_lazy_with(options);
        Ok(Self::new(pool, front, timeouts, (), place))
    }
}

/// Apply migrations over a pool of their own: with no statement timeout (a migration may
/// rightly take long), after waiting up to [`STARTUP_WAIT`](super::timeouts::STARTUP_WAIT)
/// for a server still starting up.
async fn migrate(options: &PgConnectOptions) -> Result<(), StoreError> {
    migrate_at_startup::<Postgres>(options.clone(), &sqlx::migrate!("migrations/postgres")).await
}
