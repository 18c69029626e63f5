//! Today's gateway on each released version's unfinished work, on SQLite and PostgreSQL:
//! migrations run, no table loses a row, the half-answered event is finished by editing its
//! draft, the approval decides once (and the message behind it is answered after), the
//! reminder fires once, the memory, checkpoint and grant are there, and Telegram resumes
//! after the offset it had confirmed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use switchboard::clock::Clock;
use switchboard_standins::telegram::{FakeUser, UserMessage};
use switchboard_standins::{FakeChannel, FakeLlm, Op, Reply};

use super::{APPROVED_COMMAND, Fixture, MEMORY, REMINDER, TELEGRAM_USER};
use crate::app::TestApp;
use crate::approvals::buttons_channel;
use crate::helpers::{WAIT, drop_postgres, postgres_url, wait_inbox_idle, wait_transcript};

/// Every released version's fixture folder, oldest first.
fn versions() -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(super::root())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("fixture.json").is_file())
        .collect();
    found.sort();
    assert!(!found.is_empty(), "no fixtures under tests/upgrade");
    found
}

fn fixture(dir: &Path, database: &str) -> Fixture {
    let text = std::fs::read_to_string(dir.join("fixture.json")).unwrap();
    let both: serde_json::Value = serde_json::from_str(&text).unwrap();
    serde_json::from_value(both[database].clone()).unwrap()
}

#[tokio::test]
async fn every_released_sqlite_database_resumes_its_unfinished_work_exactly_once() {
    for version in versions() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("upgraded.db");
        std::fs::copy(version.join("sqlite.db"), &db).unwrap();
        let url = format!("sqlite://{}", db.display());
        resume(&url, &fixture(&version, "sqlite")).await;
    }
}

#[tokio::test]
async fn every_released_postgres_database_resumes_its_unfinished_work_exactly_once() {
    for version in versions() {
        let Some(url) = postgres_url().await else {
            return;
        };
        let dump = std::fs::read_to_string(version.join("postgres.sql")).unwrap();
        load_dump(&url, &dump).await;
        resume(&url, &fixture(&version, "postgres")).await;
        drop_postgres(&url).await;
    }
}

/// Runs `pg_dump --inserts` output (no `COPY` blocks) on the empty database at `url`.
async fn load_dump(url: &str, dump: &str) {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
    // psql meta-commands (`\restrict` in newer dumps) are not SQL.
    let sql: String = dump
        .lines()
        .filter(|l| !l.starts_with('\\'))
        .map(|l| format!("{l}\n"))
        .collect();
    sqlx::raw_sql(&sql).execute(&mut conn).await.unwrap();
}

async fn resume(url: &str, was: &Fixture) {
    let clock = Clock::manual(was.clock_ms + 60_000);
    let channel = buttons_channel();
    // The half-answered turn resumes as soon as the gateway starts.
    let llm = FakeLlm::start().await;
    llm.push(Reply::text(super::long_answer()));
    let mut app = super::builder(url, &channel, &clock).llm(llm).start().await;
    nothing_lost(url, was).await;
    let v = &was.version;

    // The half-answered turn is finished in the draft it had posted.
    let half = super::half();
    let what = format!("v{v}: the half answer to be finished by editing");
    channel
        .wait_until(WAIT, &what, |calls| {
            calls.iter().any(|c| {
                c.key == half
                    && c.op == Op::Edit
                    && c.msg_id == was.draft_id
                    && c.text == super::long_answer()
            })
        })
        .await;
    // (The message behind the pending approval stays pending until it is decided.)
    approval_decides_once(&app, &channel, was).await;
    let sends = channel
        .writes()
        .iter()
        .filter(|w| w.key == half && w.op == Op::Send)
        .count();
    assert_eq!(sends, 0, "v{v}: the half answer was posted anew");
    reminder_fires_once(&app, &channel, &clock, was).await;
    kept_things_are_there(&app, was).await;
    telegram_resumes_after_its_offset(&app, was).await;
    app.stop().await;
}

/// Every table the version had is still there, with at least its rows, and every migration
/// of today's gateway has run.
async fn nothing_lost(url: &str, was: &Fixture) {
    let now = super::row_counts(url).await;
    for (table, rows) in &was.rows {
        let after = now.iter().find(|(t, _)| t == table).map(|(_, n)| *n);
        assert!(
            after.is_some_and(|n| n >= *rows),
            "v{}: table {table} had {rows} rows, now {after:?}",
            was.version
        );
    }
    let migrations = now
        .iter()
        .find(|(t, _)| t == "_sqlx_migrations")
        .map(|(_, n)| *n)
        .unwrap();
    let dir = if url.starts_with("sqlite") {
        "sqlite"
    } else {
        "postgres"
    };
    let files = std::fs::read_dir(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("migrations")
            .join(dir),
    )
    .unwrap()
    .count() as i64;
    assert_eq!(migrations, files, "v{}: every migration ran", was.version);
}

