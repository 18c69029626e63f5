//! What `/readyz` shows for the channel: ready once a look at the mailbox succeeded, the last
//! receive error, a refused login, and the last mail the SMTP server refused for good (a 5xx
//! is never retried, so it stays visible here and in the log).

use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use switchboard_channel::Health;

/// Shared state; a std Mutex because every access is a short, await-free update.
#[derive(Debug, Default)]
pub(crate) struct HealthState {
    inner: Mutex<Status>,
}

#[derive(Debug, Default)]
struct Status {
    last_ok: Option<SystemTime>,
    receive_error: Option<String>,
    stopped: Option<String>,
    refused_send: Option<String>,
}

impl HealthState {
    fn with<T>(&self, f: impl FnOnce(&mut Status) -> T) -> T {
        f(&mut self.inner.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// A look at the mailbox succeeded.
    pub(crate) fn received(&self) {
        self.with(|s| {
            s.last_ok = Some(SystemTime::now());
            s.receive_error = None;
        });
    }

    /// Receiving failed; it is retried.
    pub(crate) fn error(&self, detail: String) {
        self.with(|s| s.receive_error = Some(detail));
    }

    /// Receiving stopped for good (a refused login).
    pub(crate) fn stopped(&self, detail: String) {
        self.with(|s| s.stopped = Some(detail));
    }

    /// The SMTP server refused an answer for good.
    pub(crate) fn refused(&self, detail: String) {
        self.with(|s| s.refused_send = Some(detail));
    }

    /// The `/readyz` view.
    pub(crate) fn health(&self) -> Health {
        self.with(|s| {
            let refused = s
                .refused_send
                .as_ref()
                .map(|r| format!("; last answer refused by the SMTP server: {r}"))
                .unwrap_or_default();
            let (ready, detail) = match (&s.stopped, &s.receive_error, s.last_ok) {
                (Some(stop), _, _) => (false, format!("stopped: {stop}")),
                (None, Some(err), _) => (false, format!("receiving fails: {err}")),
                (None, None, Some(_)) => (true, "reading the mailbox".to_owned()),
                (None, None, None) => (false, "connecting to the IMAP server".to_owned()),
            };
            Health {
                ready,
                detail: format!("{detail}{refused}"),
                last_ok: s.last_ok,
            }
        })
    }
}
