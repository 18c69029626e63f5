//! Waiting for something a test cannot be told about: [`eventually`] tries a probe until it
//! succeeds or its time is up, so no test writes its own deadline loop. A probe returns
//! `Ok(value)` when the awaited state is there and `Err(state)` with what it saw otherwise;
//! that last state is printed when the wait fails, next to what was awaited (`Err(())`
//! when there is nothing worth showing).
//!
//! The time allowed is wall-clock time (`std::time::Instant`), as the tests' own loops had:
//! under a paused tokio clock the sleeps between tries return at once, but the wait still
//! gives up only after `within` has really passed.

use std::fmt::Debug;
use std::future::Future;
use std::panic::Location;
use std::time::{Duration, Instant};

/// The pause between two tries: short next to any wait a test allows, long enough that a
/// probe over HTTP or SQL costs the machine little.
pub const EVERY: Duration = Duration::from_millis(20);

/// Try `probe` until it gives `Ok(value)`, and return that value; panic once `within` has
/// passed, naming where the wait was, what it awaited and the last `Err` state the probe gave.
///
/// The first try is made at once, then one every [`EVERY`]. A try still running when the
/// time is up is abandoned (its bound is on tokio's timer), so a probe that hangs fails the
/// test instead of holding it.
#[track_caller]
pub fn eventually<T, S: Debug>(
    within: Duration,
    what: &str,
    probe: impl AsyncFnMut() -> Result<T, S>,
) -> impl Future<Output = T> {
    Wait::new(within, what).run(EVERY, probe)
}

/// [`eventually`] with tries `every` apart, for a probe that is costly or whose pace is part
/// of what the test plays (a client retrying as a platform would).
#[track_caller]
pub fn eventually_every<T, S: Debug>(
    within: Duration,
    every: Duration,
    what: &str,
    probe: impl AsyncFnMut() -> Result<T, S>,
) -> impl Future<Output = T> {
    Wait::new(within, what).run(every, probe)
}

/// [`eventually`] for a test without an async runtime: `probe` is a plain function and the
/// thread sleeps between tries.
#[track_caller]
pub fn eventually_blocking<T, S: Debug>(
    within: Duration,
    what: &str,
    mut probe: impl FnMut() -> Result<T, S>,
) -> T {
    let wait = Wait::new(within, what);
    let started = Instant::now();
    loop {
        match probe() {
            Ok(value) => return value,
            Err(state) if started.elapsed() >= within => wait.failed(Some(&state), ""),
            Err(_) => std::thread::sleep(EVERY),
        }
    }
}

/// One wait, described for its failure message: where a test waits is not where the panic
/// is raised, so the caller's place is kept (`#[track_caller]` on the functions above).
struct Wait {
    within: Duration,
    what: String,
    at: &'static Location<'static>,
}

impl Wait {
    #[track_caller]
    fn new(within: Duration, what: &str) -> Self {
        Self {
            within,
            what: what.to_owned(),
            at: Location::caller(),
        }
    }

    async fn run<T, S: Debug>(
        self,
        every: Duration,
        mut probe: impl AsyncFnMut() -> Result<T, S>,
    ) -> T {
        let started = Instant::now();
        let mut last = None;
        loop {
            let left = self.within.saturating_sub(started.elapsed());
            match tokio::time::timeout(left, probe()).await {
                Ok(Ok(value)) => return value,
                Ok(Err(state)) => last = Some(state),
                Err(_) => self.failed(last.as_ref(), " (the last try had not finished)"),
            }
            if started.elapsed() >= self.within {
                self.failed(last.as_ref(), "");
            }
            tokio::time::sleep(every).await;
        }
    }

    fn failed<S: Debug>(&self, last: Option<&S>, note: &str) -> ! {
        // A probe with nothing to show says `Err(())`.
        let seen = match last.map(|state| format!("{state:#?}")) {
            Some(shown) if shown != "()" => format!("; last seen: {shown}"),
            _ => String::new(),
        };
        let Self { within, what, at } = self;
        panic!("{at}: timed out after {within:?} waiting for {what}{note}{seen}")
    }
}

/// A state worked out only when a wait fails, and shown as plain text: a log's tail, say,
/// which would cost a read on every try and be unreadable with its line breaks escaped.
/// `Err(Later(move || read(log)))`.
pub struct Later<F>(pub F);

impl<F: Fn() -> String> Debug for Later<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&(self.0)())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    const SHORT: Duration = Duration::from_millis(200);

    #[tokio::test]
    async fn the_value_of_the_first_successful_try_is_returned() {
        let mut tries = 0;
        let got = eventually(SHORT, "the third try", async || {
            tries += 1;
            if tries == 3 {
                Ok(tries * 10)
            } else {
                Err(tries)
            }
        })
        .await;
        assert_eq!((got, tries), (30, 3));
    }

    #[tokio::test]
    #[should_panic(
        expected = "timed out after 200ms waiting for a green light; last seen: \"red\""
    )]
    async fn a_wait_that_runs_out_names_what_it_awaited_and_the_last_state() {
        eventually(SHORT, "a green light", async || Err::<(), _>("red")).await;
    }

    #[tokio::test]
    async fn the_failure_starts_with_the_place_of_the_wait_and_shows_no_empty_state() {
        let line = line!() + 1;
        let waiting = eventually(SHORT, "a sign", async || Err::<(), _>(()));
        let panic = tokio::spawn(waiting).await.unwrap_err().into_panic();
        let message = panic.downcast_ref::<String>().expect("a formatted message");
        let place = format!("{}:{line}:", file!());
        assert!(message.starts_with(&place), "{message}");
        assert!(message.ends_with("waiting for a sign"), "{message}");
    }

    #[tokio::test]
    #[should_panic(
        expected = "waiting for an answer (the last try had not finished); last seen: 1"
    )]
    async fn a_try_that_hangs_is_abandoned_when_the_time_is_up() {
        let tries = AtomicUsize::new(0);
        eventually(SHORT, "an answer", async || {
            if tries.fetch_add(1, Ordering::SeqCst) > 0 {
                std::future::pending::<()>().await;
            }
            Err::<(), _>(1)
        })
        .await;
    }

    #[tokio::test(start_paused = true)]
    async fn under_a_paused_clock_the_time_allowed_is_still_real() {
        let started = Instant::now();
        let result = tokio::spawn(async {
            eventually(SHORT, "nothing", async || Err::<(), _>(())).await;
        })
        .await;
        assert!(result.is_err(), "the wait gave up");
        assert!(started.elapsed() >= SHORT, "{:?}", started.elapsed());
    }

    #[tokio::test]
    #[should_panic(expected = "waiting for the log to say ready; last seen: line one\nline two")]
    async fn a_later_state_is_read_at_the_end_and_shown_as_it_is() {
        let reads = &AtomicUsize::new(0);
        eventually(SHORT, "the log to say ready", async || {
            Err::<(), _>(Later(move || {
                assert_eq!(reads.fetch_add(1, Ordering::SeqCst), 0, "read once");
                "line one\nline two".to_owned()
            }))
        })
        .await;
    }

    #[test]
    fn the_blocking_form_tries_until_the_probe_succeeds() {
        let mut tries = 0;
        let got = eventually_blocking(SHORT, "the second try", || {
            tries += 1;
            if tries == 2 { Ok("done") } else { Err(tries) }
        });
        assert_eq!((got, tries), ("done", 2));
    }

    #[test]
    #[should_panic(expected = "waiting for the door to open; last seen: \"shut\"")]
    fn the_blocking_form_panics_with_the_last_state() {
        eventually_blocking(SHORT, "the door to open", || Err::<(), _>("shut"));
    }
}
