//! The test's direct reads and writes of the replicas' shared database (not through any
//! replica, and never through the proxy).

use sqlx::Connection;

use super::harness::Cluster;

impl Cluster {
    /// The current holder and term of leader role `role`, if its lease is live.
    pub async fn leader(&self, role: &str) -> Option<(String, i64)> {
        let mut conn = sqlx::PgConnection::connect(&self.url).await.ok()?;
        sqlx::query_as("SELECT holder, term FROM leaders WHERE role = $1 AND lease_until > now()")
            .bind(role)
            .fetch_optional(&mut conn)
            .await
            .ok()
            .flatten()
    }

    /// The instance holding conversation `key`'s lease (`slack:D0…`), if any holds it.
    pub async fn conversation_owner(&self, key: &str) -> Option<String> {
        let mut conn = sqlx::PgConnection::connect(&self.url).await.ok()?;
        sqlx::query_scalar("SELECT owner FROM conversation_leases WHERE key = $1")
            .bind(key)
            .fetch_optional(&mut conn)
            .await
            .ok()
            .flatten()
    }

    /// Run one statement on the shared database (a test setting up a fault).
    pub async fn sql(&self, statement: &str) -> u64 {
        let mut conn = sqlx::PgConnection::connect(&self.url)
            .await
            .expect("connect to the test db");
        sqlx::query(statement)
            .execute(&mut conn)
            .await
            .expect("statement runs")
            .rows_affected()
    }
}
