//! Shared test set-up: a fake Bot API, a channel pointed at it, and a recording sink that
//! deduplicates by event id like the core's inbox and can be told to fail.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use switchboard_channel::{
    Channel, ChannelEvent, ConversationKey, Delivery, EventSink, Health, Inbound, SinkError,
};
use switchboard_standins::telegram::{FAKE_BOT_TOKEN, FakeTelegram};
use switchboard_telegram::{TelegramChannel, TelegramConfig};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};

/// A sink that stores each event id once, remembers when, and fails the first `fail` calls.
#[derive(Default)]
pub struct RecordingSink {
    events: Mutex<Vec<(ChannelEvent, Instant)>>,
    seen: Mutex<HashSet<String>>,
    attempts: Mutex<Vec<String>>,
    fail: AtomicUsize,
    delivered: Notify,
}

impl RecordingSink {
    /// A sink that stores everything.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// A sink whose first `n` deliveries fail.
    pub fn failing(n: usize) -> Arc<Self> {
        let sink = Self::default();
        sink.fail.store(n, Ordering::SeqCst);
        Arc::new(sink)
    }

    /// Stored events, in order.
    pub fn events(&self) -> Vec<ChannelEvent> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .map(|(e, _)| e.clone())
            .collect()
    }

    /// When the event with `event_id` was stored.
    pub fn stored_at(&self, event_id: &str) -> Option<Instant> {
        let events = self.events.lock().unwrap();
        events
            .iter()
            .find(|(e, _)| e.event_id() == event_id)
            .map(|(_, at)| *at)
    }

    /// Event ids of every delivery attempt, failed ones included.
    pub fn attempts(&self) -> Vec<String> {
        self.attempts.lock().unwrap().clone()
    }

    /// Wait (up to 10 s) until `n` events are stored.
    pub async fn wait_for(&self, n: usize) -> Vec<ChannelEvent> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let notified = self.delivered.notified();
            let events = self.events();
            if events.len() >= n {
                return events;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                panic!("expected {n} events, got {events:?}");
            }
        }
    }
}

#[async_trait]
impl EventSink for RecordingSink {
    async fn deliver(&self, event: ChannelEvent) -> Result<Delivery, SinkError> {
        self.attempts
            .lock()
            .unwrap()
            .push(event.event_id().to_owned());
        let fail = self
            .fail
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if fail {
            return Err(SinkError("database is locked (test)".into()));
        }
        if !self
            .seen
            .lock()
            .unwrap()
            .insert(event.event_id().to_owned())
        {
            return Ok(Delivery::Duplicate);
        }
        self.events.lock().unwrap().push((event, Instant::now()));
        self.delivered.notify_waiters();
        Ok(Delivery::Stored)
    }
}

/// Settings for a channel pointed at `fake`: polling with a 1 s long poll, everyone allowed.
pub fn config_for(fake: &FakeTelegram) -> TelegramConfig {
    let mut config = TelegramConfig::new(FAKE_BOT_TOKEN);
    config.api_url = fake.api_url();
    config.poll_timeout_secs = 1;
    config.allowed_users = vec!["*".into()];
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
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let health = self.channel.health();
            if wanted(&health) {
                return health;
            }
            assert!(
                Instant::now() < deadline,
                "health never got there: {health:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Wait (up to 10 s) until no injected update is left unconfirmed.
    pub async fn wait_until_confirmed(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.fake.pending_updates().is_empty() {
            assert!(
                Instant::now() < deadline,
                "updates never confirmed: {:?}",
                self.fake.pending_updates()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
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
