//! The store query behind "a thread the bot is part of" (`Store::knows_conversation`), on
//! SQLite and PostgreSQL: known from the moment its first event waits in the inbox, through
//! its answer and a `/new`, and never for another thread.

use std::sync::Arc;
use std::time::Duration;

use switchboard::ids::InboxKind;
use switchboard::provider::{ChatMessage, Role};
use switchboard::store::Store;
use switchboard_channel::{ChannelEvent, ConversationKey, Inbound, Place, UserRef};

use super::{CHANNEL, USER};
use crate::store_contract::on_both_databases;

#[tokio::test]
async fn the_store_knows_a_conversation_from_its_first_waiting_event_through_new() {
    on_both_databases(knows_from_waiting_to_cleared).await;
}

/// What `knows_conversation` answers as a thread's first event waits, is claimed, is
/// answered, and its history is cleared with `/new`.
async fn knows_from_waiting_to_cleared(store: Arc<dyn Store>) {
    let thread = ConversationKey::new("slack", CHANNEL).in_thread("1.0");
    let (other, lease) = (thread.clone().in_thread("2.0"), Duration::from_secs(60));
    assert!(!store.knows_conversation(&thread).await.unwrap());
    let event = ChannelEvent::Message(Inbound {
        key: thread.clone(),
        event_id: format!("{CHANNEL}:1.0"),
        user: UserRef {
            id: USER.into(),
            name: None,
        },
        text: "start here".into(),
        place: Place::group(CHANNEL),
        attachments: Vec::new(),
    });
    store
        .insert_event(&event, InboxKind::Message, 1)
        .await
        .unwrap();
    assert!(store.knows_conversation(&thread).await.unwrap(), "waiting");
    let row = store.claim_next(&thread, "me", 2, lease).await;
    let row = row.unwrap().expect("claimed");
    assert!(store.knows_conversation(&thread).await.unwrap(), "claimed");
    let answer = [ChatMessage::new(Role::Assistant, "Started.")];
    store
        .complete(row.claim(), &thread, &answer, None, 3)
        .await
        .unwrap();
    assert!(store.knows_conversation(&thread).await.unwrap(), "answered");
    store.clear_history(&thread).await.unwrap();
    assert!(
        store.knows_conversation(&thread).await.unwrap(),
        "after /new"
    );
    assert!(
        !store.knows_conversation(&other).await.unwrap(),
        "another thread"
    );
}
