//! The store's half of the cluster contract, on SQLite and PostgreSQL alike: conversation
//! leases and their epochs, writes fenced on the epoch a turn started with, and
//! per-conversation sequence numbers.

use std::sync::Arc;
use std::time::Duration;

use switchboard::ids::InboxKind;
use switchboard::provider::{ChatMessage, Role};
use switchboard::store::{Insert, Store, StoreError};
use switchboard_channel::{ChannelEvent, ConversationKey, MessageRef};

use crate::helpers::direct_message as event;
use crate::store_contract::on_both_databases;

const TTL: Duration = Duration::from_secs(60);
const ROW_LEASE: Duration = Duration::from_secs(600);

fn text_of(event: &ChannelEvent) -> &str {
    match event {
        ChannelEvent::Message(m) => &m.text,
        ChannelEvent::Button(_) => "",
    }
}

async fn store_event(store: &Arc<dyn Store>, key: &ConversationKey, id: &str, text: &str) {
    let stored = store
        .insert_event(&event(key, id, text), InboxKind::Message, 1)
        .await
        .unwrap();
    assert!(matches!(stored, Insert::Stored(_)), "{id} stored");
}

/// Let a lease taken with a tiny TTL run out by the database's clock.
async fn expire() {
    tokio::time::sleep(Duration::from_millis(30)).await;
}

#[tokio::test]
async fn a_takeover_increments_the_epoch_and_a_live_lease_is_refused_to_others() {
    on_both_databases(takeover_increments_the_epoch).await;
}

async fn takeover_increments_the_epoch(store: Arc<dyn Store>) {
    let k = ConversationKey::new("fake", "lease");
    let first = store.acquire_conversation(&k, "a", TTL).await.unwrap();
    assert_eq!(first, Some(1));
    assert_eq!(
        store.acquire_conversation(&k, "b", TTL).await.unwrap(),
        None
    );
    assert!(store.renew_conversation(&k, "a", 1, TTL).await.unwrap());
    assert!(store.release_conversation(&k, "a", 1).await.unwrap());
    assert_eq!(
        store.acquire_conversation(&k, "b", TTL).await.unwrap(),
        Some(2)
    );
    assert!(
        !store.renew_conversation(&k, "a", 1, TTL).await.unwrap(),
        "the old holder cannot renew"
    );
    let row = store.conversation_lease(&k).await.unwrap().unwrap();
    assert_eq!((row.owner.as_str(), row.epoch, row.live), ("b", 2, true));
    // An expired lease is free for anyone, and the epoch grows again.
    let short = Duration::from_millis(1);
    assert!(store.release_conversation(&k, "b", 2).await.unwrap());
    assert_eq!(
        store.acquire_conversation(&k, "c", short).await.unwrap(),
        Some(3)
    );
    expire().await;
    assert!(!store.renew_conversation(&k, "c", 3, TTL).await.unwrap());
    assert_eq!(
        store.acquire_conversation(&k, "a", TTL).await.unwrap(),
        Some(4)
    );
    // Its own owner (a restart with the same configured id) takes a live lease back at once.
    assert_eq!(
        store.acquire_conversation(&k, "a", TTL).await.unwrap(),
        Some(5)
    );
    assert_eq!(store.release_all_conversations("a").await.unwrap(), 1);
    assert!(!store.conversation_lease(&k).await.unwrap().unwrap().live);
}

#[tokio::test]
async fn a_write_under_a_stale_epoch_is_refused_and_the_new_owner_finishes_the_event() {
    on_both_databases(stale_epoch_writes_are_refused).await;
}

