//! Test harness: a DiscordChannel pointed at FakeDiscord with `start` running (the real
//! serenity gateway client), delivering into the shared `RecordingSink` from the stand-ins.

use std::sync::Arc;
use std::time::Duration;

pub use switchboard_standins::RecordingSink;

use switchboard_channel::{ButtonPress, Channel, ChannelEvent, Inbound};
use switchboard_discord::{DiscordChannel, DiscordConfig};
use switchboard_standins::discord::{FAKE_TOKEN, FakeDiscord, FakeUser};
use switchboard_standins::eventually;
use tokio_util::sync::{CancellationToken, DropGuard};

/// How long the harness waits for anything that should happen promptly.
pub use switchboard_standins::sink::PROMPTLY;

/// The message in a stored event, or a panic saying what it was instead.
pub fn as_message(event: &ChannelEvent) -> &Inbound {
    match event {
        ChannelEvent::Message(m) => m,
        other => panic!("expected a message, got {other:?}"),
    }
}

/// The press in a stored event, or a panic saying what it was instead.
pub fn as_press(event: &ChannelEvent) -> &ButtonPress {
    match event {
        ChannelEvent::Button(b) => b,
        other => panic!("expected a button press, got {other:?}"),
    }
}

pub fn alice() -> FakeUser {
    FakeUser::new("2000000000000000001", "alice")
}

pub fn bob() -> FakeUser {
    FakeUser::new("2000000000000000002", "bob")
}

/// A config for the fake, allowing every user.
pub fn config_for(discord: &FakeDiscord) -> DiscordConfig {
    let mut config = DiscordConfig::new(FAKE_TOKEN);
    config.api_url = discord.api_url();
    config.allowed_users = vec!["*".into()];
    config
}

pub struct TestApp {
    pub discord: FakeDiscord,
    pub channel: Arc<DiscordChannel>,
    pub sink: Arc<RecordingSink>,
    /// Fires on drop, stopping `start`.
    _stop: DropGuard,
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

/// Start FakeDiscord and the channel (`start` runs until the app is dropped); returns once
/// the gateway session is up and the channel reports ready.
pub async fn spawn_app_with(configure: impl FnOnce(&mut DiscordConfig)) -> TestApp {
    spawn_app_on(FakeDiscord::start().await, configure).await
}

/// Like [`spawn_app_with`] on a fake started by the caller.
pub async fn spawn_app_on(
    discord: FakeDiscord,
    configure: impl FnOnce(&mut DiscordConfig),
) -> TestApp {
    let mut config = config_for(&discord);
    configure(&mut config);
    let channel = Arc::new(DiscordChannel::new("discord", config));
    let sink = Arc::new(RecordingSink::default());
    let stop = CancellationToken::new();
    let (runner, sink_for_start, token) = (channel.clone(), sink.clone(), stop.clone());
    tokio::spawn(async move { runner.start(sink_for_start, token).await });
    discord.wait_for_session(PROMPTLY).await;
    wait_for_health(&channel, true, PROMPTLY).await;
    TestApp {
        discord,
        channel,
        sink,
        _stop: stop.drop_guard(),
    }
}

/// Wait until the channel's health is `ready`, or panic after `timeout`.
pub async fn wait_for_health(channel: &DiscordChannel, ready: bool, timeout: Duration) {
    eventually(
        timeout,
        &format!("health to be ready={ready}"),
        async || {
            let health = channel.health();
            if health.ready == ready {
                Ok(())
            } else {
                Err(health)
            }
        },
    )
    .await;
}

/// Let handlers that should do nothing have their chance to do something.
pub async fn settle() {
    tokio::time::sleep(Duration::from_millis(300)).await;
}
