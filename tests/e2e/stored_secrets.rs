//! Nothing stored holds a secret: a session handles planted secrets (in the user's text, in
//! a file a tool reads, in a shell call that is approved and runs, the database URL's
//! password, repeated in the model's answer); afterwards the whole SQLite file (with its
//! `-wal`) and every PostgreSQL table are searched for them. Zero hits.

use std::sync::Arc;

use serde_json::json;
use switchboard::config::EnvString;
use switchboard_standins::{FakeLlm, Reply};

use crate::approvals::{buttons_channel, prompt};
use crate::helpers::{TestApp, drop_postgres, key, postgres_url, wait_inbox_idle, wait_transcript};

/// The provider key `test_config` configures.
const CONFIGURED: &str = "test-key-not-real";
/// Token shapes no config names.
const SHAPED: &[&str] = &[
    "sk-proj-TESTONLYabcdefghijklmnopqrstuv",
    "ghp_TESTONLYabcdefghijklmnopqrstuvwxyz0123",
    "xoxb-9999999999-TESTONLYfake",
];
/// A password inside configured URLs: the provider's `base_url` (the stand-in ignores it)
/// and, on PostgreSQL, the database URL (trust auth ignores it).
const DB_PASSWORD: &str = "planted-db-pass-4711";

const TOOLS: &str = "[tools]\nenabled = [\"shell\", \"file_read\"]\n[policy]\nmode = \"guarded\"\napproval_timeout_secs = 300\n";

fn planted() -> Vec<&'static str> {
    let mut all = vec![CONFIGURED, DB_PASSWORD];
    all.extend(SHAPED);
    all
}

/// A gateway with approval buttons and [`TOOLS`], the URL password in the provider's
/// `base_url`, on SQLite or on `database_url`.
async fn spawn(database_url: Option<&str>) -> TestApp {
    let llm = FakeLlm::start().await;
    let url = llm
        .openai_url()
        .replacen("://", &format!("://proxy:{DB_PASSWORD}@"), 1);
    let mut builder = TestApp::builder()
        .llm(llm)
        .fake(buttons_channel())
        .config(TOOLS)
        .edit(|c| c.provider.base_url = Some(EnvString(url)));
    if let Some(db) = database_url {
        builder = builder.database(db);
    }
    builder.start().await
}

/// Run the session, then stop the gateway (its files stay for the search).
async fn session(app: &mut TestApp) {
    let (llm, channel) = (&app.llm, Arc::clone(&app.channel));
    let chat = key("stored");
    let workspace = app.config.gateway.data_dir.join("workspaces/fake/stored");
    std::fs::create_dir_all(&workspace).unwrap();
    let file = format!("OPENAI={}\nGITHUB={}\n", SHAPED[0], SHAPED[1]);
    std::fs::write(workspace.join("secrets.env"), file).unwrap();
    llm.push(Reply::tool_call(
        "file_read",
        json!({"path": "secrets.env"}),
    ))
    .push(Reply::tool_call(
        "shell",
        json!({"command": format!("echo {CONFIGURED} > token.txt")}),
    ))
    .push(Reply::text(format!(
        "Keys: {}. Done.",
        planted().join(", ")
    )));
    let text = format!("my slack token is {} and db pass {DB_PASSWORD}", SHAPED[2]);
    channel.say(&chat, "alice", &text).await.unwrap();
    let (once, _, _) = prompt(&channel, &chat).await;
    channel.press(&chat, "alice", &once).await.unwrap();
    wait_transcript(&channel, &chat, |t| {
        t.last().is_some_and(|m| m.ends_with("Done."))
    })
    .await;
    assert_eq!(
        std::fs::read_to_string(workspace.join("token.txt"))
            .unwrap()
            .trim(),
        CONFIGURED,
        "the approved call ran with the real value"
    );
    wait_inbox_idle(&app.store()).await;
    tokio::time::sleep(std::time::Duration::from_millis(200)).await; // the call is forgotten
    app.stop().await;
}

fn assert_no_hits(place: &str, haystack: &[u8]) {
    for secret in planted() {
        let needle = secret.as_bytes();
        let hit = haystack.windows(needle.len()).any(|w| w == needle);
        assert!(!hit, "{place} holds {secret:?}");
    }
}

#[tokio::test]
async fn the_sqlite_file_and_its_wal_hold_none_of_the_planted_secrets() {
    let mut app = spawn(None).await;
    session(&mut app).await;
    for name in ["test.db", "test.db-wal"] {
        if let Ok(bytes) = std::fs::read(app.dir().join(name)) {
            assert_no_hits(name, &bytes);
        }
    }
}

#[tokio::test]
async fn no_postgresql_table_holds_any_of_the_planted_secrets() {
    let Some(url) = postgres_url().await else {
        return;
    };
    let with_password = url.replacen("://postgres@", &format!("://postgres:{DB_PASSWORD}@"), 1);
    let mut app = spawn(Some(&with_password)).await;
    session(&mut app).await;
    let rows = all_rows(&with_password).await;
    assert!(rows.contains("alice"), "the tables were read: {rows}");
    assert_no_hits("PostgreSQL", rows.as_bytes());
    drop_postgres(&url).await;
}

/// Every row of every table in the database, as text.
async fn all_rows(url: &str) -> String {
    use sqlx::{Connection, Row};
    let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
    let tables: Vec<String> = sqlx::query(
        "SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public'",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap()
    .iter()
    .map(|r| r.get(0))
    .collect();
    let mut out = String::new();
    for table in tables {
        let rows = sqlx::query(&format!("SELECT t::text FROM \"{table}\" t"))
            .fetch_all(&mut conn)
            .await
            .unwrap();
        for row in rows {
            out.push_str(&row.get::<String, _>(0));
            out.push('\n');
        }
    }
    out
}
