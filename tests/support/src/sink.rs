//! `RecordingSink`: the one stand-in for the core's durable inbox that every channel crate's
//! tests hand to their channel. It deduplicates by channel and event id like the inbox,
//! knows the conversations of the events it stored, records every attempt and outcome, and
//! can be told to fail (the first `n` calls, or all until told otherwise) so "store before
//! acknowledging" can be tested.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use switchboard_channel::{ChannelEvent, ConversationKey, Delivery, EventSink, SinkError};
use tokio::time::Instant;

/// How long [`RecordingSink::wait_for`] waits for events that should arrive promptly.
pub const PROMPTLY: Duration = Duration::from_secs(10);

/// Stores each event once, remembers when, and fails on request.
#[derive(Default)]
pub struct RecordingSink {
    stored: Mutex<Vec<(ChannelEvent, Instant)>>,
    seen: Mutex<HashSet<String>>,
    attempts: Mutex<Vec<String>>,
    outcomes: Mutex<Vec<Delivery>>,
    fail_next: AtomicUsize,
    fail_all: AtomicBool,
    /// Users whose events are refused (as the core's access decision would).
    refused_users: Mutex<HashSet<String>>,
}

impl RecordingSink {
    /// A sink that stores everything.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// A sink whose first `n` deliveries fail.
    pub fn failing(n: usize) -> Arc<Self> {
        let sink = Self::default();
        sink.fail_next.store(n, Ordering::SeqCst);
        Arc::new(sink)
    }

    /// Make every delivery fail (`true`) or succeed again (`false`).
    pub fn set_failing(&self, failing: bool) {
        self.fail_all.store(failing, Ordering::SeqCst);
    }

    /// Refuse every event from `user` (`Delivery::Refused`, nothing stored), as the core
    /// does for someone it does not let in.
    pub fn refuse_user(&self, user: &str) {
        self.refused_users.lock().unwrap().insert(user.to_owned());
    }

    /// Stored events, in order.
    pub fn stored(&self) -> Vec<ChannelEvent> {
        let stored = self.stored.lock().unwrap();
        stored.iter().map(|(e, _)| e.clone()).collect()
    }

    /// When the event with `event_id` was stored.
    pub fn stored_at(&self, event_id: &str) -> Option<Instant> {
        let stored = self.stored.lock().unwrap();
        stored
            .iter()
            .find(|(e, _)| e.event_id() == event_id)
            .map(|(_, at)| *at)
    }

    /// Event ids of every delivery attempt, failed ones included.
    pub fn attempts(&self) -> Vec<String> {
        self.attempts.lock().unwrap().clone()
    }

    /// How many times `event_id` was handed over (stored, duplicate or failed).
    pub fn attempts_for(&self, event_id: &str) -> usize {
        let attempts = self.attempts.lock().unwrap();
        attempts.iter().filter(|id| *id == event_id).count()
    }

    /// The outcome of every delivery that did not fail, in order.
    pub fn outcomes(&self) -> Vec<Delivery> {
        self.outcomes.lock().unwrap().clone()
    }

    /// Wait (up to [`PROMPTLY`]) until at least `n` events are stored.
    pub async fn wait_for(&self, n: usize) -> Vec<ChannelEvent> {
        crate::eventually(PROMPTLY, &format!("{n} stored events"), async || {
            let stored = self.stored();
            if stored.len() >= n {
                Ok(stored)
            } else {
                Err(stored)
            }
        })
        .await
    }

    fn fails_now(&self) -> bool {
        let next = self
            .fail_next
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        next || self.fail_all.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl EventSink for RecordingSink {
    async fn deliver(&self, event: ChannelEvent) -> Result<Delivery, SinkError> {
        self.attempts
            .lock()
            .unwrap()
            .push(event.event_id().to_owned());
        if self.fails_now() {
            return Err(SinkError("database is down (test)".into()));
        }
        let id = format!("{}:{}", event.key().channel, event.event_id());
        let refused = self
            .refused_users
            .lock()
            .unwrap()
            .contains(&event.user().id);
        let outcome = if refused {
            Delivery::Refused
        } else if self.seen.lock().unwrap().insert(id) {
            self.stored.lock().unwrap().push((event, Instant::now()));
            Delivery::Stored
        } else {
            Delivery::Duplicate
        };
        self.outcomes.lock().unwrap().push(outcome);
        Ok(outcome)
    }

    /// Like the inbox: a conversation is known once an event of it was stored; a failing
    /// sink fails the lookup too (the database is down).
    async fn knows_conversation(&self, key: &ConversationKey) -> Result<bool, SinkError> {
        if self.fail_all.load(Ordering::SeqCst) {
            return Err(SinkError("database is down (test)".into()));
        }
        let stored = self.stored.lock().unwrap();
        Ok(stored.iter().any(|(e, _)| e.key() == key))
    }
}
