//! signal-cli run by the gateway (`command`): started through the core's [`Launcher`] under
//! the tool sandbox, beside the event stream and on the same replica (the leader), restarted
//! with a doubling wait when it exits. Its output is drained (a full pipe would stall it),
//! each line logged at debug and the last ones kept: they are the cause in the WARN of an
//! exit and in the channel's health, where `/readyz` shows them.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchboard_channel::{Backoff, Launcher};
use tokio::io::{AsyncBufReadExt, AsyncRead};
use tokio_util::sync::CancellationToken;

use crate::shared::Shared;

/// Wait after a first exit; doubles per exit in a row up to [`MAX_WAIT`].
const FIRST_WAIT: Duration = Duration::from_secs(1);
/// Longest wait between two starts of a daemon that keeps dying.
const MAX_WAIT: Duration = Duration::from_secs(60);
/// A run this long counts as healthy: the next exit waits [`FIRST_WAIT`] again.
const STABLE: Duration = Duration::from_secs(300);
/// Lines of output kept for the WARN of an exit.
const KEPT_LINES: usize = 12;
/// Characters kept of one line.
const LINE_CHARS: usize = 300;
/// How long an exit waits for the last lines still in the pipes.
const SETTLE: Duration = Duration::from_millis(300);

/// Run `argv` until `shutdown`, starting it again whenever it exits.
pub(crate) async fn supervise(
    shared: Arc<Shared>,
    launcher: Launcher,
    argv: Vec<String>,
    shutdown: CancellationToken,
) {
    let helper = format!("signal-{}", shared.name);
    let mut backoff = Backoff::new(FIRST_WAIT, MAX_WAIT);
    loop {
        let started = tokio::time::Instant::now();
        let why = match launcher.launch(&helper, &argv) {
            Err(why) => format!("could not start: {why}"),
            Ok(launched) => {
                tracing::info!(channel = %shared.name, "signal-cli started");
                let tail = Tail::default();
                let readers: Vec<_> = launched
                    .output
                    .into_iter()
                    .map(|pipe| tokio::spawn(tail.clone().drain(pipe, shared.name.clone())))
                    .collect();
                tokio::select! {
                    // Dropping `launched.exited` stops the process tree.
                    () = shutdown.cancelled() => return,
                    () = launched.exited => {}
                }
                let _ = tokio::time::timeout(SETTLE, futures::future::join_all(readers)).await;
                tail.explain("exited")
            }
        };
        if started.elapsed() >= STABLE {
            backoff.reset();
        }
        let wait = backoff.next_delay();
        tracing::warn!(channel = %shared.name, "signal-cli {why}; starting it again in {}s", wait.as_secs_f32());
        shared.daemon_exited(&why);
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// The last lines the daemon wrote, shared by the tasks that drain its pipes.
#[derive(Clone, Default)]
struct Tail(Arc<Mutex<VecDeque<String>>>);

impl Tail {
    /// Read `pipe` to its end, logging each line and keeping the last.
    async fn drain(self, pipe: Box<dyn AsyncRead + Send + Unpin>, channel: String) {
        let mut lines = tokio::io::BufReader::new(pipe).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let line: String = line.chars().take(LINE_CHARS).collect();
            tracing::debug!(%channel, "signal-cli: {line}");
            if line.trim().is_empty() {
                continue;
            }
            let mut kept = self
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if kept.len() == KEPT_LINES {
                kept.pop_front();
            }
            kept.push_back(line);
        }
    }

    /// `what` happened, with the last lines when there are any.
    fn explain(&self, what: &str) -> String {
        let kept = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if kept.is_empty() {
            return what.to_owned();
        }
        let said: Vec<&str> = kept.iter().map(String::as_str).collect();
        format!("{what}; its output ended with: {}", said.join(" | "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_last_lines_explain_an_exit_bounded_in_count_and_length() {
        let tail = Tail::default();
        let mut text: String = (0..20).map(|n| format!("line {n}\n")).collect();
        text.push_str(&"x".repeat(1000));
        text.push_str("\nERROR: User +4915 is not registered.\n");
        tail.clone()
            .drain(
                Box::new(std::io::Cursor::new(text.into_bytes())),
                "t".into(),
            )
            .await;
        let said = tail.explain("exited");
        assert!(
            said.starts_with("exited; its output ended with: "),
            "{said}"
        );
        assert!(
            said.ends_with("ERROR: User +4915 is not registered."),
            "{said}"
        );
        assert!(!said.contains("line 9 "), "only the last lines: {said}");
        assert!(
            said.len() < KEPT_LINES * (LINE_CHARS + 3) + 50,
            "{}",
            said.len()
        );
        assert_eq!(Tail::default().explain("exited"), "exited");
    }
}
