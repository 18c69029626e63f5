//! Upgrades from every released schema: `tests/upgrade/<version>/` holds a database a released
//! version left behind in the middle of its work (an event half-answered when it was killed, a
//! pending approval with a message waiting behind it, a reminder, a memory, a checkpoint, an
//! access grant, a Telegram offset), on SQLite (`sqlite.db`) and PostgreSQL (`postgres.sql`,
//! `pg_dump --inserts`), with `fixture.json` saying what is in it. `resume.rs` opens each with
//! today's gateway: migrations run, nothing is lost, and every pending thing resumes exactly
//! once. `make.rs` writes a new version's fixtures (run it at the release's commit), and
//! `matrix.rs` checks (and makes) the Matrix SDK's stores the same way.

mod make;
mod matrix;
mod resume;

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use switchboard::clock::Clock;
use switchboard_channel::ConversationKey;
use switchboard_standins::FakeChannel;

use crate::app::{Builder, Table, TestApp};
use crate::helpers::key;

/// What a fixture holds, written by `make.rs` beside the databases.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Fixture {
    /// The version that made it (`CARGO_PKG_VERSION` then).
    pub version: String,
    /// The manual clock's reading when the version was killed, Unix ms.
    pub clock_ms: i64,
    /// The fake channel's message the half-answered turn had streamed into.
    pub draft_id: String,
    /// The pending approval's button payloads: approve once, always, deny.
    pub buttons: Vec<String>,
    /// When the reminder fires, Unix ms.
    pub reminder_due_ms: i64,
    /// The Telegram offset (last update id) the version had confirmed.
    pub telegram_cursor: i64,
    /// Rows in each table of the database as the version left it.
    pub rows: Vec<(String, i64)>,
}

/// The answer the half-answered turn was streaming.
pub fn long_answer() -> String {
    (1..=30)
        .map(|i| format!("Sentence number {i} of an answer cut by the upgrade. "))
        .collect()
}

/// The conversation killed mid-answer.
pub fn half() -> ConversationKey {
    key("half")
}

/// The conversation with a pending approval and a message waiting behind it.
pub fn approval() -> ConversationKey {
    key("approval")
}

/// The conversation that made the reminder, the memory and the checkpoint.
pub fn keeper() -> ConversationKey {
    key("keeper")
}

/// The command the pending approval would run.
pub const APPROVED_COMMAND: &str = "touch approved.txt";

/// What the reminder asks for when it fires.
pub const REMINDER: &str = "Water the plants";

/// The memory stored before the upgrade.
pub const MEMORY: &str = "The dog is called Rex.";

/// The Telegram user who wrote before the upgrade.
pub const TELEGRAM_USER: u64 = 4242;

/// The settings every version's fixture runs under: approvals in guarded mode, file writes
/// allowed (so a checkpoint precedes them), a five-minute approval timeout.
pub const CONFIG: &str = "[tools]\nenabled = [\"shell\", \"file_write\"]\n[policy]\n\
    mode = \"guarded\"\nallow = [\"file_write\"]\napproval_timeout_secs = 300\n\
    [policy.approvers]\nfake = [\"admin\"]\n";

/// A gateway on the database at `url` as every version's fixture runs it: the fake channel
/// with buttons, a Telegram stand-in, the manual `clock`, [`CONFIG`].
pub fn builder(url: &str, channel: &Arc<FakeChannel>, clock: &Clock) -> Builder {
    TestApp::builder()
        .fake(Arc::clone(channel))
        .telegram(Table::open())
        .database(url)
        .clock(clock.clone())
        .config(CONFIG)
}

/// `tests/upgrade/`.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/upgrade")
}

/// Rows per table of the database at `url`, by name (tables only; sqlx's own and SQLite's
/// full-text shadow tables included, since losing those loses data too).
pub async fn row_counts(url: &str) -> Vec<(String, i64)> {
    use sqlx::Connection;
    if url.starts_with("sqlite") {
        let mut conn = sqlx::SqliteConnection::connect(url).await.unwrap();
        let list = "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name";
        counts_of::<sqlx::Sqlite>(&mut conn, list).await
    } else {
        let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
        let list = "SELECT tablename::text FROM pg_tables WHERE schemaname = 'public' \
                    ORDER BY tablename";
        counts_of::<sqlx::Postgres>(&mut conn, list).await
    }
}

async fn counts_of<DB>(conn: &mut DB::Connection, list: &str) -> Vec<(String, i64)>
where
    DB: sqlx::Database,
    for<'c> &'c mut DB::Connection: sqlx::Executor<'c, Database = DB>,
    for<'q> <DB as sqlx::Database>::Arguments<'q>: sqlx::IntoArguments<'q, DB>,
    String: for<'r> sqlx::Decode<'r, DB> + sqlx::Type<DB>,
    i64: for<'r> sqlx::Decode<'r, DB> + sqlx::Type<DB>,
    usize: sqlx::ColumnIndex<DB::Row>,
{
    use sqlx::Row;
    let names: Vec<String> = sqlx::query(list)
        .fetch_all(&mut *conn)
        .await
        .unwrap()
        .iter()
        .map(|r| r.get::<String, _>(0))
        .collect();
    let mut counts = Vec::new();
    for name in names {
        let row = sqlx::query(&format!("SELECT COUNT(*) FROM \"{name}\""))
            .fetch_one(&mut *conn)
            .await
            .unwrap();
        counts.push((name, row.get::<i64, _>(0)));
    }
    counts
}
