//! Two gateways in one test process on one PostgreSQL database, each with its own fake
//! channel object (both named `fake`, as two replicas behind one platform): an event is
//! answered exactly once wherever it arrives, a `NOTIFY` wakes the replica holding a
//! conversation another one stored an event for, and a replica shutting down hands its conversation over at once. The fallback
//! poll is set far beyond every wait here, so only a `NOTIFY` can explain a prompt answer.

use std::sync::Arc;
use std::time::Duration;

use switchboard::ids::InboxKind;
use switchboard::provider::Role;
use switchboard::store;
use switchboard_channel::{ConversationKey, Delivery};
use switchboard_standins::{Call, FakeChannel, Op, Reply, eventually};

use crate::helpers::{
    TestApp, WAIT, direct_message, drop_postgres, key, postgres_url, wait_inbox_idle, wall_ms,
};

/// Short leases, a fallback poll no test waits for.
const CLUSTER: &str =
    "[cluster]\nlease_ttl_ms = 3000\nrenew_ms = 500\nheartbeat_ms = 500\npoll_ms = 600000\n";

/// Replica `a` on database `db` with [`CLUSTER`] and `extra` config, on `channel`; the
/// others come from [`TestApp::replica`] and share its LLM stand-in.
pub(super) async fn replica_a(db: &str, channel: &Arc<FakeChannel>, extra: &str) -> TestApp {
    TestApp::builder()
        .config(&format!("{CLUSTER}{extra}"))
        .database(db)
        .fake(Arc::clone(channel))
        .edit(|c| c.gateway.instance_id = Some("a".into()))
        .start()
        .await
}

/// Every visible answer for `chat` on both channel objects.
fn answers(channels: &[&Arc<FakeChannel>], chat: &ConversationKey) -> Vec<String> {
    channels.iter().flat_map(|c| c.transcript(chat)).collect()
}

/// Wait until the answers for `chat` on both channel objects are exactly `expected`.
async fn wait_answers(channels: &[&Arc<FakeChannel>], chat: &ConversationKey, expected: &[String]) {
    eventually(WAIT, &format!("the answers {expected:?}"), async || {
        let answers = answers(channels, chat);
        if answers == expected {
            Ok(())
        } else {
            Err(answers)
        }
    })
    .await;
}

#[tokio::test]
async fn events_spread_over_two_replicas_are_answered_exactly_once_in_order() {
    let Some(db) = postgres_url().await else {
        return;
    };
    let (ca, cb) = (FakeChannel::new("fake"), FakeChannel::new("fake"));
    let mut a = replica_a(&db, &ca, "").await;
    let b = a.replica("b", &cb).await;
    let chat = key("spread");
    for i in 0..6 {
        let channel = if i % 2 == 0 { &ca } else { &cb };
        let (text, id) = (format!("m{i}"), format!("ev-{i}"));
        channel.say_with_id(&chat, "u1", &text, &id).await.unwrap();
    }
    // One platform event delivered to both replicas at once.
    let (x, y) = tokio::join!(
        ca.say_with_id(&chat, "u1", "m6", "ev-6"),
        cb.say_with_id(&chat, "u1", "m6", "ev-6")
    );
    let mut deliveries = [x.unwrap(), y.unwrap()];
    deliveries.sort_by_key(|d| format!("{d:?}"));
    assert_eq!(deliveries, [Delivery::Duplicate, Delivery::Stored]);
    let mut expected: Vec<String> = (0..7).map(|i| format!("You said: m{i}")).collect();
    expected.sort();
    eventually(WAIT, "an answer to each of m0 to m6", async || {
        let mut all = answers(&[&ca, &cb], &chat);
        all.sort();
        if all == expected { Ok(()) } else { Err(all) }
    })
    .await;
    wait_inbox_idle(&a.store()).await;
    let all = answers(&[&ca, &cb], &chat);
    for i in 0..7 {
        let expected = format!("You said: m{i}");
        let times = all.iter().filter(|t| **t == expected).count();
        assert_eq!(times, 1, "m{i} answered once: {all:#?}");
    }
    let history = a.store().history(&chat, 100).await.unwrap();
    let asked: Vec<&str> = history
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(asked, ["m0", "m1", "m2", "m3", "m4", "m5", "m6"]);
    a.stop().await;
    b.shutdown().await;
    drop_postgres(&db).await;
}

#[tokio::test]
async fn an_event_stored_elsewhere_wakes_the_replica_holding_the_conversation_through_notify() {
    let Some(db) = postgres_url().await else {
        return;
    };
    let (ca, cb) = (FakeChannel::new("fake"), FakeChannel::new("fake"));
    let mut a = replica_a(&db, &ca, "").await;
    let b = a.replica("b", &cb).await;
    // Stored by a third writer (as a webhook on another replica would) while b holds the
    // conversation: no local wake-up anywhere, only the NOTIFY reaches b.
    let writer = store::connect(&db).await.unwrap();
    let chat = key("notify");
    let lease = writer
        .acquire_conversation(&chat, "b", Duration::from_secs(60))
        .await
        .unwrap();
    assert!(lease.is_some(), "the lease taken for b");
    let event = direct_message(&chat, "elsewhere-1", "wake up");
    writer
        .insert_event(&event, InboxKind::Message, wall_ms())
        .await
        .unwrap();
    wait_answers(&[&cb], &chat, &["You said: wake up".to_owned()]).await;
    a.stop().await;
    b.shutdown().await;
    drop_postgres(&db).await;
}

