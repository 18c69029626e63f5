//! The gateway connection itself: IDENTIFY with the right intents, heartbeats, a dropped
//! socket resumed without losing or doubling a message, and `health()` while it is down.

use std::sync::Arc;
use std::time::Duration;

use switchboard_channel::{Channel, EventSink};
use switchboard_standins::discord::{FAKE_TOKEN, FakeDiscord, IncomingMessage};
use tokio_util::sync::CancellationToken;

use crate::helpers::{
    PROMPTLY, RecordingSink, alice, as_message, config_for, spawn_app, spawn_app_on,
    wait_for_health,
};
use switchboard_discord::DiscordChannel;

const DM: &str = "7000000000000000001";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bot_identifies_with_message_intents_only_and_reports_ready() {
    let app = spawn_app().await;
    let identifies = app.discord.ops(2);
    assert_eq!(identifies.len(), 1);
    let intents = identifies[0]["intents"].as_u64().unwrap();
    assert_eq!(
        intents,
        (1 << 9) | (1 << 12) | (1 << 15),
        "GUILD_MESSAGES | DIRECT_MESSAGES | MESSAGE_CONTENT"
    );
    assert!(app.discord.connection_queries()[0].contains("v=10"));
    assert!(
        app.discord.calls_to("GET", "/users/@me").len() == 1,
        "the token is checked first"
    );
    assert!(
        !app.discord.calls_to("GET", "/gateway").is_empty(),
        "the gateway URL comes from the API"
    );
    let health = app.channel.health();
    assert!(health.ready && health.last_ok.is_some(), "{health:?}");
    assert_eq!(
        app.channel.bot_user_id(),
        Some(switchboard_standins::discord::FAKE_BOT_ID)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_are_acknowledged_and_the_session_stays_up() {
    let discord = FakeDiscord::start_with(FAKE_TOKEN, Duration::from_millis(300)).await;
    let app = spawn_app_on(discord, |_| {}).await;
    app.discord
        .wait_until("three heartbeats", PROMPTLY, |fake| {
            (fake.ops(1).len() >= 3).then_some(())
        })
        .await;
    assert!(app.channel.health().ready);
    assert_eq!(
        app.discord.ops(2).len(),
        1,
        "no re-identify: every heartbeat was acknowledged"
    );
    assert!(app.discord.ops(6).is_empty(), "no resume either");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_socket_is_resumed_and_the_next_message_is_delivered_once() {
    let app = spawn_app().await;
    app.discord
        .send_message(&IncomingMessage::dm(DM, &alice(), "before the drop"));
    app.sink.wait_for(1).await;

    app.discord.drop_connection();
    let id = app
        .discord
        .send_message(&IncomingMessage::dm(DM, &alice(), "after the drop"));
    let events = app.sink.wait_for(2).await;
    assert_eq!(as_message(&events[1]).text, "after the drop");

    app.discord.wait_for_session(PROMPTLY).await;
    let resumes = app.discord.ops(6);
    assert_eq!(
        resumes.len(),
        1,
        "the session was resumed, not re-identified"
    );
    assert_eq!(app.discord.ops(2).len(), 1);
    assert!(
        resumes[0]["seq"].as_u64().unwrap() >= 2,
        "READY and the first message were seen"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        app.sink.attempts_for(&format!("m{id}")),
        1,
        "delivered once, not replayed twice"
    );
    assert_eq!(app.sink.stored().len(), 2);
    assert!(app.channel.health().ready);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_is_not_ready_while_the_gateway_is_unreachable_and_recovers_after() {
    let app = spawn_app().await;
    app.discord.set_gateway_down(true);
    app.discord.drop_connection();

    wait_for_health(&app.channel, false, PROMPTLY).await;
    let health = app.channel.health();
    assert!(health.detail.contains("gateway"), "{health:?}");
    assert!(health.last_ok.is_some(), "the last good moment is kept");

    app.discord.set_gateway_down(false);
    wait_for_health(&app.channel, true, Duration::from_secs(40)).await;
    app.discord.wait_for_session(PROMPTLY).await;
    let id = app
        .discord
        .send_message(&IncomingMessage::dm(DM, &alice(), "back again"));
    let events = app.sink.wait_for(1).await;
    assert_eq!(as_message(&events[0]).event_id, format!("m{id}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_returns_when_shutdown_fires() {
    let discord = FakeDiscord::start().await;
    let channel = Arc::new(DiscordChannel::new("discord", config_for(&discord)));
    let stop = CancellationToken::new();
    let sink: Arc<dyn EventSink> = Arc::new(RecordingSink::default());
    let (runner, token) = (channel.clone(), stop.clone());
    let started = tokio::spawn(async move { runner.start(sink, token).await });
    discord.wait_for_session(PROMPTLY).await;

    stop.cancel();
    let result = tokio::time::timeout(PROMPTLY, started)
        .await
        .expect("start returned")
        .unwrap();
    assert!(result.is_ok(), "{result:?}");
    assert!(!channel.health().ready);
}
