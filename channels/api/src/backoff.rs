//! The wait between attempts of every reconnect and retry loop: a channel's receive loop
//! after an error, a credential check at start-up, a store write that keeps failing, an MCP
//! server that does not start. It doubles after each failure up to a ceiling and starts over
//! after a success, so a platform or database that is briefly away is retried at once while
//! one that stays away is not hammered.
//!
//! Only the arithmetic lives here: each loop sleeps itself (with `tokio::time`, beside its
//! shutdown signal), so tests that pause time drive it as before.

use std::time::Duration;

/// A doubling wait between `first` and `max`.
#[derive(Clone, Debug)]
pub struct Backoff {
    first: Duration,
    next: Duration,
    max: Duration,
}

impl Backoff {
    /// A backoff whose first wait is `first` and whose waits never exceed `max`.
    pub const fn new(first: Duration, max: Duration) -> Self {
        Self {
            first,
            next: first,
            max,
        }
    }

    /// The wait before the next attempt; the one after is twice as long, up to the ceiling.
    pub fn next_delay(&mut self) -> Duration {
        let wait = self.next.min(self.max);
        self.next = wait.saturating_mul(2).min(self.max);
        wait
    }

    /// Start over from the first wait (after a success).
    pub fn reset(&mut self) {
        self.next = self.first;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_up_to_the_ceiling_and_start_over_after_a_reset() {
        let mut backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(5));
        let waits: Vec<u64> = (0..5).map(|_| backoff.next_delay().as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 5, 5]);
        backoff.reset();
        assert_eq!(backoff.next_delay(), Duration::from_secs(1));
        assert_eq!(backoff.next_delay(), Duration::from_secs(2));
    }

    #[test]
    fn a_first_wait_above_the_ceiling_is_cut_to_it() {
        let mut backoff = Backoff::new(Duration::from_secs(9), Duration::from_secs(5));
        assert_eq!(backoff.next_delay(), Duration::from_secs(5));
        let mut huge = Backoff::new(Duration::MAX, Duration::MAX);
        assert_eq!(huge.next_delay(), Duration::MAX, "no overflow");
        assert_eq!(huge.next_delay(), Duration::MAX);
    }
}
