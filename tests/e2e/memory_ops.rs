//! The operator's side of recall by meaning: `switchboard memory stats` and `memory reindex`
//! through the real binary (counts, progress to the end, a failed endpoint reported with
//! exit code 1, `--all` starting over, no `[memory.embeddings]` said plainly), and the
//! dashboard's embedded / waiting / endpoint-down figures following the endpoint. Both use the
//! embeddings stand-in, whose failure modes the real model cannot show.

use std::path::{Path, PathBuf};
use std::time::Duration;

use switchboard::ids::MemoryScope;
use switchboard::store::{self, Memory, VectorModel};
use switchboard_channel::ConversationKey;
use switchboard_standins::embeddings::{FakeEmbeddings, Mode};

/// The stand-in's model name and the length asked for in these tests.
const MODEL: &str = "fake-mini";
const DIMS: usize = 8;

/// A config file in `dir` on the SQLite database `db`, with `[memory.embeddings]` pointing
/// at `base_url` when given.
fn config(dir: &Path, db: &str, base_url: Option<&str>) -> PathBuf {
    let mut text = format!(
        "[gateway]\ndata_dir = \"{}\"\ndatabase_url = \"{db}\"\n",
        dir.join("data").display()
    );
    if let Some(base_url) = base_url {
        text.push_str(&format!(
            "[memory.embeddings]\nbase_url = \"{base_url}\"\nmodel = \"{MODEL}\"\ndimensions = {DIMS}\ntimeout_secs = 5\n"
        ));
    }
    let path = dir.join("switchboard.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// `switchboard memory <args> --config <config>`: exit code and stdout + stderr.
async fn memory(config: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .arg("memory")
        .args(args)
        .arg("--config")
        .arg(config)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    (out.status.code(), format!("{stdout}{stderr}"))
}

fn memory_row(key: &str, content: &str, at: i64) -> Memory {
    Memory {
        scope: MemoryScope::Conversation(ConversationKey::new("tg", "ops")),
        key: key.into(),
        content: content.into(),
        category: "conversation".into(),
        updated_at: at,
    }
}

#[tokio::test]
async fn memory_stats_and_reindex_count_embed_report_a_failed_endpoint_and_start_over_with_all() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/s.db", dir.path().display());
    let store = store::connect(&db).await.unwrap();
    for (i, text) in [
        "The cabin key is under the blue pot",
        "Rex likes the beach",
        "Seat 14C",
    ]
    .iter()
    .enumerate()
    {
        let row = memory_row(&format!("m{i}"), text, i as i64);
        store.remember(&row, false).await.unwrap();
    }
    let fake = FakeEmbeddings::start(Mode::Status(503)).await;
    let with = config(dir.path(), &db, Some(&fake.base_url()));

    let (code, out) = memory(&with, &["stats"]).await;
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("memories: 3\n"), "{out}");
    assert!(
        out.contains(&format!("embedded: 0 ({MODEL}, {DIMS} dimensions)\n")),
        "{out}"
    );
    assert!(out.contains("pending: 3\n"), "{out}");

    let (code, out) = memory(&with, &["reindex"]).await;
    assert_eq!(
        code,
        Some(1),
        "an endpoint answering 503 fails the reindex: {out}"
    );
    assert!(
        out.contains("the embedding endpoint failed") && out.contains("0 of 3 embedded"),
        "{out}"
    );

    fake.set_mode(Mode::Words);
    let (code, out) = memory(&with, &["reindex"]).await;
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains(&format!(
            "embedded 3 memories with {MODEL} ({DIMS} dimensions)"
        )),
        "{out}"
    );
    let (_, out) = memory(&with, &["stats"]).await;
    assert!(
        out.contains("embedded: 3 (") && out.contains("pending: 0\n"),
        "{out}"
    );
    let model = VectorModel {
        name: MODEL.into(),
        dims: DIMS,
    };
    let counts = store.vector_counts(&model).await.unwrap();
    assert_eq!((counts.memories, counts.embedded), (3, 3));

    // Nothing pending: a second reindex sends nothing; `--all` drops and embeds again.
    let sent = fake.texts().len();
    let (code, out) = memory(&with, &["reindex"]).await;
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("embedded 0 memories"), "{out}");
    assert_eq!(fake.texts().len(), sent, "nothing pending, nothing sent");
    let (code, out) = memory(&with, &["reindex", "--all"]).await;
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("dropped 3 vectors") && out.contains("embedded 3 memories"),
        "{out}"
    );
    assert_eq!(fake.texts().len(), sent + 3, "every memory embedded again");

    let without = config(dir.path(), &db, None);
    let (code, out) = memory(&without, &["stats"]).await;
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("memories: 3\n") && out.contains("embeddings: not configured"),
        "{out}"
    );
    let (code, out) = memory(&without, &["reindex"]).await;
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("no [memory.embeddings] in the config"),
        "{out}"
    );
}

/// The `<dd>` after the dashboard figure `label` on `page`.
fn figure(page: &str, label: &str) -> Option<i64> {
    let marker = format!("<dt>{label}</dt><dd>");
    let at = page.find(&marker)? + marker.len();
    page[at..][..page[at..].find('<')?].parse().ok()
}

#[tokio::test]
async fn the_dashboard_shows_memories_waiting_while_the_endpoint_is_down_and_embedded_after() {
    use crate::helpers::{key, wait_inbox_idle, wait_transcript};
    let fake = FakeEmbeddings::start(Mode::Status(503)).await;
    let app = crate::app::TestApp::spawn_with(&format!(
        "[memory.embeddings]\nbase_url = \"{}\"\nmodel = \"{MODEL}\"\ndimensions = {DIMS}\ntimeout_secs = 5\n",
        fake.base_url()
    ))
    .await;
    let chat = key("dash");
    let text = "I adopted a puppy last spring, his name is Rex";
    app.channel.say(&chat, "u1", text).await.unwrap();
    wait_transcript(&app.channel, &chat, |t| t.len() == 1).await;
    wait_inbox_idle(&app.store()).await;

    let page = switchboard_standins::eventually(
        Duration::from_secs(30),
        "the dashboard shows a memory waiting and the endpoint down",
        async || {
            let (status, page) = crate::admin::get(&app, "/").await;
            let waiting = figure(&page, "memories waiting for a vector");
            let down = figure(&page, "embedding endpoint down");
            if status == 200 && waiting.is_some_and(|n| n >= 1) && down == Some(1) {
                Ok(page)
            } else {
                Err((status, waiting, down))
            }
        },
    )
    .await;
    assert_eq!(figure(&page, "memories embedded"), Some(0), "{page}");

    // Back up: the background task's retry (2 s, doubling) embeds what waited.
    fake.set_mode(Mode::Words);
    let page = switchboard_standins::eventually(
        Duration::from_secs(60),
        "the dashboard shows every memory embedded",
        async || {
            let (_, page) = crate::admin::get(&app, "/").await;
            let embedded = figure(&page, "memories embedded");
            let waiting = figure(&page, "memories waiting for a vector");
            if embedded.is_some_and(|n| n >= 1) && waiting == Some(0) {
                Ok(page)
            } else {
                Err((embedded, waiting))
            }
        },
    )
    .await;
    assert_eq!(figure(&page, "embedding endpoint down"), Some(0), "{page}");
    assert!(
        fake.texts().iter().any(|t| t.contains("his name is Rex")),
        "the saved memory was sent to the endpoint once it answered"
    );
}