async fn stale_epoch_writes_are_refused(store: Arc<dyn Store>) {
    let k = ConversationKey::new("fake", "fence");
    store_event(&store, &k, "e1", "hello").await;
    let short = Duration::from_millis(1);
    let old = store
        .acquire_conversation(&k, "a", short)
        .await
        .unwrap()
        .unwrap();
    let a_row = store
        .claim_leased(&k, "a", 10, ROW_LEASE, old)
        .await
        .unwrap()
        .expect("a claims under its lease");
    assert_eq!(a_row.epoch, old);
    // A pauses past its lease; B takes the conversation over.
    expire().await;
    let new = store
        .acquire_conversation(&k, "b", TTL)
        .await
        .unwrap()
        .unwrap();
    assert!(new > old);
    let answer = [ChatMessage::new(Role::Assistant, "from a")];
    let stale = store.complete(a_row.claim(), &k, &answer, None, 20).await;
    assert!(
        matches!(stale, Err(StoreError::Fenced(e)) if e == old),
        "{stale:?}"
    );
    let refs = [MessageRef::new("m1")];
    let stale = store.set_draft_refs(a_row.claim(), &refs).await;
    assert!(matches!(stale, Err(StoreError::Fenced(_))), "{stale:?}");
    let stale = store.fail(a_row.claim(), "late", 20).await;
    assert!(matches!(stale, Err(StoreError::Fenced(_))), "{stale:?}");
    // A stale claim under an outdated epoch claims nothing either.
    let none = store
        .claim_leased(&k, "a", 30, ROW_LEASE, old)
        .await
        .unwrap();
    assert!(none.is_none());
    // B takes over the row A left processing, although its row lease has not run out.
    let b_row = store
        .claim_leased(&k, "b", 30, ROW_LEASE, new)
        .await
        .unwrap()
        .expect("the new owner takes the row over");
    assert_eq!((b_row.id, b_row.attempts), (a_row.id, 2));
    store.set_draft_refs(b_row.claim(), &refs).await.unwrap();
    let answer = [ChatMessage::new(Role::Assistant, "from b")];
    store
        .complete(b_row.claim(), &k, &answer, None, 40)
        .await
        .unwrap();
    let history = store.history(&k, 10).await.unwrap();
    let texts: Vec<&str> = history.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(
        texts,
        ["from b"],
        "only the current owner's answer is stored"
    );
}

#[tokio::test]
async fn an_approval_decided_under_a_stale_epoch_is_refused() {
    on_both_databases(stale_epoch_approval_is_refused).await;
}

async fn stale_epoch_approval_is_refused(store: Arc<dyn Store>) {
    use switchboard::ids::{ApprovalId, ApprovalStatus};
    use switchboard::store::Approval;
    let k = ConversationKey::new("fake", "approve");
    let id = ApprovalId::new("fence00001");
    let approval = Approval {
        id: id.clone(),
        conversation: k.clone(),
        tool: "shell".into(),
        args: "ls".into(),
        rule: "shell(ls)".into(),
        reason: "asks".into(),
        requester: "u1".into(),
        status: ApprovalStatus::Pending,
        decided_by: None,
        prompt_ref: None,
        state: "{}".into(),
        created_at: 10,
        expires_at: i64::MAX / 2,
    };
    store.create_approval(&approval).await.unwrap();
    // The button press: a control event, the only kind claimed while an approval waits.
    let press = event(&k, "press", "approve");
    let stored = store.insert_event(&press, InboxKind::Control, 1).await;
    assert!(matches!(stored, Ok(Insert::Stored(_))), "{stored:?}");
    let short = Duration::from_millis(1);
    let old = store
        .acquire_conversation(&k, "a", short)
        .await
        .unwrap()
        .unwrap();
    let row = store
        .claim_leased(&k, "a", 10, ROW_LEASE, old)
        .await
        .unwrap()
        .unwrap();
    expire().await;
    store
        .acquire_conversation(&k, "b", TTL)
        .await
        .unwrap()
        .unwrap();
    let decided = store
        .decide_approval(&id, ApprovalStatus::Approved, "u1", 20, Some(row.claim()))
        .await;
    assert!(matches!(decided, Err(StoreError::Fenced(_))), "{decided:?}");
    let still = store.approval(&id).await.unwrap().unwrap();
    assert_eq!(still.status, ApprovalStatus::Pending);
}

#[tokio::test]
async fn events_are_numbered_per_conversation_and_claimed_in_that_order() {
    on_both_databases(sequence_order).await;
}

async fn sequence_order(store: Arc<dyn Store>) {
    let (k1, k2) = (
        ConversationKey::new("fake", "seq1"),
        ConversationKey::new("fake", "seq2"),
    );
    store_event(&store, &k1, "s1", "one").await;
    store_event(&store, &k2, "s2", "other").await;
    let again = store
        .insert_event(&event(&k1, "s1", "one"), InboxKind::Message, 1)
        .await
        .unwrap();
    assert_eq!(again, Insert::Duplicate);
    store_event(&store, &k1, "s3", "two").await;
    store_event(&store, &k1, "s4", "three").await;
    let epoch = store
        .acquire_conversation(&k1, "a", TTL)
        .await
        .unwrap()
        .unwrap();
    let mut seen = Vec::new();
    while let Some(row) = store
        .claim_leased(&k1, "a", 10, ROW_LEASE, epoch)
        .await
        .unwrap()
    {
        seen.push(text_of(&row.event).to_owned());
        store
            .complete(row.claim(), &k1, &[], None, 20)
            .await
            .unwrap();
    }
    assert_eq!(seen, ["one", "two", "three"]);
}
