//! Memory end to end: recall across a restart, scope isolation, autosave rules (no recall
//! snowball), the memory tools, `/forget`, and compaction that keeps tool pairs intact.

use std::sync::Arc;

use serde_json::json;
use switchboard::ids::{InboxKind, MemoryScope};
use switchboard::memory::{RECALL_HEADER, SUMMARY_HEADER};
use switchboard::provider::{ChatMessage, Role, ToolCall};
use switchboard::store::Store;
use switchboard_channel::ConversationKey;
use switchboard_standins::Reply;

use crate::helpers::{TestApp, drop_postgres, key, postgres_url, wait_inbox_idle, wait_transcript};

const FACT: &str = "My cat is called Miso and she likes turquoise blankets.";

fn system_texts(request: &serde_json::Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "system")
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn a_fact_told_in_one_turn_is_recalled_after_a_restart() {
    let mut app = TestApp::spawn().await;
    let chat = key("recall");
    app.channel.say(&chat, "u1", FACT).await.unwrap();
    wait_transcript(&app.channel, &chat, |t| t.len() == 1).await;
    wait_inbox_idle(&app.store()).await;
    app.restart().await;
    app.channel
        .say(&chat, "u1", "what is my cat called?")
        .await
        .unwrap();
    wait_transcript(&app.channel, &chat, |t| t.len() == 2).await;
    let last = app.llm.requests().pop().unwrap();
    let recalled = system_texts(&last)
        .into_iter()
        .find(|t| t.starts_with(RECALL_HEADER))
        .expect("a recall message");
    assert!(recalled.contains("called Miso"), "{recalled}");
}

#[tokio::test]
async fn memory_of_one_conversation_never_reaches_another() {
    let app = TestApp::spawn().await;
    app.channel.say(&key("a"), "u1", FACT).await.unwrap();
    wait_transcript(&app.channel, &key("a"), |t| t.len() == 1).await;
    wait_inbox_idle(&app.store()).await;
    app.channel
        .say(&key("b"), "u1", "what is my cat called?")
        .await
        .unwrap();
    wait_transcript(&app.channel, &key("b"), |t| t.len() == 1).await;
    let last = app.llm.requests().pop().unwrap();
    assert!(
        !last["messages"].to_string().contains("Miso"),
        "conversation b saw a's memory"
    );
}

#[tokio::test]
async fn with_user_scope_memory_follows_the_user_but_not_other_users() {
    let app = TestApp::spawn_with("[memory]\nscope = \"user\"\n").await;
    app.channel.say(&key("a"), "alice", FACT).await.unwrap();
    wait_transcript(&app.channel, &key("a"), |t| t.len() == 1).await;
    wait_inbox_idle(&app.store()).await;
    app.channel
        .say(&key("b"), "bob", "what is the cat called?")
        .await
        .unwrap();
    wait_transcript(&app.channel, &key("b"), |t| t.len() == 1).await;
    assert!(
        !app.llm.requests().pop().unwrap()["messages"]
            .to_string()
            .contains("Miso"),
        "bob saw alice's memory"
    );
    app.channel
        .say(&key("c"), "alice", "what is my cat called?")
        .await
        .unwrap();
    wait_transcript(&app.channel, &key("c"), |t| t.len() == 1).await;
    assert!(
        app.llm.requests().pop().unwrap()["messages"]
            .to_string()
            .contains("Miso"),
        "alice's memory follows her"
    );
}

#[tokio::test]
async fn autosave_skips_short_messages_commands_and_recalled_text_so_nothing_snowballs() {
    let app = TestApp::spawn().await;
    let chat = key("autosave");
    let texts = [
        FACT,
        "ok thanks",
        "/help",
        "Tell me again about Miso and her blankets please",
        FACT,
    ];
    for (i, text) in texts.iter().enumerate() {
        app.channel.say(&chat, "u1", text).await.unwrap();
        wait_transcript(&app.channel, &chat, |t| t.len() == i + 1).await;
        wait_inbox_idle(&app.store()).await;
    }
    let pasted = format!("{RECALL_HEADER}\n- {FACT} (pasted back by the user)");
    app.channel.say(&chat, "u1", &pasted).await.unwrap();
    wait_transcript(&app.channel, &chat, |t| t.len() == texts.len() + 1).await;
    wait_inbox_idle(&app.store()).await;
    let saved = app
        .store()
        .memories(Some(&MemoryScope::Conversation(chat.clone())), 100)
        .await
        .unwrap();
    let mut contents: Vec<&str> = saved.iter().map(|m| m.content.as_str()).collect();
    contents.sort();
    assert_eq!(
        contents,
        vec![FACT, "Tell me again about Miso and her blankets please"],
        "the recall was injected into later turns but never saved"
    );
}

#[tokio::test]
async fn the_memory_tools_store_recall_and_forget_within_the_conversation() {
    let app = TestApp::spawn().await;
    app.llm
        .push(Reply::tool_call(
            "memory_store",
            json!({"key": "server", "content": "The home server runs Debian 12."}),
        ))
        .push(Reply::text("Noted."))
        .push(Reply::tool_call(
            "memory_recall",
            json!({"query": "which debian server"}),
        ))
        .push(Reply::text("Debian 12."));
    let chat = key("tools");
    app.channel.say(&chat, "u1", "remember it").await.unwrap();
    wait_transcript(&app.channel, &chat, |t| t == ["Noted."]).await;
    app.channel.say(&chat, "u1", "which os?").await.unwrap();
    wait_transcript(&app.channel, &chat, |t| {
        t.len() == 2 && t[1] == "Debian 12."
    })
    .await;
    let recall_result = app.llm.requests()[3]["messages"].to_string();
    assert!(
        recall_result.contains("server: The home server runs Debian 12."),
        "{recall_result}"
    );
    app.channel.say(&chat, "u1", "/forget").await.unwrap();
    wait_transcript(&app.channel, &chat, |t| t.len() == 3).await;
    wait_inbox_idle(&app.store()).await;
    assert!(
        app.store()
            .memories(Some(&MemoryScope::Conversation(chat.clone())), 10)
            .await
            .unwrap()
            .is_empty()
    );
}

