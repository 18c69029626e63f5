//! What e2e tests share besides the app itself (`crate::app`): waits, keys, messages, and
//! fresh databases.

use std::sync::Arc;
use std::time::Duration;

use switchboard::clock::Clock;
use switchboard::store::{self, Store};
use switchboard_channel::{ChannelEvent, ConversationKey, Inbound, Place, UserRef};
use switchboard_standins::{FakeChannel, eventually};

pub use crate::app::{TestApp, free_port, test_config};

/// Generous upper bound for anything a test waits for.
pub const WAIT: Duration = Duration::from_secs(15);

/// The system clock in Unix ms (the starting point of a test's manual clock).
pub fn wall_ms() -> i64 {
    Clock::wall().now_ms()
}

/// A direct message from user `u1` in `key`, as a channel hands it to the inbox.
pub fn direct_message(key: &ConversationKey, id: &str, text: &str) -> ChannelEvent {
    ChannelEvent::Message(Inbound {
        key: key.clone(),
        event_id: id.into(),
        user: UserRef {
            id: "u1".into(),
            name: None,
        },
        text: text.into(),
        place: Place::Direct,
        attachments: Vec::new(),
    })
}

/// A conversation key on the fake channel.
pub fn key(chat: &str) -> ConversationKey {
    ConversationKey::new("fake", chat)
}

/// Wait until the conversation's transcript satisfies `done`.
pub async fn wait_transcript(
    channel: &FakeChannel,
    key: &ConversationKey,
    done: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    eventually(WAIT, &format!("the transcript of {key}"), async || {
        let transcript = channel.transcript(key);
        if done(&transcript) {
            Ok(transcript)
        } else {
            Err(transcript)
        }
    })
    .await
}

/// Wait until the inbox has no unfinished rows.
pub async fn wait_inbox_idle(store: &Arc<dyn Store>) {
    eventually(WAIT, "the inbox to drain", async || {
        let counts = store.inbox_counts().await.unwrap();
        if counts.pending == 0 && counts.processing == 0 {
            Ok(())
        } else {
            Err(counts)
        }
    })
    .await;
}

/// A process killed when dropped, so a test that fails before stopping it leaves nothing
/// running.
pub struct KilledOnDrop(pub std::process::Child);

impl Drop for KilledOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A fresh PostgreSQL database for one test, or `None` (with a visible notice) when no
/// server is reachable. With `SWITCHBOARD_REQUIRE_POSTGRES=1` (set by CI) a missing server
/// fails the test instead.
pub async fn postgres_url() -> Option<String> {
    use sqlx::Connection;
    let candidates = match std::env::var("SWITCHBOARD_TEST_POSTGRES") {
        Ok(url) => vec![url],
        Err(_) => vec![
            "postgres://postgres@127.0.0.1:5432/test".to_owned(),
            "postgres://root@127.0.0.1:5432/test".to_owned(),
        ],
    };
    for admin in &candidates {
        let Ok(mut conn) = sqlx::PgConnection::connect(admin).await else {
            continue;
        };
        let name = format!("sb_test_{}", uuid::Uuid::new_v4().simple());
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut conn)
            .await
            .expect("create test database");
        let base = admin.rsplit_once('/').map(|(b, _)| b).unwrap_or(admin);
        return Some(format!("{base}/{name}"));
    }
    let required = std::env::var("SWITCHBOARD_REQUIRE_POSTGRES").is_ok_and(|v| v == "1");
    assert!(
        !required,
        "PostgreSQL is required (SWITCHBOARD_REQUIRE_POSTGRES=1) but unreachable at {candidates:?}"
    );
    eprintln!(
        "NOTICE: PostgreSQL not reachable at {candidates:?}; skipping the PostgreSQL half of this test"
    );
    None
}

/// A fresh SQLite store in `dir`.
pub async fn sqlite_store(dir: &tempfile::TempDir) -> Arc<dyn Store> {
    store::connect(&format!("sqlite://{}/s.db", dir.path().display()))
        .await
        .unwrap()
}

/// Drop a database made by [`postgres_url`] (connections still open are terminated).
pub async fn drop_postgres(url: &str) {
    use sqlx::Connection;
    let (base, name) = url.rsplit_once('/').expect("url has a database");
    if let Ok(mut conn) = sqlx::PgConnection::connect(&format!("{base}/test")).await {
        let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .execute(&mut conn)
            .await;
    }
}

/// What a finished command printed: its stdout, then its stderr, as text.
pub fn output_text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
