//! Time as an input. Approvals, their expiry timers and in-process inbox leases read "now"
//! from a [`Clock`] handed to them instead of the wall clock, so tests can pause, advance or
//! set time instead of shrinking timeouts and sleeping.
//!
//! Production uses [`Clock::wall`]. Unit tests use [`Clock::tokio`], which follows tokio's
//! (pausable) time; end-to-end tests that run real I/O use [`Clock::manual`] and move it by
//! hand. Lease expiry across processes may later be decided by the database's own `now()`;
//! that stays a change to the lease step, which takes `now` from here.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::watch;

/// Where "now" comes from. Cheap to clone; clones share one time source.
#[derive(Clone, Debug)]
pub struct Clock(Source);

#[derive(Clone, Debug)]
enum Source {
    /// The system clock.
    Wall,
    /// `base_ms` plus the tokio time elapsed since `start` (honours `tokio::time::pause`).
    Tokio {
        base_ms: i64,
        start: tokio::time::Instant,
    },
    /// Moves only when a test says so; the watch wakes whoever waits for a deadline.
    Manual(Arc<watch::Sender<i64>>),
}

impl Default for Clock {
    fn default() -> Self {
        Self::wall()
    }
}

impl Clock {
    /// The system clock: what production runs on.
    pub fn wall() -> Self {
        Self(Source::Wall)
    }

    /// A clock that starts at the current wall time and then follows tokio's time, so a test
    /// under `tokio::time::pause()` moves it with `tokio::time::advance`. Must be created
    /// inside a runtime.
    pub fn tokio() -> Self {
        Self(Source::Tokio {
            base_ms: wall_ms(),
            start: tokio::time::Instant::now(),
        })
    }

    /// A clock standing still at `start_ms` (Unix ms) until [`Clock::advance`] moves it: for
    /// end-to-end tests whose I/O runs in real time while the gateway's notion of time is
    /// driven by the test.
    pub fn manual(start_ms: i64) -> Self {
        Self(Source::Manual(Arc::new(watch::Sender::new(start_ms))))
    }

    /// Now, in Unix milliseconds (the unit the store keeps times in).
    pub fn now_ms(&self) -> i64 {
        match &self.0 {
            Source::Wall => wall_ms(),
            Source::Tokio { base_ms, start } => base_ms + start.elapsed().as_millis() as i64,
            Source::Manual(now) => *now.borrow(),
        }
    }

    /// Move a manual clock forward, waking anything waiting for a deadline it passes. Other
    /// clocks are moved by the system or by `tokio::time::advance`, so this panics on them:
    /// a test that calls it on the wrong clock is wrong.
    pub fn advance(&self, by: Duration) {
        match &self.0 {
            Source::Manual(now) => now.send_modify(|ms| *ms += by.as_millis() as i64),
            _ => panic!("only a manual clock is advanced by hand"),
        }
    }

    /// How long from now until `deadline_ms` (zero when it has passed).
    pub fn until(&self, deadline_ms: i64) -> Duration {
        Duration::from_millis(deadline_ms.saturating_sub(self.now_ms()).max(0) as u64)
    }

    /// Wait until this clock reads at least `deadline_ms`. Wall and tokio clocks sleep on
    /// tokio's timer; a manual clock waits for [`Clock::advance`] to pass the deadline.
    pub async fn sleep_until(&self, deadline_ms: i64) {
        match &self.0 {
            Source::Wall | Source::Tokio { .. } => {
                // The wall clock may step while we sleep: check again after waking.
                while self.now_ms() < deadline_ms {
                    tokio::time::sleep(self.until(deadline_ms)).await;
                }
            }
            Source::Manual(now) => {
                let mut rx = now.subscribe();
                // The sender lives as long as this clock, so `wait_for` cannot fail.
                let _ = rx.wait_for(|ms| *ms >= deadline_ms).await;
            }
        }
    }
}

/// The system clock in Unix milliseconds.
fn wall_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_tokio_clock_moves_with_paused_time() {
        let clock = Clock::tokio();
        let start = clock.now_ms();
        tokio::time::advance(Duration::from_secs(300)).await;
        assert_eq!(clock.now_ms() - start, 300_000);
    }

    #[tokio::test]
    async fn a_manual_clock_stands_still_until_advanced_and_wakes_sleepers() {
        let clock = Clock::manual(1_000);
        let sleeper = tokio::spawn({
            let clock = clock.clone();
            async move { clock.sleep_until(61_000).await }
        });
        tokio::task::yield_now().await;
        assert_eq!(clock.now_ms(), 1_000);
        clock.advance(Duration::from_secs(59));
        tokio::task::yield_now().await;
        assert!(!sleeper.is_finished(), "59 s is not yet 60 s");
        clock.advance(Duration::from_secs(1));
        tokio::time::timeout(Duration::from_secs(5), sleeper)
            .await
            .expect("woken by the advance")
            .unwrap();
        assert_eq!(clock.until(60_000), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn a_tokio_clock_sleeps_until_its_deadline() {
        let clock = Clock::tokio();
        let deadline = clock.now_ms() + 5_000;
        clock.sleep_until(deadline).await;
        assert!(clock.now_ms() >= deadline);
    }
}
