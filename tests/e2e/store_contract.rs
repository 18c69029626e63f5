//! One contract for every `Store`: each test is a plain async body run by
//! [`on_both_databases`] against SQLite and PostgreSQL.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use switchboard::ids::InboxKind;
use switchboard::provider::{ChatMessage, Role, ToolCall};
use switchboard::store::{self, Insert, Store, StoreError};
use switchboard_channel::{ChannelEvent, ConversationKey, MessageRef};

use crate::helpers::{direct_message as event, drop_postgres, postgres_url, sqlite_store};

pub(crate) const LEASE: Duration = Duration::from_secs(60);

pub(crate) fn text_of(event: &ChannelEvent) -> &str {
    match event {
        ChannelEvent::Message(m) => &m.text,
        ChannelEvent::Button(_) => "",
    }
}

/// Run one contract case against a fresh SQLite store and, when reachable, a fresh
/// PostgreSQL database of its own (dropped afterwards). Without PostgreSQL the half is
/// skipped with a notice, unless `SWITCHBOARD_REQUIRE_POSTGRES=1` makes that a failure.
pub async fn on_both_databases<F, Fut>(case: F)
where
    F: Fn(Arc<dyn Store>) -> Fut,
    Fut: Future<Output = ()>,
{
    let dir = tempfile::tempdir().unwrap();
    case(sqlite_store(&dir).await).await;
    if let Some(url) = postgres_url().await {
        case(store::connect(&url).await.expect("postgres store")).await;
        drop_postgres(&url).await;
    }
}

#[tokio::test]
async fn inbox_drops_a_redelivered_event() {
    on_both_databases(redelivery_is_a_duplicate).await;
}