#[tokio::test]
async fn only_an_event_for_a_conversation_someone_holds_is_announced() {
    let Some(db) = postgres_url().await else {
        return;
    };
    let writer = store::connect(&db).await.unwrap();
    let mut listener = sqlx::postgres::PgListener::connect(&db).await.unwrap();
    listener.listen(store::INBOX_CHANNEL).await.unwrap();
    let (free, held) = (key("free"), key("held"));
    writer
        .acquire_conversation(&held, "b", Duration::from_secs(60))
        .await
        .unwrap();
    for (chat, id) in [(&free, "f-1"), (&held, "h-1")] {
        let event = direct_message(chat, id, "hi");
        writer
            .insert_event(&event, InboxKind::Message, wall_ms())
            .await
            .unwrap();
    }
    // Notifications arrive in commit order: the free conversation's would come first.
    let note = tokio::time::timeout(WAIT, listener.recv())
        .await
        .expect("a notification")
        .unwrap();
    assert_eq!(note.payload(), held.to_string());
    drop(listener);
    drop_postgres(&db).await;
}

#[tokio::test]
async fn a_replica_shutting_down_hands_its_conversation_to_another_at_once() {
    let Some(db) = postgres_url().await else {
        return;
    };
    // One platform: both replicas post to (and edit on) the same channel stand-in; events
    // reach whichever replica started last.
    let channel = FakeChannel::new("fake");
    let mut a = replica_a(&db, &channel, "").await;
    a.llm.push(Reply::Stall(Duration::from_secs(30)));
    let chat = key("handover");
    channel
        .say_with_id(&chat, "u1", "are you there", "h-1")
        .await
        .unwrap();
    let typing = |c: &[Call]| c.iter().any(|c| c.op == Op::Typing);
    channel
        .wait_until(WAIT, "replica a to run the turn", typing)
        .await;
    let b = a.replica("b", &channel).await;
    let lease = b.store().conversation_lease(&chat).await.unwrap().unwrap();
    assert_eq!((lease.owner.as_str(), lease.live), ("a", true));
    // Grace is 1 s: a's turn is handed back and its lease given up with a NOTIFY; b takes
    // over at once (the fallback poll is minutes away) and edits the message a posted.
    a.stop().await;
    let answer = ["You said: are you there".to_owned()];
    wait_answers(&[&channel], &chat, &answer).await;
    let sends = channel.writes().iter().filter(|c| c.op == Op::Send).count();
    assert_eq!(
        sends, 1,
        "one message, edited by the replica that took over"
    );
    let lease = b.store().conversation_lease(&chat).await.unwrap().unwrap();
    assert_eq!(lease.owner, "b");
    assert!(lease.epoch >= 2, "b took over with a later epoch");
    wait_inbox_idle(&b.store()).await;
    b.shutdown().await;
    drop_postgres(&db).await;
}

#[tokio::test]
async fn a_replica_that_loses_its_lease_mid_turn_drops_the_turn_without_writing() {
    use sqlx::Connection;
    let Some(db) = postgres_url().await else {
        return;
    };
    let channel = FakeChannel::new("fake");
    let a = replica_a(&db, &channel, "").await;
    a.llm.push(Reply::Stall(Duration::from_secs(60)));
    let chat = key("lost");
    channel
        .say_with_id(&chat, "u1", "still there", "l-1")
        .await
        .unwrap();
    let typing = |c: &[Call]| c.iter().any(|c| c.op == Op::Typing);
    channel
        .wait_until(WAIT, "replica a to run the turn", typing)
        .await;
    // Another owner takes the conversation (as after a partition): a's next renewal is
    // refused and its stalled turn is dropped where it stands.
    let mut sql = sqlx::PgConnection::connect(&db).await.unwrap();
    sqlx::query(
        "UPDATE conversation_leases SET owner = 'intruder', epoch = epoch + 1, \
         lease_until = lease_until + 600000 WHERE key = 'fake:lost'",
    )
    .execute(&mut sql)
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(channel.writes().is_empty(), "a wrote nothing");
    assert!(a.store().history(&chat, 10).await.unwrap().is_empty());
    // The intruder gives the conversation up: a takes it over again at once (its dropped
    // turn no longer occupies the actor) and answers exactly once.
    sqlx::query("UPDATE conversation_leases SET lease_until = 0 WHERE key = 'fake:lost'")
        .execute(&mut sql)
        .await
        .unwrap();
    sqlx::query("SELECT pg_notify('switchboard_inbox', 'fake:lost')")
        .execute(&mut sql)
        .await
        .unwrap();
    let answer = ["You said: still there".to_owned()];
    wait_answers(&[&channel], &chat, &answer).await;
    wait_inbox_idle(&a.store()).await;
    let lease = a.store().conversation_lease(&chat).await.unwrap().unwrap();
    assert_eq!(lease.owner, "a");
    assert!(lease.epoch >= 3, "a took it back with a later epoch");
    drop(sql);
    a.shutdown().await;
    drop_postgres(&db).await;
}
