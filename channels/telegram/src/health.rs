//! Receive-side health for `/readyz`: the poller and the webhook setup report here, and
//! `Channel::health` reads it. Polling is ready while `getUpdates` keeps succeeding and no
//! 409 Conflict stands; webhook mode is ready once `setWebhook` succeeded.

use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use switchboard_channel::Health;
use tokio::time::Instant;

use crate::config::Mode;

/// Shared receive state; a std Mutex because every access is a short, await-free update.
#[derive(Debug, Default)]
pub(crate) struct HealthState {
    inner: Mutex<Status>,
}

#[derive(Debug, Default)]
struct Status {
    last_ok: Option<(Instant, SystemTime)>,
    conflict: Option<String>,
    last_error: Option<String>,
    webhook_set: bool,
    stopped: Option<String>,
}

/// Detail shown while a 409 Conflict stands.
pub(crate) const CONFLICT_HINT: &str = "409 Conflict: another bot instance is polling, or a \
    webhook is set: run deleteWebhook or stop the other instance";

impl HealthState {
    fn with<T>(&self, f: impl FnOnce(&mut Status) -> T) -> T {
        f(&mut self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// A `getUpdates` (or `setWebhook`) call succeeded.
    pub(crate) fn receive_ok(&self) {
        self.with(|s| {
            s.last_ok = Some((Instant::now(), SystemTime::now()));
            s.conflict = None;
            s.last_error = None;
        });
    }

    /// `setWebhook` succeeded.
    pub(crate) fn webhook_set(&self) {
        self.receive_ok();
        self.with(|s| s.webhook_set = true);
    }

    /// `getUpdates` answered 409.
    pub(crate) fn conflict(&self, description: &str) {
        self.with(|s| s.conflict = Some(format!("{CONFLICT_HINT} ({description})")));
    }

    /// A receive call failed for another reason.
    pub(crate) fn error(&self, detail: String) {
        self.with(|s| s.last_error = Some(detail));
    }

    /// The receive loop ended for good.
    pub(crate) fn stopped(&self, detail: String) {
        self.with(|s| s.stopped = Some(detail));
    }

    /// The channel's health in `mode`; polling counts as stale after `stale_after`.
    pub(crate) fn report(&self, mode: Mode, stale_after: Duration) -> Health {
        self.with(|s| {
            let last_ok = s.last_ok.map(|(_, wall)| wall);
            let not_ready = |detail: String| Health {
                ready: false,
                detail,
                last_ok,
            };
            if let Some(stopped) = &s.stopped {
                return not_ready(format!("stopped: {stopped}"));
            }
            if let Some(conflict) = &s.conflict {
                return not_ready(conflict.clone());
            }
            let fresh = s.last_ok.is_some_and(|(at, _)| at.elapsed() <= stale_after);
            match mode {
                Mode::Webhook if s.webhook_set => Health {
                    ready: true,
                    detail: "webhook set".into(),
                    last_ok,
                },
                Mode::Polling if fresh => Health {
                    ready: true,
                    detail: "polling".into(),
                    last_ok,
                },
                _ => not_ready(match (&s.last_error, s.last_ok) {
                    (Some(error), _) => error.clone(),
                    (None, None) => "starting".into(),
                    (None, Some(_)) => "no successful getUpdates recently".into(),
                }),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STALE: Duration = Duration::from_secs(70);

    #[tokio::test(start_paused = true)]
    async fn polling_is_ready_only_while_get_updates_keeps_succeeding() {
        let health = HealthState::default();
        assert!(!health.report(Mode::Polling, STALE).ready);
        health.receive_ok();
        assert!(health.report(Mode::Polling, STALE).ready);
        tokio::time::advance(STALE + Duration::from_secs(1)).await;
        let stale = health.report(Mode::Polling, STALE);
        assert!(!stale.ready);
        assert!(stale.last_ok.is_some());
    }

    #[test]
    fn a_standing_conflict_makes_polling_not_ready_until_the_next_success() {
        let health = HealthState::default();
        health.receive_ok();
        health.conflict("Conflict: terminated by other getUpdates request");
        let report = health.report(Mode::Polling, STALE);
        assert!(!report.ready);
        assert!(report.detail.contains("deleteWebhook"), "{}", report.detail);
        health.receive_ok();
        assert!(health.report(Mode::Polling, STALE).ready);
    }

    #[test]
    fn webhook_mode_is_ready_once_the_webhook_is_set() {
        let health = HealthState::default();
        assert!(!health.report(Mode::Webhook, STALE).ready);
        health.webhook_set();
        assert!(health.report(Mode::Webhook, STALE).ready);
        health.stopped("token rejected".into());
        assert!(!health.report(Mode::Webhook, STALE).ready);
    }
}