async fn redelivery_is_a_duplicate(store: Arc<dyn Store>) {
    let k = ConversationKey::new("tg", "1");
    assert!(matches!(
        store
            .insert_event(&event(&k, "e1", "a"), InboxKind::Message, 1)
            .await
            .unwrap(),
        Insert::Stored(_)
    ));
    assert_eq!(
        store
            .insert_event(&event(&k, "e1", "a"), InboxKind::Message, 2)
            .await
            .unwrap(),
        Insert::Duplicate
    );
    // The same platform id on another channel instance is a different event.
    let other = ConversationKey::new("tg2", "1");
    assert!(matches!(
        store
            .insert_event(&event(&other, "e1", "a"), InboxKind::Message, 3)
            .await
            .unwrap(),
        Insert::Stored(_)
    ));
    assert_eq!(store.inbox_counts().await.unwrap().pending, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_deliveries_each_store_their_event_once_under_its_own_row() {
    on_both_databases(concurrent_deliveries).await;
}

/// Many webhooks at once, every event delivered twice (on SQLite the inserts that meet a
/// group being written are written as the next group): each event is stored exactly once,
/// the id each caller is told is the row holding its event, and every row is claimed once
/// by its conversation's task, the conversations claiming at once.
async fn concurrent_deliveries(store: Arc<dyn Store>) {
    const CONVERSATIONS: usize = 4;
    const EVENTS: usize = 40;
    let key = |c: usize| ConversationKey::new("tg", c.to_string());
    let mut deliveries = tokio::task::JoinSet::new();
    for _copy in 0..2 {
        for c in 0..CONVERSATIONS {
            for i in 0..EVENTS {
                let store = Arc::clone(&store);
                deliveries.spawn(async move {
                    let id = format!("c{c}e{i}");
                    let inbound = event(&key(c), &id, &id);
                    // A webhook answered with an error is delivered again, as platforms do:
                    // on a slow machine a few of these 320 at once wait out the bounded
                    // acquire (nothing written) before a connection is free.
                    let outcome = loop {
                        match store.insert_event(&inbound, InboxKind::Message, 1).await {
                            Err(StoreError::Db(sqlx::Error::PoolTimedOut)) => {
                                tokio::time::sleep(Duration::from_millis(10)).await;
                            }
                            outcome => break outcome,
                        }
                    };
                    (id, outcome.unwrap())
                });
            }
        }
    }
    let mut stored = HashMap::new();
    let mut duplicates = 0;
    while let Some(delivered) = deliveries.join_next().await {
        match delivered.unwrap() {
            (id, Insert::Stored(row)) => assert!(stored.insert(id, row).is_none()),
            (_, Insert::Duplicate) => duplicates += 1,
        }
    }
    assert_eq!(
        (stored.len(), duplicates),
        (CONVERSATIONS * EVENTS, CONVERSATIONS * EVENTS)
    );
    // One task per conversation, as its actor, all at once: claim, record the draft's
    // message id, finish, until the conversation is empty.
    let mut actors = tokio::task::JoinSet::new();
    for c in 0..CONVERSATIONS {
        let store = Arc::clone(&store);
        actors.spawn(async move {
            let mut claimed = Vec::new();
            while let Some(row) = store.claim_next(&key(c), "me", 2, LEASE).await.unwrap() {
                let draft = [MessageRef::new(format!("draft of {}", row.id))];
                store.set_draft_refs(row.claim(), &draft).await.unwrap();
                store
                    .complete(row.claim(), &key(c), &[], None, 3)
                    .await
                    .unwrap();
                claimed.push((text_of(&row.event).to_owned(), row.id));
            }
            claimed
        });
    }
    let mut claimed = HashSet::new();
    while let Some(actor) = actors.join_next().await {
        for (text, id) in actor.unwrap() {
            assert_eq!(stored[&text], id, "{text} is in the row its insert named");
            assert!(claimed.insert(text), "claimed once");
        }
    }
    assert_eq!(claimed.len(), CONVERSATIONS * EVENTS);
}

#[tokio::test]
async fn claims_follow_arrival_order_within_a_conversation() {
    on_both_databases(claims_in_order).await;
}

async fn claims_in_order(store: Arc<dyn Store>) {
    let k = ConversationKey::new("tg", "1").in_thread("7");
    for (i, text) in ["first", "second", "third"].iter().enumerate() {
        store
            .insert_event(&event(&k, &format!("e{i}"), text), InboxKind::Message, 10)
            .await
            .unwrap();
    }
    // A redelivery between two events takes no place in the order.
    let again = event(&k, "e0", "first");
    let again = store.insert_event(&again, InboxKind::Message, 11).await;
    assert_eq!(again.unwrap(), Insert::Duplicate);
    store
        .insert_event(&event(&k, "e3", "fourth"), InboxKind::Message, 12)
        .await
        .unwrap();
    // Another conversation's waiting event is not this one's.
    let other = ConversationKey::new("tg", "1");
    store
        .insert_event(&event(&other, "o1", "elsewhere"), InboxKind::Message, 12)
        .await
        .unwrap();
    for expected in ["first", "second", "third", "fourth"] {
        let row = store
            .claim_next(&k, "me", 20, LEASE)
            .await
            .unwrap()
            .expect("a row");
        assert_eq!(text_of(&row.event), expected);
        assert_eq!(row.attempts, 1);
        let answer = [ChatMessage::new(Role::Assistant, format!("re: {expected}"))];
        let more = store
            .complete(row.claim(), &k, &answer, None, 21)
            .await
            .unwrap();
        // The completion tells whether the actor should claim again.
        assert_eq!(more, expected != "fourth", "after {expected}");
    }
    assert_eq!(store.history(&k, 10).await.unwrap().len(), 4);
    assert!(
        store
            .claim_next(&k, "me", 30, LEASE)
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(store.inbox_counts().await.unwrap().done, 4);
}

#[tokio::test]
async fn another_owners_live_lease_blocks_the_conversation_until_it_expires() {
    on_both_databases(leases).await;
}

async fn leases(store: Arc<dyn Store>) {
    let k = ConversationKey::new("slack", "C1");
    store
        .insert_event(&event(&k, "a", "one"), InboxKind::Message, 0)
        .await
        .unwrap();
    store
        .insert_event(&event(&k, "b", "two"), InboxKind::Message, 0)
        .await
        .unwrap();
    let held = store
        .claim_next(&k, "replica-1", 1_000, LEASE)
        .await
        .unwrap()
        .unwrap();
    // replica-2 may neither take the held row nor jump the queue with the next one.
    assert!(
        store
            .claim_next(&k, "replica-2", 2_000, LEASE)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .claimable_conversations("replica-2", 2_000)
            .await
            .unwrap()
            .contains(&k)
    );
    // After the lease runs out, the row is taken over, attempts counted.
    let later = 1_000 + LEASE.as_millis() as i64 + 1;
    let taken = store
        .claim_next(&k, "replica-2", later, LEASE)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((taken.id, taken.attempts), (held.id, 2));
}

#[tokio::test]
async fn a_restarted_owner_reclaims_its_own_rows_at_once() {
    on_both_databases(own_rows).await;
}

async fn own_rows(store: Arc<dyn Store>) {
    let k = ConversationKey::new("tg", "9");
    store
        .insert_event(&event(&k, "x", "hi"), InboxKind::Message, 0)
        .await
        .unwrap();
    let first = store
        .claim_next(&k, "default", 10, LEASE)
        .await
        .unwrap()
        .unwrap();
    store
        .set_draft_refs(first.claim(), &[MessageRef::new("m-1")])
        .await
        .unwrap();
    // "Crash": the row stays processing. The same owner takes it back immediately.
    assert_eq!(
        store.claimable_conversations("default", 20).await.unwrap(),
        vec![k.clone()]
    );
    let again = store
        .claim_next(&k, "default", 20, LEASE)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.id, first.id);
    assert_eq!(again.draft_refs, vec![MessageRef::new("m-1")]);
}

#[tokio::test]
async fn released_and_failed_rows_move_to_the_right_state() {
    on_both_databases(release_and_fail).await;
}

async fn release_and_fail(store: Arc<dyn Store>) {
    let k = ConversationKey::new("tg", "r");
    store
        .insert_event(&event(&k, "1", "a"), InboxKind::Message, 0)
        .await
        .unwrap();
    store
        .insert_event(&event(&k, "2", "b"), InboxKind::Message, 0)
        .await
        .unwrap();
    let row = store.claim_next(&k, "me", 1, LEASE).await.unwrap().unwrap();
    store.release(row.claim(), 2).await.unwrap();
    assert!(
        store
            .claimable_conversations("someone-else", 3)
            .await
            .unwrap()
            .contains(&k)
    );
    let row = store
        .claim_next(&k, "someone-else", 3, LEASE)
        .await
        .unwrap()
        .unwrap();
    store.fail(row.claim(), "boom", 4).await.unwrap();
    let next = store
        .claim_next(&k, "someone-else", 5, LEASE)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(text_of(&next.event), "b");
    let counts = store.inbox_counts().await.unwrap();
    assert_eq!((counts.failed, counts.processing), (1, 1));
}

#[tokio::test]
async fn completing_a_turn_stores_history_with_tool_calls_atomically() {
    on_both_databases(history).await;
}

async fn history(store: Arc<dyn Store>) {
    let k = ConversationKey::new("web", "s");
    store
        .insert_event(&event(&k, "1", "hi"), InboxKind::Message, 0)
        .await
        .unwrap();
    let row = store.claim_next(&k, "me", 1, LEASE).await.unwrap().unwrap();
    let mut call = ChatMessage::new(Role::Assistant, "");
    call.tool_calls = vec![ToolCall {
        id: "c1".into(),
        name: "shell".into(),
        args: serde_json::json!({"command": "ls"}),
    }];
    let turn = vec![
        ChatMessage::new(Role::User, "hi"),
        call,
        ChatMessage::tool_result("c1", "file.txt"),
        ChatMessage::new(Role::Assistant, "There is file.txt."),
    ];
    store
        .complete(row.claim(), &k, &turn, None, 2)
        .await
        .unwrap();
    assert_eq!(store.history(&k, 10).await.unwrap(), turn);
    // A window that would start on a tool result starts after it instead.
    let window = store.history(&k, 2).await.unwrap();
    assert_eq!(window, turn[3..].to_vec());
    store.clear_history(&k).await.unwrap();
    assert!(store.history(&k, 10).await.unwrap().is_empty());
    store.ping().await.unwrap();
}

#[tokio::test]
async fn a_claim_taken_over_by_a_later_claim_can_neither_finish_nor_fail_the_row() {
    on_both_databases(superseded_claim).await;
}

async fn superseded_claim(store: Arc<dyn Store>) {
    let k = ConversationKey::new("tg", "fence");
    store
        .insert_event(&event(&k, "f1", "hi"), InboxKind::Message, 1)
        .await
        .unwrap();
    let first = store.claim_next(&k, "a", 1, LEASE).await.unwrap();
    let first = first.expect("claimable").claim();
    // The same owner restarted and reclaimed its own row: a second attempt.
    let second = store.claim_next(&k, "a", 2, LEASE).await.unwrap();
    let second = second.expect("reclaimable by its owner").claim();
    assert_eq!(second.attempt, first.attempt + 1);

    let answer = [
        ChatMessage::new(Role::User, "hi"),
        ChatMessage::new(Role::Assistant, "hello"),
    ];
    // What the turn spent is added with its completion, so only a completion that lands
    // counts it: a turn retried after a crash counts it once.
    let scopes = ["conv:tg:fence".to_owned(), "user:tg:7".to_owned()];
    let used = store::Used {
        tokens: 120,
        tool_runs: 2,
        spoken_chars: 57,
    };
    let spent = Some(store::Spent {
        scopes: &scopes,
        day: 20_000,
        used,
    });
    let late = store.complete(first, &k, &answer, spent, 3).await;
    assert!(
        matches!(late, Err(store::StoreError::Superseded(_))),
        "{late:?}"
    );
    assert!(matches!(
        store.fail(first, "late failure", 3).await,
        Err(store::StoreError::Superseded(_))
    ));
    assert!(
        store.history(&k, 10).await.unwrap().is_empty(),
        "the lost claim stored nothing"
    );
    for scope in &scopes {
        let counted = store.usage(scope, 20_000).await.unwrap();
        assert_eq!(
            counted,
            store::Used::default(),
            "the lost claim counted nothing"
        );
    }
    store.complete(second, &k, &answer, spent, 4).await.unwrap();
    assert_eq!(store.history(&k, 10).await.unwrap(), answer);
    for scope in &scopes {
        assert_eq!(store.usage(scope, 20_000).await.unwrap(), used);
    }
    assert_eq!(store.inbox_counts().await.unwrap().done, 1);
    assert!(matches!(
        store.release(second, 5).await,
        Err(store::StoreError::Superseded(_))
    ));
}
