//! What the channel and its webhook share: the Graph API client, each person's last inbound
//! message (its time decides the 24-hour window; its id carries the typing indicator), the
//! answers WhatsApp would not take (shown in the channel's health, so on the dashboard), and
//! failed delivery statuses.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use switchboard_channel::{Health, Recent};

use crate::api::Graph;
use crate::config::WhatsAppConfig;

/// How long after a person's last message free-form messages may reach them.
pub(crate) const WINDOW: Duration = Duration::from_secs(24 * 60 * 60);
/// Messages of ours remembered for quoting when someone replies to one.
const REMEMBERED_SENT: usize = 512;
/// How much of a message a reply quotes.
const QUOTE_CHARS: usize = 200;
/// Meta hides the typing indicator after 25 s: it is renewed when older than this.
const TYPING_REFRESH: Duration = Duration::from_secs(20);

/// Whether a free-form message may reach a person now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Window {
    /// They wrote within the last 24 hours.
    Open,
    /// Their last message is older: only a template may go out.
    Closed,
    /// Nothing heard since this process started: try, and let a `131047` decide.
    Unknown,
}

/// A person's last inbound message.
#[derive(Debug, Clone)]
struct Seen {
    /// When they sent it (Meta's timestamp, Unix seconds).
    at: u64,
    /// Its `wamid`, which the read receipt and typing indicator name.
    message_id: String,
    /// When the typing indicator was last shown for it.
    typing_at: Option<SystemTime>,
}

/// Counters and the last problem, for the channel's health line.
#[derive(Debug, Default)]
struct Tally {
    undeliverable: u64,
    last_undeliverable: Option<String>,
    failed_statuses: u64,
}

/// The channel's shared state.
pub(crate) struct Inner {
    pub name: String,
    pub config: WhatsAppConfig,
    pub api: Graph,
    /// Last inbound message per conversation (chat id). In memory: after a restart the
    /// window is unknown until the person writes, and a `131047` decides then.
    seen: Mutex<HashMap<String, Seen>>,
    tally: Mutex<Tally>,
    /// Our recent messages by `wamid`: (chat, text as shown), so a reply to one can quote it
    /// and one WhatsApp reports failed for the 24-hour window can go out as the template.
    sent: Mutex<Recent<(String, String)>>,
}

