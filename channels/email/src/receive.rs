//! The receive loop (on the leader only, with several replicas): log in, look at the mailbox,
//! then wait for news with IDLE — or, on a server without it, sleep `poll_interval_secs` —
//! and look again. A dropped connection reconnects with a growing wait; a refused login stops
//! the loop (`/readyz` says why). `run` only waits and retries; `Mailbox::step` does the work.

use std::sync::Arc;
use std::time::Duration;

use switchboard_channel::{Backoff, ChannelError, EventSink};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::imap::{self, Failure, Mailbox, Session};
use crate::shared::Inner;

/// Receive until `shutdown` fires; `Err` only when the login is refused.
pub(crate) async fn run(
    inner: Arc<Inner>,
    sink: Arc<dyn EventSink>,
    shutdown: CancellationToken,
) -> Result<(), ChannelError> {
    let mut backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(60));
    loop {
        let began = Instant::now();
        let round = tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            round = session(&inner, &sink) => round,
        };
        let err = match round {
            Err(Failure::Login(why)) => {
                tracing::error!(channel = %inner.name, "IMAP login refused ({why}); fix imap.user / imap.password and restart");
                inner.health.stopped(format!("IMAP login refused: {why}"));
                return Err(ChannelError::Fatal(why));
            }
            Err(err) => err,
        };
        tracing::warn!(channel = %inner.name, error = %err, "IMAP session ended; reconnecting");
        inner.health.error(err.to_string());
        if began.elapsed() > Duration::from_secs(60) {
            backoff.reset();
        }
        tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            () = tokio::time::sleep(backoff.next_delay()) => {}
        }
    }
}

/// One logged-in session: look, wait, look again, until something fails.
async fn session(
    inner: &Inner,
    sink: &Arc<dyn EventSink>,
) -> Result<std::convert::Infallible, Failure> {
    let mut session = imap::connect(&inner.config.imap, &inner.tls).await?;
    let idle = imap::has_idle(&mut session).await?;
    tracing::info!(channel = %inner.name, idle, "reading the mailbox {}", inner.config.mailbox());
    let mailbox = Mailbox { inner, sink };
    let interval = Duration::from_secs(inner.config.poll_interval_secs);
    loop {
        mailbox.step(&mut session).await?;
        if idle {
            session = wait_idle(session, interval).await?;
        } else {
            tokio::time::sleep(interval).await;
        }
    }
}

/// IDLE until the server reports news or `max` passes (servers drop an IDLE after about
/// 30 minutes, and a renewed one also proves the connection is alive).
async fn wait_idle(session: Session, max: Duration) -> Result<Session, Failure> {
    let mut handle = session.idle();
    handle.init().await?;
    {
        let (wait, _stop) = handle.wait_with_timeout(max);
        wait.await?;
    }
    Ok(handle.done().await?)
}
