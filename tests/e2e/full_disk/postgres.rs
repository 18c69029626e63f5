//! PostgreSQL refusing writes (its database switched to read-only, as after a failover to a
//! standby or an operator's switch): the same promise as a full disk.

use sqlx::Connection;

use super::{readyz, slack_dm, wait_answered_on_slack, wait_ready};
use crate::app::{Table, TestApp};
use crate::helpers::{drop_postgres, postgres_url};

/// Switch the test's database `url` to read-only sessions (or back), and end its open
/// sessions so that the gateway's next ones start that way.
async fn set_read_only(url: &str, on: bool) {
    let (base, name) = url.rsplit_once('/').expect("url has a database");
    let mut admin = sqlx::PgConnection::connect(&format!("{base}/test"))
        .await
        .unwrap();
    let change = if on {
        format!("ALTER DATABASE {name} SET default_transaction_read_only = on")
    } else {
        format!("ALTER DATABASE {name} RESET default_transaction_read_only")
    };
    sqlx::query(&change).execute(&mut admin).await.unwrap();
    sqlx::query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1")
        .bind(name)
        .execute(&mut admin)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_postgres_database_that_refuses_writes_gets_no_event_acknowledged_until_it_takes_them() {
    let Some(url) = postgres_url().await else {
        return;
    };
    let app = TestApp::builder()
        .slack(Table::open())
        .database(&url)
        .start()
        .await;
    assert_eq!(
        app.slack_post("events", slack_dm("Ev0PGBEFORE", "pg-before"))
            .await,
        200
    );
    wait_answered_on_slack(&app, &["pg-before"]).await;

    set_read_only(&url, true).await;
    // The first attempt may meet a session that was just ended; Slack retries, and the
    // retry meets a read-only one. Neither is acknowledged.
    let refused = slack_dm("Ev0PGREFUSED", "pg-refused");
    assert_eq!(app.slack_post("events", refused).await, 500);
    let retry = slack_dm("Ev0PGREFUSED", "pg-refused").retry(1);
    assert_eq!(app.slack_post("events", retry).await, 500);
    let (status, body) = readyz(&app).await;
    assert_eq!(status, 503, "{body}");
    let detail = body["checks"][0]["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("read-only"), "/readyz says why: {detail}");

    set_read_only(&url, false).await;
    wait_ready(&app).await;
    let retry = slack_dm("Ev0PGREFUSED", "pg-refused").retry(2);
    assert_eq!(app.slack_post("events", retry).await, 200);
    wait_answered_on_slack(&app, &["pg-before", "pg-refused"]).await;
    assert_eq!(super::asked(&app, "pg-refused"), 1, "answered once");
    app.shutdown().await;
    drop_postgres(&url).await;
}
