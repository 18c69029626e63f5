//! Writes `tests/upgrade/<this version>/`: the state a gateway of this version leaves when it
//! is killed in the middle of its work, on SQLite and PostgreSQL. Run it at a release's
//! commit, once, and commit what it writes:
//!
//! `SWITCHBOARD_MAKE_UPGRADE_FIXTURES=1 cargo test --test e2e upgrade::make -- --ignored`
//!
//! (PostgreSQL needs `pg_dump` and the test server; SQLite is copied with `VACUUM INTO`.)

use std::path::Path;
use std::time::Duration;

use serde_json::json;
use switchboard::clock::Clock;
use switchboard::store::{AccessRole, Grant};
use switchboard_standins::telegram::{FakeUser, UserMessage};
use switchboard_standins::{Op, Reply};

use super::{APPROVED_COMMAND, Fixture, MEMORY, REMINDER, TELEGRAM_USER};
use crate::app::TestApp;
use crate::approvals::{buttons_channel, prompt};
use crate::helpers::{WAIT, postgres_url, wait_inbox_idle, wait_transcript};

/// The manual clock's start: 2026-11-01T00:00:00Z, a fixed time so fixtures read alike.
const START_MS: i64 = 1_793_491_200_000;

#[tokio::test]
#[ignore = "writes fixtures; run at a release's commit (see the module doc)"]
async fn make_upgrade_fixtures_for_this_version() {
    assert!(
        std::env::var_os("SWITCHBOARD_MAKE_UPGRADE_FIXTURES").is_some(),
        "set SWITCHBOARD_MAKE_UPGRADE_FIXTURES=1 to write tests/upgrade/<version>/"
    );
    let out = super::root().join(format!("v{}", env!("CARGO_PKG_VERSION")));
    std::fs::create_dir_all(&out).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let sqlite = format!("sqlite://{}/fixture.db", dir.path().display());
    let fixture = leave_work_unfinished(&sqlite).await;
    let copy = out.join("sqlite.db");
    let _ = std::fs::remove_file(&copy);
    vacuum_into(&sqlite, &copy).await;
    let postgres = postgres_url().await.expect("PostgreSQL for the fixture");
    let pg_fixture = leave_work_unfinished(&postgres).await;
    let dump = std::process::Command::new("pg_dump")
        .args(["--inserts", "--no-owner", "--no-privileges", &postgres])
        .output()
        .unwrap();
    assert!(dump.status.success(), "{dump:?}");
    std::fs::write(out.join("postgres.sql"), dump.stdout).unwrap();
    let both = json!({"sqlite": fixture, "postgres": pg_fixture});
    std::fs::write(
        out.join("fixture.json"),
        serde_json::to_string_pretty(&both).unwrap() + "\n",
    )
    .unwrap();
    crate::helpers::drop_postgres(&postgres).await;
}

/// A gateway on `url` does some of everything, then is killed with a turn half-answered and
/// an approval pending; what it left is described in the returned fixture.
async fn leave_work_unfinished(url: &str) -> Fixture {
    let clock = Clock::manual(START_MS);
    let channel = buttons_channel();
    let mut app = super::builder(url, &channel, &clock).start().await;
    let telegram_cursor = telegram_answered(&app).await;
    let reminder_due_ms = keep_things(&app, &clock).await;
    app.stop().await;

    app.start_killable().await;
    let approval = super::approval();
    app.llm.push(Reply::tool_call(
        "shell",
        json!({"command": APPROVED_COMMAND}),
    ));
    channel
        .say(&approval, "alice", "make a file")
        .await
        .unwrap();
    let (once, always, deny) = prompt(&channel, &approval).await;
    channel
        .say(&approval, "alice", "and after that?")
        .await
        .unwrap();

    let half = super::half();
    app.llm.push(Reply::paced(
        super::long_answer(),
        12,
        Duration::from_millis(60),
    ));
    let sends_before = channel.writes().len();
    channel
        .say(&half, "bob", "tell me a long story")
        .await
        .unwrap();
    let what = "the half-answered turn to stream into its draft";
    channel
        .wait_until(WAIT, what, |calls| {
            calls[sends_before..]
                .iter()
                .any(|c| c.key == half && c.op == Op::Edit)
        })
        .await;
    let draft_id = channel
        .writes()
        .iter()
        .find(|c| c.key == half && c.op == Op::Send)
        .map(|c| c.msg_id.clone())
        .expect("the draft was posted");
    app.kill();
    // Let the killed runtime's last writes settle before the copy.
    tokio::time::sleep(Duration::from_millis(300)).await;
    Fixture {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        clock_ms: clock.now_ms(),
        draft_id,
        buttons: vec![once, always, deny],
        reminder_due_ms,
        telegram_cursor,
        rows: super::row_counts(url).await,
    }
}

/// A Telegram message answered, so the offset is confirmed; returns its update id.
async fn telegram_answered(app: &TestApp) -> i64 {
    let tg = app.telegram();
    app.llm.push(Reply::text("Hello from Telegram."));
    let injected = tg.inject(&UserMessage::private(
        FakeUser::human(TELEGRAM_USER, "tg_user"),
        "hello",
    ));
    tg.wait_for_calls("sendMessage", 1).await;
    wait_inbox_idle(&app.store()).await;
    injected.update_id
}

/// A reminder, a memory, a file write (checkpointed first) and an access grant; returns when
/// the reminder is due.
async fn keep_things(app: &TestApp, clock: &Clock) -> i64 {
    let keeper = super::keeper();
    let due = clock.now_ms() + 2 * 3_600_000;
    let at = switchboard::schedule::when::rfc3339(due, "UTC");
    app.llm
        .push(Reply::tool_call(
            "schedule",
            json!({"action": "create", "prompt": REMINDER, "at": at}),
        ))
        .push(Reply::tool_call(
            "memory_store",
            json!({"key": "dog", "content": MEMORY}),
        ))
        .push(Reply::tool_call(
            "file_write",
            json!({"path": "notes.txt", "content": "first version\n"}),
        ))
        .push(Reply::text("Kept."));
    app.channel
        .say(&keeper, "carol", "keep these")
        .await
        .unwrap();
    wait_transcript(&app.channel, &keeper, |t| {
        t.last().is_some_and(|m| m == "Kept.")
    })
    .await;
    let grant = Grant {
        channel: "fake".into(),
        user_id: "dave".into(),
        user_name: Some("Dave".into()),
        role: AccessRole::Approver,
        granted_at: clock.now_ms(),
    };
    app.store().grant(&grant).await.unwrap();
    wait_inbox_idle(&app.store()).await;
    due
}

/// A consistent single-file copy of a live SQLite database.
async fn vacuum_into(url: &str, to: &Path) {
    use sqlx::Connection;
    let mut conn = sqlx::SqliteConnection::connect(url).await.unwrap();
    sqlx::query(&format!("VACUUM INTO '{}'", to.display()))
        .execute(&mut conn)
        .await
        .unwrap();
}
