//! The outbound governor: one token bucket per chat (channel + chat id, shared by every
//! conversation and topic in it), sized from `Channel::limits_for`. Intermediate draft edits
//! only spend from the upper half of the bucket, so a long stream never crowds out the final
//! answer, which waits for a token instead of being dropped. A platform `retry_after`
//! pauses the whole chat.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use dashmap::DashMap;
use dashmap::mapref::entry::Entry;
use switchboard_channel::{ConversationKey, Limits};
use tokio::time::Instant;

/// One chat's budget.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
    paused_until: Option<Instant>,
    /// Tokens per second, kept so a prune can tell when the bucket is full again.
    rate: f64,
    /// The bucket's size.
    capacity: f64,
}

impl Bucket {
    /// Full and not paused at `now`: the same as no bucket at all, so it can be dropped.
    fn is_spent_out(&self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.paused_until.is_none_or(|p| p <= now)
            && self.tokens + elapsed * self.rate >= self.capacity
    }
}

/// Chats added between two prunes, at least (the threshold doubles with the map's size, so
/// pruning stays amortised O(1) per new chat).
const PRUNE_EVERY: usize = 1024;

/// Per-chat send/edit budgets.
#[derive(Debug, Default)]
pub struct Governor {
    buckets: DashMap<(String, String), Bucket>,
    /// Chats added since the last prune: a bucket of a chat gone quiet is full again and is
    /// dropped, so the map holds only chats that spent recently (not every chat ever seen).
    added: AtomicUsize,
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
        let fresh = Bucket {
            tokens: capacity(limits),
            at: now,
            paused_until: None,
            rate: per_second(limits),
            capacity: capacity(limits),
        };
        let bucket = match self.buckets.entry(id) {
            Entry::Vacant(v) => {
                v.insert(fresh);
                self.added.fetch_add(1, Ordering::Relaxed);
                fresh
            }
            Entry::Occupied(mut o) => {
                let b = o.get_mut();
                let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
                b.tokens = (b.tokens + elapsed * fresh.rate).min(fresh.capacity);
                (b.at, b.rate, b.capacity) = (now, fresh.rate, fresh.capacity);
                *b
            }
        };
        // The entry's shard lock is released here; pruning takes every shard's lock.
        if self.added.load(Ordering::Relaxed) >= PRUNE_EVERY.max(self.buckets.len() / 2) {
            self.prune(now);
        }
        bucket
    }

    /// Drop the buckets that are full and not paused (chats that went quiet). A chat between
    /// its refill and its spend may lose that one spend to a prune: it was full anyway.
    fn prune(&self, now: Instant) {
        self.added.store(0, Ordering::Relaxed);
        self.buckets.retain(|_, b| !b.is_spent_out(now));
    }

    /// A conversation of this chat retired: drop the chat's bucket if it is full again and
    /// not paused (the same as no bucket), rather than keep it until enough new chats come
    /// for a prune. A burst's buckets, each key two small strings allocated among the
    /// burst's other allocations, otherwise kept pages of the freed heap resident after it.
    pub fn forget_if_quiet(&self, key: &ConversationKey) {
        let now = Instant::now();
        self.buckets
            .remove_if(&(key.channel.clone(), key.chat.clone()), |_, b| {
                b.is_spent_out(now)
            });
    }

    /// Chats holding a bucket now.
    #[cfg(test)]
    fn tracked(&self) -> usize {
        self.buckets.len()
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
    async fn a_retired_conversation_drops_its_chats_bucket_once_full_and_not_paused() {
        let g = Governor::new();
        let (quiet, paused) = (
            ConversationKey::new("tg", "1"),
            ConversationKey::new("tg", "2"),
        );
        g.take(&quiet, &group()).await;
        g.pause(&paused, &group(), Duration::from_secs(3600));
        g.forget_if_quiet(&quiet);
        assert_eq!(g.tracked(), 2, "a bucket just spent is kept");
        tokio::time::advance(Duration::from_secs(61)).await;
        g.forget_if_quiet(&quiet);
        g.forget_if_quiet(&paused);
        assert_eq!(
            g.tracked(),
            1,
            "the full bucket went, the paused one stayed"
        );
        assert!(!g.try_intermediate(&paused, &group()), "still paused");
    }

    #[tokio::test(start_paused = true)]
    async fn buckets_of_chats_gone_quiet_are_dropped_and_a_paused_chat_keeps_its_pause() {
        let g = Governor::new();
        let paused = ConversationKey::new("tg", "paused");
        g.pause(&paused, &group(), Duration::from_secs(3600));
        for chat in 0..3000 {
            g.take(&ConversationKey::new("tg", chat.to_string()), &group())
                .await;
        }
        assert!(g.tracked() > 1000, "recent chats keep their spent buckets");
        // A minute refills every bucket (20 a minute); the next new chats trigger a prune.
        tokio::time::advance(Duration::from_secs(61)).await;
        for chat in 3000..3000 + PRUNE_EVERY * 2 {
            g.try_intermediate(&ConversationKey::new("tg", chat.to_string()), &group());
        }
        assert!(
            g.tracked() <= PRUNE_EVERY * 2 + 1,
            "{} buckets kept",
            g.tracked()
        );
        assert!(
            !g.try_intermediate(&paused, &group()),
            "the paused chat is still paused after the prunes"
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
