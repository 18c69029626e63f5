//! Output offloading and size-triggered compaction through the whole gateway: a megabyte of
//! tool output leaves a small history row and a file in the workspace the model can read by
//! line range; a history of a few large messages is compacted like a long one.

use serde_json::json;
use switchboard::ids::InboxKind;
use switchboard::memory::SUMMARY_HEADER;
use switchboard::provider::{ChatMessage, Role};
use switchboard::store::Store;
use switchboard_channel::{ChannelEvent, ConversationKey, Inbound, Place, UserRef};
use switchboard_standins::Reply;

use crate::helpers::{TestApp, key, wait_inbox_idle, wait_transcript};

const TOOLS: &str = "[tools]\nenabled = [\"shell\", \"file_read\", \"file_write\"]\n[policy]\nmode = \"autonomous\"\n";

/// The workspace path the offloading note names.
fn saved_path(note: &str) -> String {
    let at = note.find("tool-output/").expect("the note names the file");
    let end = note[at..].find('`').expect("the path is quoted");
    note[at..at + end].to_owned()
}

fn tool_message(request: &serde_json::Value) -> String {
    let messages = request["messages"].as_array().unwrap();
    let tool = messages.iter().rev().find(|m| m["role"] == "tool").unwrap();
    tool["content"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_megabyte_tool_result_is_offloaded_to_a_file_the_model_reads_by_line_range() {
    let app = TestApp::spawn_with(TOOLS).await;
    // 1,078,895 bytes of numbers, cut by the shell tool at its 1 MiB cap.
    app.llm
        .push(Reply::tool_call(
            "shell",
            json!({"command": "seq 1 170000"}),
        ))
        .push(Reply::text("Counted."));
    let chat = key("big");
    app.channel.say(&chat, "u1", "count a lot").await.unwrap();
    wait_transcript(&app.channel, &chat, |t| t.len() == 1).await;
    wait_inbox_idle(&app.store()).await;
    let second = &app.llm.requests()[1];
    let note = tool_message(second);
    assert!(note.contains("saved in full"), "{}", &note[..200]);
    assert!(
        second.to_string().len() < 24 * 1024,
        "the next request stays bounded: {} bytes",
        second.to_string().len()
    );
    let path = saved_path(&note);
    let file = app
        .config
        .gateway
        .data_dir
        .join("workspaces/fake/big")
        .join(&path);
    let saved = std::fs::read_to_string(&file).unwrap();
    assert!(
        saved.len() > 1024 * 1024,
        "the whole output: {}",
        saved.len()
    );
    assert!(saved.starts_with("exit code: 0\n1\n2\n"));

    // Next turn: the model reads lines 100001..=100003 (line 1 is the exit code).
    app.llm
        .push(Reply::tool_call(
            "file_read",
            json!({"path": path, "start_line": 100_001, "end_line": 100_003}),
        ))
        .push(Reply::text("Found them."));
    app.channel
        .say(&chat, "u1", "show me 100000")
        .await
        .unwrap();
    wait_transcript(&app.channel, &chat, |t| t.len() == 2).await;
    wait_inbox_idle(&app.store()).await;
    let read = tool_message(&app.llm.requests()[3]);
    assert_eq!(read, "100000\n100001\n100002\n");
    let history = app.store().history(&chat, 100).await.unwrap();
    for m in &history {
        assert!(
            m.content.len() < 20 * 1024,
            "a history row of {} bytes",
            m.content.len()
        );
    }
    let total: usize = history.iter().map(|m| m.content.len()).sum();
    assert!(total < 40 * 1024, "history of {total} bytes");
}

/// Store `messages` as `chat`'s history through one completed inbox event.
async fn seed(store: &std::sync::Arc<dyn Store>, chat: &ConversationKey, messages: &[ChatMessage]) {
    let event = ChannelEvent::Message(Inbound {
        key: chat.clone(),
        event_id: "seed".into(),
        user: UserRef {
            id: "u1".into(),
            name: None,
        },
        text: "seed".into(),
        place: Place::Direct,
        attachments: Vec::new(),
    });
    store
        .insert_event(&event, InboxKind::Message, 0)
        .await
        .unwrap();
    let row = store
        .claim_next(chat, "seeder", 0, std::time::Duration::from_secs(1))
        .await
        .unwrap()
        .unwrap();
    store
        .complete(row.claim(), chat, messages, None, 0)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_history_of_four_large_messages_is_compacted_by_size() {
    let app = TestApp::spawn_with("[memory]\nmax_history_chars = 100000\n").await;
    let chat = key("few-large");
    let messages: Vec<ChatMessage> = (0..4)
        .map(|i| {
            let role = if i % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            };
            ChatMessage::new(role, format!("part {i}: {}", "x".repeat(40_000)))
        })
        .collect();
    seed(&app.store(), &chat, &messages).await;
    app.llm
        .push(Reply::text("Summary: four long parts."))
        .push(Reply::text("fresh answer"));
    app.channel.say(&chat, "u1", "next").await.unwrap();
    wait_transcript(&app.channel, &chat, |t| t == ["fresh answer"]).await;
    wait_inbox_idle(&app.store()).await;
    assert_eq!(app.llm.requests().len(), 2, "a summary call, then the turn");
    let history = app.store().history(&chat, 100).await.unwrap();
    assert_eq!(history[0].role, Role::System);
    assert!(history[0].content.starts_with(SUMMARY_HEADER));
    let total: usize = history.iter().map(|m| m.content.len()).sum();
    assert!(total <= 100_000, "history still {total} chars");
    assert!(
        history.iter().any(|m| m.content.starts_with("part 3")),
        "the newest part within half the limit stays verbatim"
    );
    let turn = app.llm.requests()[1].to_string().len();
    assert!(turn < 60_000, "the turn's request is {turn} bytes");
}
