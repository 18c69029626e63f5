//! Platform ids checked at a channel's edge, before an event reaches the sink. The inbox
//! deduplicates on the event id and keys conversations on the chat and thread ids, so an
//! empty event id would make every such event a "redelivery" of the first, and a control
//! character (NUL above all, which PostgreSQL `text` cannot hold) would fail the insert on
//! every redelivery. Channels answer such an event 400 (or skip it, where the transport has
//! no answer) with a log line; message text and display names are not ids and are never
//! checked here: they are stored exactly as written.

use crate::types::{ChannelEvent, ConversationKey};

/// Why an event's ids are refused.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum BadId {
    /// An id that must have a value is empty.
    #[error("{0} is empty")]
    Empty(&'static str),
    /// An id holds a control character (NUL, ESC, DEL, a C1 control, …).
    #[error("{field} contains control character U+{code:04X}")]
    Control {
        /// Which id.
        field: &'static str,
        /// The first offending character.
        code: u32,
    },
}

/// Check one platform id: no control characters, and not empty unless `may_be_empty`.
pub fn check_id(field: &'static str, id: &str, may_be_empty: bool) -> Result<(), BadId> {
    if id.is_empty() && !may_be_empty {
        return Err(BadId::Empty(field));
    }
    match id.chars().find(|c| c.is_control()) {
        Some(c) => Err(BadId::Control {
            field,
            code: u32::from(c),
        }),
        None => Ok(()),
    }
}

/// Check a conversation key's parts: channel and chat present, none with control characters
/// (a thread, when there is one, must have a value too, or the key would not read back).
pub fn check_key(key: &ConversationKey) -> Result<(), BadId> {
    check_id("channel", &key.channel, false)?;
    check_id("chat id", &key.chat, false)?;
    match &key.thread {
        Some(thread) => check_id("thread id", thread, false),
        None => Ok(()),
    }
}

impl ChannelEvent {
    /// Check every platform id the inbox stores or keys on: the event id (never empty),
    /// the conversation key, the user id and a pressed message's id.
    pub fn check_ids(&self) -> Result<(), BadId> {
        check_id("event id", self.event_id(), false)?;
        check_key(self.key())?;
        check_id("user id", &self.user().id, true)?;
        if let Self::Button(press) = self
            && let Some(message) = &press.message
        {
            check_id("message id", &message.id, true)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::Place;
    use crate::types::{Inbound, UserRef};

    fn event(event_id: &str, chat: &str, user: &str, text: &str) -> ChannelEvent {
        ChannelEvent::Message(Inbound {
            key: ConversationKey::new("slack", chat),
            event_id: event_id.into(),
            user: UserRef {
                id: user.into(),
                name: Some("na\0me\u{1b}".into()),
            },
            text: text.into(),
            place: Place::Direct,
            attachments: Vec::new(),
        })
    }

    #[test]
    fn ordinary_ids_pass_and_text_and_names_are_never_checked() {
        let ok = event("Ev01", "D1", "U1", "nul \0 and bell \u{7} in text 👋 שלום");
        assert_eq!(ok.check_ids(), Ok(()));
    }

    #[test]
    fn an_empty_event_id_is_refused() {
        assert_eq!(
            event("", "D1", "U1", "hi").check_ids(),
            Err(BadId::Empty("event id"))
        );
    }

    #[test]
    fn control_characters_in_any_id_are_refused() {
        for (ev, chat, user, field) in [
            ("E\0", "D1", "U1", "event id"),
            ("E1", "D\u{1}", "U1", "chat id"),
            ("E1", "D1", "U\u{7f}", "user id"),
            ("E1", "D1", "U\u{85}", "user id"),
        ] {
            let err = event(ev, chat, user, "hi").check_ids().unwrap_err();
            assert!(
                matches!(err, BadId::Control { field: f, .. } if f == field),
                "{err}"
            );
        }
        let mut threaded = event("E1", "D1", "U1", "hi");
        if let ChannelEvent::Message(m) = &mut threaded {
            m.key.thread = Some(String::new());
        }
        assert_eq!(threaded.check_ids(), Err(BadId::Empty("thread id")));
        assert!(
            BadId::Control {
                field: "event id",
                code: 0
            }
            .to_string()
            .contains("U+0000")
        );
    }
}