/// 51 stored messages: user/assistant pairs with a tool call whose results straddle the
/// point where "keep the newest 20" would cut.
async fn seed_long_history(store: &Arc<dyn Store>, chat: &ConversationKey) {
    let mut messages = Vec::new();
    for i in 0..15 {
        messages.push(ChatMessage::new(
            Role::User,
            format!("question {i}: how do I configure part {i}?"),
        ));
        messages.push(ChatMessage::new(
            Role::Assistant,
            format!("answer {i}: set option {i} in the file."),
        ));
    }
    let mut call = ChatMessage::new(Role::Assistant, "");
    call.tool_calls = (0..3)
        .map(|i| ToolCall {
            id: format!("t{i}"),
            name: "file_read".into(),
            args: json!({"path": format!("f{i}")}),
        })
        .collect();
    messages.push(call);
    messages
        .extend((0..3).map(|i| ChatMessage::tool_result(format!("t{i}"), format!("content {i}"))));
    while messages.len() < 51 {
        let n = messages.len();
        messages.push(ChatMessage::new(
            if n % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            },
            format!("later message {n}"),
        ));
    }
    store
        .insert_event(
            &switchboard_channel::ChannelEvent::Message(switchboard_channel::Inbound {
                key: chat.clone(),
                event_id: "seed".into(),
                user: switchboard_channel::UserRef {
                    id: "u1".into(),
                    name: None,
                },
                text: "seed".into(),
                place: switchboard_channel::Place::Direct,
                attachments: Vec::new(),
            }),
            InboxKind::Message,
            0,
        )
        .await
        .unwrap();
    let row = store
        .claim_next(chat, "seeder", 0, std::time::Duration::from_secs(1))
        .await
        .unwrap()
        .unwrap();
    store
        .complete(row.claim(), chat, &messages, None, 0)
        .await
        .unwrap();
}

fn assert_compacted(history: &[ChatMessage]) {
    assert_eq!(history[0].role, Role::System);
    assert!(history[0].content.starts_with(SUMMARY_HEADER));
    assert!(
        history[0].content.chars().count() <= SUMMARY_HEADER.len() + 1 + 2000,
        "summary too long"
    );
    assert_ne!(
        history[1].role,
        Role::Tool,
        "a tool result was cut from its call"
    );
    for (i, m) in history
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::Tool)
    {
        let id = m.tool_call_id.as_deref().unwrap();
        assert!(
            history[..i]
                .iter()
                .any(|c| c.tool_calls.iter().any(|t| t.id == id)),
            "result {id} lost its call"
        );
    }
}

#[tokio::test]
async fn fifty_one_messages_compact_to_a_summary_and_the_recent_twenty_with_tool_pairs_intact() {
    let app = TestApp::spawn().await;
    let chat = key("compact");
    seed_long_history(&app.store(), &chat).await;
    app.llm
        .push(Reply::text("S".repeat(5000)))
        .push(Reply::text("fresh answer"));
    app.channel.say(&chat, "u1", "next question").await.unwrap();
    wait_transcript(&app.channel, &chat, |t| t == ["fresh answer"]).await;
    wait_inbox_idle(&app.store()).await;
    let history = app.store().history(&chat, 1000).await.unwrap();
    assert_compacted(&history);
    let kept = history.len() - 1 - 2; // summary, then kept, then this turn's user + answer
    assert!((20..=23).contains(&kept), "kept {kept} messages");
    let summariser = &app.llm.requests()[0];
    assert!(
        summariser["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("decisions"),
        "the summary prompt keeps decisions"
    );
}

#[tokio::test]
async fn a_failing_summariser_falls_back_to_a_digest_and_the_turn_still_runs() {
    let app = TestApp::spawn().await;
    let chat = key("digest");
    seed_long_history(&app.store(), &chat).await;
    for _ in 0..3 {
        app.llm.push(Reply::Status(500, None));
    }
    app.llm.push(Reply::text("answered anyway"));
    app.channel.say(&chat, "u1", "next question").await.unwrap();
    wait_transcript(&app.channel, &chat, |t| t == ["answered anyway"]).await;
    wait_inbox_idle(&app.store()).await;
    let history = app.store().history(&chat, 1000).await.unwrap();
    assert_compacted(&history);
    assert!(
        history[0].content.contains("- user: question 0"),
        "{}",
        history[0].content
    );
}

#[tokio::test]
async fn a_fact_is_recalled_after_a_restart_on_postgres_too() {
    let Some(url) = postgres_url().await else {
        return;
    };
    let mut app = TestApp::builder().database(&url).start().await;
    let channel = Arc::clone(&app.channel);
    let chat = key("pg");
    channel.say(&chat, "u1", FACT).await.unwrap();
    wait_transcript(&channel, &chat, |t| t.len() == 1).await;
    wait_inbox_idle(&app.store()).await;
    app.restart().await;
    channel
        .say(&chat, "u1", "what is my cat called?")
        .await
        .unwrap();
    wait_transcript(&channel, &chat, |t| t.len() == 2).await;
    assert!(
        app.llm.requests().pop().unwrap()["messages"]
            .to_string()
            .contains("called Miso")
    );
    app.shutdown().await;
    drop_postgres(&url).await;
}
