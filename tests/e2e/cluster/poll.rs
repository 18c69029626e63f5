//! `[cluster] listen = false`: no `LISTEN` connection, so an event stored by another writer
//! is not answered at once (no `NOTIFY` reaches the replica) but by the next fallback poll.

use std::time::Duration;

use switchboard::ids::InboxKind;
use switchboard::store;
use switchboard_channel::{ChannelEvent, Inbound, UserRef};
use switchboard_standins::eventually;

use crate::helpers::{TestApp, WAIT, drop_postgres, key, postgres_url, wall_ms};

#[tokio::test]
async fn without_the_listener_an_event_stored_elsewhere_waits_for_the_poll() {
    let Some(db) = postgres_url().await else {
        return;
    };
    let cluster = "[cluster]\nlease_ttl_ms = 3000\nrenew_ms = 500\nheartbeat_ms = 500\npoll_ms = 2000\nlisten = false\n";
    let app = TestApp::builder()
        .config(cluster)
        .database(&db)
        .edit(|c| c.gateway.instance_id = Some("polling".into()))
        .start()
        .await;
    let channel = &app.channel;
    // The start-up rescan has run; the next look is 1.5–2.5 s later.
    let writer = store::connect(&db).await.unwrap();
    let chat = key("polled");
    let event = ChannelEvent::Message(Inbound {
        key: chat.clone(),
        event_id: "polled-1".into(),
        user: UserRef {
            id: "u1".into(),
            name: None,
        },
        text: "find me".into(),
        place: switchboard_channel::Place::Direct,
        attachments: Vec::new(),
    });
    let stored = tokio::time::Instant::now();
    writer
        .insert_event(&event, InboxKind::Message, wall_ms())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(
        channel.transcript(&chat).is_empty(),
        "answered without a poll"
    );
    let left = WAIT.saturating_sub(stored.elapsed());
    eventually(left, "the poll to find the event", async || {
        if channel.transcript(&chat).is_empty() {
            Err(())
        } else {
            Ok(())
        }
    })
    .await;
    assert!(
        stored.elapsed() >= Duration::from_millis(1000),
        "{:?}",
        stored.elapsed()
    );
    app.shutdown().await;
    drop_postgres(&db).await;
}
