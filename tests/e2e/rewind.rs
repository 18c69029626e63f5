//! Checkpoints and `/rewind` through the whole gateway: a file written then edited by two
//! tool calls goes back to its first version with the history cut before the edit, also
//! after a restart; unchanged contents are stored once; the caps drop the oldest; a symlink
//! pointing outside the workspace is never followed.

use std::path::PathBuf;

use serde_json::json;
use switchboard::provider::Role;
use switchboard_channel::ConversationKey;
use switchboard_standins::Reply;

use crate::audit::wait_audit;
use crate::helpers::{TestApp, key, wait_inbox_idle, wait_transcript};

const TOOLS: &str = "[tools]\nenabled = [\"file_read\", \"file_write\", \"file_edit\"]\n[policy]\nmode = \"autonomous\"\n";

fn workspace(app: &TestApp, chat: &str) -> PathBuf {
    app.config
        .gateway
        .data_dir
        .join("workspaces/fake")
        .join(chat)
}

/// Stored contents of every conversation's checkpoints.
fn blob_count(app: &TestApp) -> usize {
    let root = app.config.gateway.data_dir.join("checkpoints");
    let dirs = std::fs::read_dir(root).map(|d| d.flatten().collect::<Vec<_>>());
    dirs.unwrap_or_default()
        .iter()
        .map(|d| std::fs::read_dir(d.path().join("blobs")).map_or(0, |b| b.count()))
        .sum()
}

/// Say `text` in `chat` and wait for the answer (the newest message of the transcript).
async fn say(app: &TestApp, chat: &ConversationKey, text: &str) -> String {
    let before = app.channel.transcript(chat).len();
    app.channel.say(chat, "u1", text).await.unwrap();
    let t = wait_transcript(&app.channel, chat, |t| t.len() > before).await;
    wait_inbox_idle(&app.store()).await;
    app.channel
        .transcript(chat)
        .last()
        .cloned()
        .unwrap_or_else(|| t[before].clone())
}

#[tokio::test]
async fn rewinding_to_one_restores_the_first_version_and_cuts_the_history_even_after_a_restart() {
    let mut app = TestApp::spawn_with(TOOLS).await;
    let chat = key("rw");
    app.llm
        .push(Reply::tool_call(
            "file_write",
            json!({"path": "notes.txt", "content": "first version\n"}),
        ))
        .push(Reply::tool_call(
            "file_edit",
            json!({"path": "notes.txt", "old": "first", "new": "second"}),
        ))
        .push(Reply::text("Written and edited."));
    say(&app, &chat, "write then edit").await;
    let notes = workspace(&app, "rw").join("notes.txt");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "second version\n");

    let listing = say(&app, &chat, "/rewind").await;
    assert!(
        listing.contains("#0") && listing.contains("#1"),
        "{listing}"
    );
    assert!(
        listing.contains("file_edit") && listing.contains("notes.txt"),
        "{listing}"
    );
    let payloads: Vec<String> = app
        .channel
        .last_buttons(&chat)
        .into_iter()
        .map(|b| b.payload)
        .collect();
    assert_eq!(payloads, ["rw:1", "rw:0"]);

    app.restart().await;
    app.channel.press(&chat, "u1", "rw:1").await.unwrap();
    let t = wait_transcript(&app.channel, &chat, |t| {
        t.iter().any(|m| m.contains("Restored"))
    })
    .await;
    wait_inbox_idle(&app.store()).await;
    let answer = t.iter().find(|m| m.contains("Restored")).unwrap();
    assert!(
        answer.contains("checkpoint #1") && answer.contains("ends before that call"),
        "{answer}"
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "first version\n");

    let history = app.store().history(&chat, 100).await.unwrap();
    let last = history.last().unwrap();
    assert_eq!(
        last.role,
        Role::Tool,
        "the write's result ends it: {history:#?}"
    );
    assert!(
        history
            .iter()
            .all(|m| m.tool_calls.iter().all(|c| c.name != "file_edit"))
    );
    assert!(
        history
            .iter()
            .any(|m| m.tool_calls.iter().any(|c| c.name == "file_write"))
    );
    let audit = wait_audit(&app, &chat, 3).await;
    let rewind = audit
        .iter()
        .find(|e| e.tool == "rewind")
        .expect("the restore is audited");
    assert_eq!(rewind.decided_by.as_deref(), Some("u1"));
    assert!(rewind.args.contains("\"checkpoint\":1"));

    // Checkpoint 1 is now the present: the list offers only #0 until the next change.
    let listing = say(&app, &chat, "/rewind").await;
    assert!(
        listing.contains("#0") && !listing.contains("#1"),
        "{listing}"
    );
    let gone = say(&app, &chat, "/rewind 1").await;
    assert!(gone.contains("no checkpoint #1"), "{gone}");
}

