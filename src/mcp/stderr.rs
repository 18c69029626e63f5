//! A stdio server's stderr: drained line by line (so a chatty server never blocks on a full
//! pipe), each line logged at debug, and the last few kept. When the server exits or fails
//! its handshake, those last lines are the cause an operator needs ("Cannot find module …",
//! "permission denied"), so they go into the error that the WARN, `/readyz` and
//! `check --probe` show: scrubbed of the server's own secrets and of credential shapes,
//! and bounded in lines and characters.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead};

use crate::scrub::Scrubber;

/// Lines of stderr kept for an error.
const KEPT_LINES: usize = 16;
/// Characters kept of one line (the rest of a long line says nothing more about the cause).
const LINE_CHARS: usize = 300;
/// How long a failed start waits for the last stderr lines of an exiting server.
const SETTLE: Duration = Duration::from_millis(300);

/// The last lines a server wrote to stderr, shared with the task that drains it.
#[derive(Clone, Default)]
pub struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    /// Set once the pipe is closed (the server and everything it started has exited).
    closed: Arc<tokio::sync::Notify>,
    done: Arc<std::sync::atomic::AtomicBool>,
}

impl StderrTail {
    /// Drain `stderr` of the server `name` in a task: log each line at debug, keep the last.
    pub fn drain(name: &str, stderr: impl AsyncRead + Unpin + Send + 'static) -> Self {
        let tail = Self::default();
        let (kept, name) = (tail.clone(), name.to_owned());
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let line: String = line.chars().take(LINE_CHARS).collect();
                tracing::debug!(server = %name, "mcp server stderr: {line}");
                kept.push(line);
            }
            kept.done.store(true, std::sync::atomic::Ordering::SeqCst);
            kept.closed.notify_waiters();
        });
        tail
    }

    fn push(&self, line: String) {
        if line.trim().is_empty() {
            return;
        }
        let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        if lines.len() == KEPT_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// Wait briefly for an exiting server's last lines (its pipe closing), then
    /// [`Self::explain`] `error` with them.
    pub async fn explain_settled(&self, error: String, secrets: &Scrubber) -> String {
        let closed = self.closed.notified();
        if !self.done.load(std::sync::atomic::Ordering::SeqCst) {
            let _ = tokio::time::timeout(SETTLE, closed).await;
        }
        self.explain(error, secrets)
    }

    /// `error` followed by the last stderr lines, scrubbed; `error` alone when there are none.
    pub fn explain(&self, error: String, secrets: &Scrubber) -> String {
        let lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        if lines.is_empty() {
            return error;
        }
        let said: Vec<&str> = lines.iter().map(String::as_str).collect();
        let said = secrets.scrub(&said.join(" | ")).into_owned();
        format!("{error}; its stderr ended with: {said}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_last_lines_of_stderr_explain_an_error_scrubbed_and_bounded() {
        let mut text = String::new();
        for n in 0..30 {
            text.push_str(&format!("line {n}\n"));
        }
        text.push_str("Error: Cannot find module '/srv/missing.js' token=hunter2-secret\n");
        text.push_str(&"x".repeat(1000));
        let tail = StderrTail::drain("t", std::io::Cursor::new(text.into_bytes()));
        let scrubber = Scrubber::new(["hunter2-secret"]);
        let said = tail
            .explain_settled("the handshake failed".into(), &scrubber)
            .await;
        assert!(said.starts_with("the handshake failed; its stderr ended with: "));
        assert!(
            said.contains("Cannot find module '/srv/missing.js'"),
            "{said}"
        );
        assert!(!said.contains("hunter2-secret"), "{said}");
        assert!(!said.contains("line 12 "), "only the last lines: {said}");
        assert!(
            said.len() < KEPT_LINES * (LINE_CHARS + 3) + 100,
            "{}",
            said.len()
        );
    }

    #[test]
    fn an_error_without_stderr_stays_as_it_was() {
        let tail = StderrTail::default();
        assert_eq!(tail.explain("boom".into(), &Scrubber::default()), "boom");
    }
}
