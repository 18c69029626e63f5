//! The checkpoint half of the store on SQLite and PostgreSQL: numbering, listing, dropping,
//! and the history cut of a rewind (before the assistant message that made the call, even
//! when an earlier turn reused the call id).

use std::sync::Arc;

use serde_json::json;
use switchboard::ids::InboxKind;
use switchboard::provider::{ChatMessage, Role, ToolCall};
use switchboard::store::{NewCheckpoint, Store};
use switchboard_channel::ConversationKey;

use crate::helpers::{direct_message, drop_postgres, postgres_url, sqlite_store};

/// Finish one turn of `chat` that stored `messages`.
async fn turn(store: &Arc<dyn Store>, chat: &ConversationKey, id: &str, messages: &[ChatMessage]) {
    let event = direct_message(chat, id, "hi");
    store
        .insert_event(&event, InboxKind::Message, 0)
        .await
        .unwrap();
    let row = store
        .claim_next(chat, "t", 0, std::time::Duration::from_secs(5))
        .await
        .unwrap()
        .unwrap();
    store
        .complete(row.claim(), chat, messages, None, 0)
        .await
        .unwrap();
}

fn calling(id: &str) -> Vec<ChatMessage> {
    let mut assistant = ChatMessage::new(Role::Assistant, "");
    assistant.tool_calls = vec![ToolCall {
        id: id.into(),
        name: "file_edit".into(),
        args: json!({"path": "a"}),
    }];
    vec![
        ChatMessage::new(Role::User, "edit it"),
        assistant,
        ChatMessage::tool_result(id, "ok"),
        ChatMessage::new(Role::Assistant, "done"),
    ]
}

fn new(call_id: &str, after_message: i64) -> NewCheckpoint {
    NewCheckpoint {
        created_at: 1,
        tool: "file_edit".into(),
        summary: "a\0b".into(),
        call_id: call_id.into(),
        after_message,
        manifest: "{}".into(),
    }
}

async fn contract(store: Arc<dyn Store>) {
    let chat = ConversationKey::new("fake", "cp");
    let other = ConversationKey::new("fake", "other");
    assert_eq!(store.history_position(&chat).await.unwrap(), 0);
    turn(&store, &chat, "e1", &calling("call_0")).await;
    let after_first = store.history_position(&chat).await.unwrap();
    assert!(after_first > 0);
    assert_eq!(
        store
            .add_checkpoint(&chat, &new("call_0", after_first))
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        store.add_checkpoint(&other, &new("x", 0)).await.unwrap(),
        0,
        "per conversation"
    );
    turn(&store, &chat, "e2", &calling("call_0")).await;
    assert_eq!(
        store
            .add_checkpoint(&chat, &new("call_1", after_first))
            .await
            .unwrap(),
        1
    );
    let all = store.checkpoints(&chat).await.unwrap();
    assert_eq!(all.iter().map(|c| c.number).collect::<Vec<_>>(), [0, 1]);
    assert_eq!(all[0].new.summary, "a\0b", "text comes back exactly");

    // The reused id "call_0": the cut is at the second turn's call, not the first's.
    let removed = store.rewind_to(&chat, &all[0]).await.unwrap();
    assert_eq!(removed, Some(3));
    let history = store.history(&chat, 100).await.unwrap();
    assert_eq!(
        history.len(),
        5,
        "first turn whole, then the user's message"
    );
    assert_eq!(history.last().unwrap().content, "edit it");
    let left = store.checkpoints(&chat).await.unwrap();
    assert_eq!(left.len(), 1);
    assert!(left[0].reopened());
    // The next checkpoint takes the reopened one's number.
    assert_eq!(
        store
            .add_checkpoint(&chat, &new("call_2", 5))
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        store
            .add_checkpoint(&chat, &new("call_3", 5))
            .await
            .unwrap(),
        1
    );
    let gone = store.checkpoints(&chat).await.unwrap();
    assert_eq!(
        store.rewind_to(&chat, &gone[1]).await.unwrap(),
        None,
        "call not in history"
    );
    store.drop_checkpoints(&chat, &[0, 1]).await.unwrap();
    assert!(store.checkpoints(&chat).await.unwrap().is_empty());
    assert_eq!(store.checkpoints(&other).await.unwrap().len(), 1);
}

#[tokio::test]
async fn checkpoints_number_list_and_cut_the_history_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    contract(sqlite_store(&dir).await).await;
}

#[tokio::test]
async fn checkpoints_number_list_and_cut_the_history_on_postgres() {
    let Some(url) = postgres_url().await else {
        return;
    };
    contract(switchboard::store::connect(&url).await.unwrap()).await;
    drop_postgres(&url).await;
}