#[tokio::test]
async fn unchanged_contents_are_stored_once_and_past_the_count_the_oldest_are_dropped() {
    let app = TestApp::spawn_with(&format!("{TOOLS}[checkpoints]\nmax_count = 2\n")).await;
    let chat = key("cap");
    let big = "x".repeat(10_000);
    app.llm
        .push(Reply::tool_call(
            "file_write",
            json!({"path": "big.txt", "content": big}),
        ))
        .push(Reply::tool_call(
            "file_write",
            json!({"path": "a.txt", "content": "1"}),
        ))
        .push(Reply::tool_call(
            "file_write",
            json!({"path": "a.txt", "content": "2"}),
        ))
        .push(Reply::tool_call(
            "file_write",
            json!({"path": "a.txt", "content": "3"}),
        ))
        .push(Reply::text("Done."));
    say(&app, &chat, "write a lot").await;
    // Kept: #2 (big, a=1) and #3 (big, a=2): three contents, big.txt once.
    assert_eq!(blob_count(&app), 3);
    let listing = say(&app, &chat, "/rewind").await;
    assert!(
        listing.contains("#2") && listing.contains("#3"),
        "{listing}"
    );
    assert!(
        !listing.contains("#0") && !listing.contains("#1"),
        "{listing}"
    );
    let done = say(&app, &chat, "/rewind 2").await;
    assert!(done.contains("Restored"), "{done}");
    let ws = workspace(&app, "cap");
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "1");
    assert_eq!(std::fs::read_to_string(ws.join("big.txt")).unwrap(), big);
}

#[tokio::test]
async fn past_the_byte_cap_the_oldest_checkpoints_are_dropped_but_never_the_newest() {
    let app = TestApp::spawn_with(&format!("{TOOLS}[checkpoints]\nmax_bytes = 15000\n")).await;
    let chat = key("bytes");
    for fill in ["a", "b", "c"] {
        let content = fill.repeat(8000);
        app.llm.push(Reply::tool_call(
            "file_write",
            json!({"path": "x.txt", "content": content}),
        ));
    }
    app.llm.push(Reply::text("Done."));
    say(&app, &chat, "write three times").await;
    // #1 (8,000 bytes) and #2 (another 8,000) would pass 15,000: only #2 stays.
    let listing = say(&app, &chat, "/rewind").await;
    assert!(
        listing.contains("#2") && !listing.contains("#1"),
        "{listing}"
    );
    assert_eq!(blob_count(&app), 1);
}

#[tokio::test]
async fn a_symlink_pointing_outside_the_workspace_is_not_followed_nor_restored_through() {
    let app = TestApp::spawn_with(TOOLS).await;
    let chat = key("link");
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "outside content").unwrap();
    let ws = workspace(&app, "link");
    std::fs::create_dir_all(&ws).unwrap();
    std::os::unix::fs::symlink(&secret, ws.join("link")).unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.join("dir")).unwrap();
    app.llm
        .push(Reply::tool_call(
            "file_write",
            json!({"path": "a.txt", "content": "mine"}),
        ))
        .push(Reply::text("Done."));
    say(&app, &chat, "write").await;
    assert_eq!(blob_count(&app), 0, "nothing behind the links was stored");
    let done = say(&app, &chat, "/rewind 0").await;
    assert!(done.contains("`link` (a symlink, not followed)"), "{done}");
    assert!(!ws.join("a.txt").exists());
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "outside content");
    assert!(
        std::fs::symlink_metadata(ws.join("link"))
            .unwrap()
            .is_symlink()
    );
    assert!(outside.path().join("secret.txt").exists());
}
