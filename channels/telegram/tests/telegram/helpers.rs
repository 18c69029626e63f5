//! Shared test set-up: a fake Bot API and a channel pointed at it, delivering into the
//! shared `RecordingSink` from the stand-ins.

use std::sync::Arc;
use std::time::Duration;

pub use switchboard_standins::RecordingSink;

use switchboard_channel::{Channel, ChannelEvent, ConversationKey, Health, Inbound};
use switchboard_standins::eventually;
use switchboard_standins::telegram::{FAKE_BOT_TOKEN, FakeTelegram};
use switchboard_telegram::{TelegramChannel, TelegramConfig};
use tokio_util::sync::{CancellationToken, DropGuard};

/// Settings for a channel pointed at `fake`: polling with a 1 s long poll, access open
/// (the core decides access; the channel delivers every sender either way).
pub fn config_for(fake: &FakeTelegram) -> TelegramConfig {
    let mut config = TelegramConfig::new(FAKE_BOT_TOKEN);
    config.api_url = fake.api_url();
    config.poll_timeout_secs = 1;
    config.allowed_users = vec!["*".into()];
    config.dm_policy = Some(switchboard_channel::DmPolicy::Open);
    config
}

/// A fake, a channel on it and, once started, its receive loop.
pub struct Harness {
    pub fake: FakeTelegram,
    pub channel: Arc<TelegramChannel>,
    pub sink: Arc<RecordingSink>,
    _stop: DropGuard,
}

impl Harness {
    /// A channel with default test settings, not started (for outbound tests).
    pub async fn idle() -> Self {
        Self::build(RecordingSink::new(), |_| {}, false).await
    }

    /// A polling channel with test settings changed by `tweak`, started with `sink`.
    pub async fn polling(
        sink: Arc<RecordingSink>,
        tweak: impl FnOnce(&mut TelegramConfig),
    ) -> Self {
        Self::build(sink, tweak, true).await
    }

    async fn build(
        sink: Arc<RecordingSink>,
        tweak: impl FnOnce(&mut TelegramConfig),
        start: bool,
    ) -> Self {
        let fake = FakeTelegram::start().await;
        let mut config = config_for(&fake);
        tweak(&mut config);
        let channel = Arc::new(TelegramChannel::new("telegram", config).expect("valid config"));
        let stop = CancellationToken::new();
        if start {
            let (channel, sink, stop) = (Arc::clone(&channel), Arc::clone(&sink), stop.clone());
            tokio::spawn(async move { channel.start(sink, stop).await });
        }
        Self {
            fake,
            channel,
            sink,
            _stop: stop.drop_guard(),
        }
    }

    /// Wait (up to 10 s) until the channel's health satisfies `wanted`.
    pub async fn wait_for_health(&self, wanted: impl Fn(&Health) -> bool) -> Health {
        eventually(Duration::from_secs(10), "the awaited health", async || {
            let health = self.channel.health();
            if wanted(&health) {
                Ok(health)
            } else {
                Err(health)
            }
        })
        .await
    }

    /// Wait (up to 10 s) until no injected update is left unconfirmed.
    pub async fn wait_until_confirmed(&self) {
        eventually(
            Duration::from_secs(10),
            "every update confirmed",
            async || {
                let pending = self.fake.pending_updates();
                if pending.is_empty() {
                    Ok(())
                } else {
                    Err(pending)
                }
            },
        )
        .await;
    }
}

/// The message inside a stored event, or a panic naming what came instead.
pub fn inbound(event: &ChannelEvent) -> &Inbound {
    match event {
        ChannelEvent::Message(msg) => msg,
        other => panic!("expected a message, got {other:?}"),
    }
}

/// The key the channel should give chat `chat` (and topic `thread`).
pub fn key(chat: i64, thread: Option<i32>) -> ConversationKey {
    let key = ConversationKey::new("telegram", chat.to_string());
    match thread {
        Some(thread) => key.in_thread(thread.to_string()),
        None => key,
    }
}