/// The approval still answers its buttons: once runs the command once, a second press runs
/// nothing, and the message that waited behind it is answered after.
async fn approval_decides_once(app: &TestApp, channel: &FakeChannel, was: &Fixture) {
    let chat = super::approval();
    app.llm
        .push(Reply::text("Created it."))
        .push(Reply::text("After that, nothing."));
    channel
        .press(&chat, "alice", &was.buttons[0])
        .await
        .unwrap();
    wait_transcript(channel, &chat, |t| {
        t.iter().any(|m| m == "After that, nothing.")
    })
    .await;
    let made = app
        .config
        .gateway
        .data_dir
        .join("workspaces/fake/approval/approved.txt");
    assert!(made.exists(), "v{}: the approved command ran", was.version);
    std::fs::remove_file(&made).unwrap();
    channel
        .press(&chat, "alice", &was.buttons[0])
        .await
        .unwrap();
    wait_inbox_idle(&app.store()).await;
    assert!(
        !made.exists(),
        "v{}: a second press ran it again",
        was.version
    );
    let audit = app.store().audit(Some(&chat), 10).await.unwrap();
    let ran = audit
        .iter()
        .filter(|a| a.tool == "shell" && a.args.contains(APPROVED_COMMAND))
        .count();
    assert_eq!(ran, 1, "v{}: {audit:#?}", was.version);
}

/// The reminder made before the upgrade fires once when due.
async fn reminder_fires_once(app: &TestApp, channel: &FakeChannel, clock: &Clock, was: &Fixture) {
    let chat = super::keeper();
    let asked = app.llm.requests().len();
    app.llm.push(Reply::text("Time to water the plants."));
    clock.advance(Duration::from_millis(
        u64::try_from(was.reminder_due_ms - clock.now_ms()).unwrap_or(0) + 1_000,
    ));
    wait_transcript(channel, &chat, |t| {
        t.last().is_some_and(|m| m == "Time to water the plants.")
    })
    .await;
    clock.advance(Duration::from_secs(120));
    tokio::time::sleep(Duration::from_millis(300)).await;
    wait_inbox_idle(&app.store()).await;
    assert_eq!(
        app.llm.requests().len(),
        asked + 1,
        "v{}: fired once",
        was.version
    );
    let fired = app.llm.requests()[asked]["messages"].to_string();
    assert!(fired.contains(REMINDER), "v{}: {fired}", was.version);
}

/// The memory, the checkpoint before the file write and the grant.
async fn kept_things_are_there(app: &TestApp, was: &Fixture) {
    let store = app.store();
    let chat = super::keeper();
    let memories = store.memories(None, 50).await.unwrap();
    assert!(
        memories.iter().any(|m| m.content == MEMORY),
        "v{}: {memories:#?}",
        was.version
    );
    let checkpoints = store.checkpoints(&chat).await.unwrap();
    assert!(!checkpoints.is_empty(), "v{}: no checkpoint", was.version);
    let grants = store.grants().await.unwrap();
    assert!(
        grants.iter().any(|g| g.user_id == "dave"),
        "v{}: {grants:#?}",
        was.version
    );
}

/// An update at the confirmed offset is not fetched again; the next one is answered.
async fn telegram_resumes_after_its_offset(app: &TestApp, was: &Fixture) {
    let tg = app.telegram();
    let user = FakeUser::human(TELEGRAM_USER, "tg_user");
    let (old, _) = tg.update_for(&UserMessage::private(user.clone(), "already answered"));
    let (new, _) = tg.update_for(&UserMessage::private(user, "after the upgrade"));
    app.llm.push(Reply::text("Answered after the upgrade."));
    tg.queue(was.telegram_cursor, with_id(old, was.telegram_cursor));
    tg.queue(
        was.telegram_cursor + 1,
        with_id(new, was.telegram_cursor + 1),
    );
    tg.wait_for_calls("sendMessage", 1).await;
    wait_inbox_idle(&app.store()).await;
    let sent = tg.calls_to("sendMessage");
    assert_eq!(sent.len(), 1, "v{}: {sent:#?}", was.version);
    let chat = i64::try_from(TELEGRAM_USER).unwrap();
    let texts: Vec<String> = tg.messages(chat).into_iter().map(|m| m.text).collect();
    assert_eq!(texts, ["Answered after the upgrade."], "v{}", was.version);
}

fn with_id(mut update: serde_json::Value, id: i64) -> serde_json::Value {
    update["update_id"] = id.into();
    update
}