fn unix(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl Inner {
    pub(crate) fn new(name: &str, config: WhatsAppConfig) -> Self {
        let api = Graph::new(
            &config.api_url,
            &config.phone_number_id,
            config.access_token.clone(),
        );
        Self {
            name: name.to_owned(),
            config,
            api,
            seen: Mutex::new(HashMap::new()),
            tally: Mutex::new(Tally::default()),
            sent: Mutex::new(Recent::new(REMEMBERED_SENT)),
        }
    }

    /// Note an inbound message `message_id` in `chat` sent at Unix time `at`; a redelivered
    /// older message never moves the window back.
    pub(crate) fn saw(&self, chat: &str, at: u64, message_id: &str) {
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let entry = seen.entry(chat.to_owned()).or_insert_with(|| Seen {
            at,
            message_id: message_id.to_owned(),
            typing_at: None,
        });
        if at >= entry.at {
            entry.at = at;
            entry.message_id = message_id.to_owned();
        }
    }

    /// Whether a free-form message reaches `chat` at `now`.
    pub(crate) fn window(&self, chat: &str, now: SystemTime) -> Window {
        let seen = self
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match seen.get(chat) {
            None => Window::Unknown,
            Some(s) if unix(now).saturating_sub(s.at) < WINDOW.as_secs() => Window::Open,
            Some(_) => Window::Closed,
        }
    }

    /// The message the typing indicator should name in `chat`, when it is due again (never
    /// shown, or shown 20 s ago or more); marks it shown.
    pub(crate) fn typing_due(&self, chat: &str, now: SystemTime) -> Option<String> {
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let s = seen.get_mut(chat)?;
        let fresh = s
            .typing_at
            .is_some_and(|t| now.duration_since(t).unwrap_or_default() < TYPING_REFRESH);
        if fresh {
            return None;
        }
        s.typing_at = Some(now);
        Some(s.message_id.clone())
    }

    /// The typing indicator goes away when an answer arrives: the next turn shows it again.
    pub(crate) fn answered(&self, chat: &str) {
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(s) = seen.get_mut(chat) {
            s.typing_at = None;
        }
    }

    /// Remember our message `id` to `chat` showing `text`.
    pub(crate) fn remember_sent(&self, id: &str, chat: &str, text: &str) {
        let mut sent = self
            .sent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        sent.insert(id.to_owned(), (chat.to_owned(), text.to_owned()));
    }

    /// The start of our message `id`, when it is still remembered.
    pub(crate) fn quote(&self, id: &str) -> Option<String> {
        let (_, text) = self.sent_message(id)?;
        Some(text.chars().take(QUOTE_CHARS).collect())
    }

    /// Our message `id`'s chat and text, when still remembered.
    pub(crate) fn sent_message(&self, id: &str) -> Option<(String, String)> {
        let sent = self
            .sent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        sent.get(id)
    }

    /// Record a message WhatsApp will not take outside the 24-hour window.
    pub(crate) fn undeliverable(&self, chat: &str) {
        let mut tally = self
            .tally
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        tally.undeliverable += 1;
        tally.last_undeliverable = Some(chat.to_owned());
    }

    /// Count a `failed` delivery status.
    pub(crate) fn failed_status(&self) {
        let mut tally = self
            .tally
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        tally.failed_statuses += 1;
    }

    /// Messages WhatsApp refused for good, by reason, for `/metrics`.
    pub(crate) fn undelivered(&self) -> Vec<(&'static str, u64)> {
        let tally = self
            .tally
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        vec![
            ("failed_status", tally.failed_statuses),
            ("outside_24h_window", tally.undeliverable),
        ]
    }

    /// The channel's health: ready (a webhook channel has nothing to connect), with the
    /// messages WhatsApp refused spelled out.
    pub(crate) fn health(&self) -> Health {
        let tally = self
            .tally
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut detail = format!("webhook {}", self.config.path(&self.name));
        if tally.undeliverable > 0 {
            detail.push_str(&format!(
                "; {} message(s) undeliverable outside WhatsApp's 24-hour window (last to {}); set reminder_template",
                tally.undeliverable,
                tally.last_undeliverable.as_deref().unwrap_or("?")
            ));
        }
        if tally.failed_statuses > 0 {
            detail.push_str(&format!(
                "; {} delivery failure(s) reported",
                tally.failed_statuses
            ));
        }
        Health::ready(detail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inner() -> Inner {
        Inner::new("wa", WhatsAppConfig::new("1065", "t", "s"))
    }

    #[test]
    fn the_window_follows_the_latest_inbound_message() {
        let inner = inner();
        let now = SystemTime::now();
        assert_eq!(inner.window("1555", now), Window::Unknown);
        inner.saw("1555", unix(now) - 25 * 3600, "wamid.old");
        assert_eq!(inner.window("1555", now), Window::Closed);
        inner.saw("1555", unix(now) - 60, "wamid.new");
        assert_eq!(inner.window("1555", now), Window::Open);
        inner.saw("1555", unix(now) - 25 * 3600, "wamid.old");
        assert_eq!(
            inner.window("1555", now),
            Window::Open,
            "a redelivery does not close it"
        );
    }

    #[test]
    fn typing_is_renewed_only_after_twenty_seconds() {
        let inner = inner();
        let now = SystemTime::now();
        assert_eq!(inner.typing_due("1555", now), None, "nobody to type to");
        inner.saw("1555", unix(now), "wamid.1");
        assert_eq!(inner.typing_due("1555", now).as_deref(), Some("wamid.1"));
        assert_eq!(inner.typing_due("1555", now + Duration::from_secs(5)), None);
        let later = now + Duration::from_secs(21);
        assert_eq!(inner.typing_due("1555", later).as_deref(), Some("wamid.1"));
    }

    #[test]
    fn undeliverable_messages_show_in_the_health_line() {
        let inner = inner();
        inner.undeliverable("1555");
        let health = inner.health();
        assert!(
            health.detail.contains("1 message(s) undeliverable"),
            "{}",
            health.detail
        );
        assert!(health.detail.contains("1555"));
    }
}
