//! The outbound governor: one token bucket per chat (channel + chat id, shared by every
//! conversation and topic in it), sized from `Channel::limits_for`. Intermediate draft edits
//! only spend from the upper half of the bucket, so a long stream never crowds out the final
//! answer, which waits for a token instead of being dropped. A platform `retry_after`
//! pauses the whole chat.

use std::time::Duration;

use dashmap::DashMap;
use switchboard_channel::{ConversationKey, Limits};
use tokio::time::Instant;

/// One chat's budget.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
    paused_until: Option<Instant>,
}

/// Per-chat send/edit budgets.
#[derive(Debug, Default)]
pub struct Governor {
    buckets: DashMap<(String, String), Bucket>,
}

fn capacity(limits: &Limits) -> f64 {
    f64::from(limits.rate_per_window.max(1))
}

fn per_second(limits: &Limits) -> f64 {
    capacity(limits) / limits.rate_window.as_secs_f64().max(0.001)
}

impl Governor {
    /// An empty governor (every chat starts with a full bucket).
    pub fn new() -> Self {
        Self::default()
    }

    fn refilled(&self, key: &ConversationKey, limits: &Limits, now: Instant) -> Bucket {
        let id = (key.channel.clone(), key.chat.clone());
        let mut entry = self.buckets.entry(id).or_insert(Bucket {
            tokens: capacity(limits),
            at: now,
            paused_until: None,
        });
        let elapsed = now.saturating_duration_since(entry.at).as_secs_f64();
        entry.tokens = (entry.tokens + elapsed * per_second(limits)).min(capacity(limits));
        entry.at = now;
        *entry
    }

    fn spend(&self, key: &ConversationKey) {
        if let Some(mut b) = self
            .buckets
            .get_mut(&(key.channel.clone(), key.chat.clone()))
        {
            b.tokens -= 1.0;
        }
    }

    /// Take a token for an intermediate edit if the bucket is at least half full (and at
    /// least one token); otherwise the edit should be coalesced into a later one.
    pub fn try_intermediate(&self, key: &ConversationKey, limits: &Limits) -> bool {
        let now = Instant::now();
        let b = self.refilled(key, limits, now);
        let floor = (capacity(limits) / 2.0).max(1.0);
        let ok = b.paused_until.is_none_or(|p| p <= now) && b.tokens >= floor;
        if ok {
            self.spend(key);
        }
        ok
    }

    /// How long until an intermediate edit could go out.
    pub fn intermediate_wait(&self, key: &ConversationKey, limits: &Limits) -> Duration {
        let now = Instant::now();
        let b = self.refilled(key, limits, now);
        let floor = (capacity(limits) / 2.0).max(1.0);
        let refill = Duration::from_secs_f64(((floor - b.tokens).max(0.0)) / per_second(limits));
        let pause = b
            .paused_until
            .map_or(Duration::ZERO, |p| p.saturating_duration_since(now));
        refill.max(pause)
    }

    /// Wait for a token (final answers, prompts): never refused, only delayed.
    pub async fn take(&self, key: &ConversationKey, limits: &Limits) {
        loop {
            let now = Instant::now();
            let b = self.refilled(key, limits, now);
            let pause = b
                .paused_until
                .map_or(Duration::ZERO, |p| p.saturating_duration_since(now));
            let refill = Duration::from_secs_f64(((1.0 - b.tokens).max(0.0)) / per_second(limits));
            let wait = pause.max(refill);
            if wait.is_zero() {
                self.spend(key);
                return;
            }
            tokio::time::sleep(wait).await;
        }
    }

    /// The platform said to wait: nothing goes to this chat before then.
    pub fn pause(&self, key: &ConversationKey, limits: &Limits, retry_after: Duration) {
        let now = Instant::now();
        self.refilled(key, limits, now);
        if let Some(mut b) = self
            .buckets
            .get_mut(&(key.channel.clone(), key.chat.clone()))
        {
            let until = now + retry_after;
            b.paused_until = Some(b.paused_until.map_or(until, |p| p.max(until)));
            b.tokens = b.tokens.min(0.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group() -> Limits {
        Limits {
            rate_per_window: 20,
            rate_window: Duration::from_secs(60),
            ..Limits::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn intermediate_edits_use_only_half_the_budget_so_the_final_always_has_room() {
        let g = Governor::new();
        let key = ConversationKey::new("tg", "-100").in_thread("7");
        let intermediate = (0..30)
            .filter(|_| g.try_intermediate(&key, &group()))
            .count();
        assert_eq!(
            intermediate, 11,
            "down to the half-full floor, then coalesced"
        );
        let started = Instant::now();
        g.take(&key, &group()).await;
        assert_eq!(
            Instant::now(),
            started,
            "the final answer found a token at once"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn topics_of_one_chat_share_its_budget() {
        let g = Governor::new();
        let a = ConversationKey::new("tg", "-100").in_thread("1");
        let b = ConversationKey::new("tg", "-100").in_thread("2");
        while g.try_intermediate(&a, &group()) {}
        assert!(!g.try_intermediate(&b, &group()));
        assert!(g.try_intermediate(&ConversationKey::new("tg", "-200"), &group()));
    }

    #[tokio::test(start_paused = true)]
    async fn a_retry_after_pauses_the_chat_and_the_final_waits_it_out() {
        let g = Governor::new();
        let key = ConversationKey::new("tg", "42");
        let limits = Limits {
            rate_per_window: 1,
            rate_window: Duration::from_secs(1),
            ..Limits::default()
        };
        g.pause(&key, &limits, Duration::from_secs(5));
        assert!(!g.try_intermediate(&key, &limits));
        let started = Instant::now();
        g.take(&key, &limits).await;
        assert!(Instant::now() - started >= Duration::from_secs(5));
    }
}
