//! The credential check a channel makes before it starts receiving (Slack's `auth.test`,
//! Discord's `users/@me`), retried until the platform answers: a platform that is down at
//! start-up delays the channel, while a refused credential stops it with a health detail
//! that says what to fix. Both channels learn their bot's own id this way.

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::backoff::Backoff;
use crate::channel::{ChannelError, Health};

/// The first wait after a failed check; it doubles up to [`MAX_WAIT`].
const FIRST_WAIT: Duration = Duration::from_secs(1);
/// The longest wait between two checks.
const MAX_WAIT: Duration = Duration::from_secs(60);

/// How a channel's check is named in its log and health.
pub struct CredentialCheck<'a> {
    /// The channel's name, for the log.
    pub channel: &'a str,
    /// What the check is called: `auth.test`, `token check`.
    pub what: &'a str,
    /// Said after a refusal in the health detail: what to fix (empty when the error says it).
    pub on_refusal: &'a str,
}

/// Run `attempt` until it succeeds (`Some`), fails for good (`Err`: neither transient nor
/// rate limited), or `shutdown` fires (`None`). Meanwhile `set_health` says the channel is
/// not ready and why.
pub async fn authenticate_until_ok<T, F, Fut>(
    check: &CredentialCheck<'_>,
    mut attempt: F,
    set_health: impl Fn(Health),
    shutdown: &CancellationToken,
) -> Result<Option<T>, ChannelError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ChannelError>>,
{
    let what = check.what;
    let mut backoff = Backoff::new(FIRST_WAIT, MAX_WAIT);
    loop {
        let wait = match attempt().await {
            Ok(value) => return Ok(Some(value)),
            Err(ChannelError::RateLimited { retry_after }) => retry_after,
            Err(ChannelError::Transient(reason)) => {
                let wait = backoff.next_delay();
                tracing::warn!(channel = %check.channel, %reason, ?wait, "{what} failed; retrying");
                wait
            }
            Err(refused) => {
                let detail = format!("{what} failed: {refused}{}", check.on_refusal);
                set_health(not_ready(detail));
                return Err(refused);
            }
        };
        set_health(not_ready(format!(
            "{what} not answered yet; retry in {wait:?}"
        )));
        tokio::select! {
            () = shutdown.cancelled() => return Ok(None),
            () = tokio::time::sleep(wait) => {}
        }
    }
}

fn not_ready(detail: String) -> Health {
    Health {
        ready: false,
        detail,
        last_ok: None,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    const CHECK: CredentialCheck<'static> = CredentialCheck {
        channel: "team",
        what: "auth.test",
        on_refusal: "; check bot_token",
    };

    #[tokio::test(start_paused = true)]
    async fn transient_failures_are_retried_with_doubling_waits_until_it_succeeds() {
        let started = tokio::time::Instant::now();
        let answers = Mutex::new(vec![
            Ok("U1"),
            Err(ChannelError::Transient("down".into())),
            Err(ChannelError::RateLimited {
                retry_after: Duration::from_secs(7),
            }),
            Err(ChannelError::Transient("down".into())),
        ]);
        let health = Mutex::new(Vec::new());
        let got = authenticate_until_ok(
            &CHECK,
            || async { answers.lock().unwrap().pop().unwrap() },
            |h| health.lock().unwrap().push(h.detail),
            &CancellationToken::new(),
        )
        .await;
        assert_eq!(got.unwrap(), Some("U1"));
        assert_eq!(started.elapsed(), Duration::from_secs(1 + 7 + 2));
        let health = health.into_inner().unwrap();
        assert_eq!(health[1], "auth.test not answered yet; retry in 7s");
    }

    #[tokio::test(start_paused = true)]
    async fn a_refusal_stops_at_once_and_shutdown_ends_the_wait() {
        let health = Mutex::new(String::new());
        let refused = authenticate_until_ok(
            &CHECK,
            || async { Err::<(), _>(ChannelError::Fatal("invalid_auth".into())) },
            |h| *health.lock().unwrap() = h.detail,
            &CancellationToken::new(),
        )
        .await;
        assert!(matches!(refused, Err(ChannelError::Fatal(_))));
        assert_eq!(
            *health.lock().unwrap(),
            "auth.test failed: platform refused: invalid_auth; check bot_token"
        );
        let stop = CancellationToken::new();
        stop.cancel();
        let stopped = authenticate_until_ok(
            &CHECK,
            || async { Err::<(), _>(ChannelError::Transient("down".into())) },
            |_| {},
            &stop,
        )
        .await;
        assert!(matches!(stopped, Ok(None)));
    }
}
