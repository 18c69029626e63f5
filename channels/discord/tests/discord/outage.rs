//! The store failing for a while: Discord never redelivers a gateway event, so every event
//! that arrives meanwhile is held, in order, and stored when the store recovers; the channel
//! is not ready while it holds them.

use std::time::Duration;

use switchboard_channel::Channel;
use switchboard_standins::discord::IncomingMessage;

use crate::helpers::{PROMPTLY, alice, as_message, bob, spawn_app, wait_for_health};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_sent_while_the_store_fails_for_five_seconds_are_all_stored_in_order() {
    let app = spawn_app().await;
    app.sink.set_failing(true);
    let (dm_a, dm_b) = ("7100000000000000001", "7100000000000000002");
    let mut sent = Vec::new();
    for i in 0..12 {
        let (chat, who) = if i % 3 == 0 {
            (dm_b, bob())
        } else {
            (dm_a, alice())
        };
        let id =
            app.discord
                .send_message(&IncomingMessage::dm(chat, &who, &format!("message {i}")));
        sent.push(format!("m{id}"));
        // Ignored chatter in between takes a place and gives it up.
        app.discord.send_message(&IncomingMessage::guild(
            "7200000000000000001",
            "7200000000000000002",
            &alice(),
            "not for the bot",
        ));
    }
    wait_for_health(&app.channel, false, PROMPTLY).await;
    let health = app.channel.health();
    assert!(
        health.detail.contains("storing inbound events fails"),
        "{health:?}"
    );

    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(app.sink.stored().is_empty());
    assert!(!app.channel.health().ready, "still holding events");
    app.sink.set_failing(false);

    let stored = app.sink.wait_for(sent.len()).await;
    let ids: Vec<&str> = stored
        .iter()
        .map(|e| as_message(e).event_id.as_str())
        .collect();
    assert_eq!(ids, sent, "every event, in the order it arrived");
    assert_eq!(as_message(&stored[4]).text, "message 4");
    // Later events waited behind the first: nothing else was tried while it failed.
    let attempts = app.sink.attempts();
    let first_ok = attempts.iter().rposition(|id| *id == sent[0]).unwrap();
    assert!(first_ok > 1, "the first event was retried: {attempts:?}");
    assert!(
        attempts[..first_ok].iter().all(|id| *id == sent[0]),
        "{attempts:?}"
    );
    wait_for_health(&app.channel, true, PROMPTLY).await;
}
