//! Normalized chat types: what every channel adapter turns platform events into, and what
//! the core hands back to a channel to send. No platform type ever crosses this line.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::access::Place;
use crate::attach::Attachment;

/// Which conversation an event belongs to: one agent loop, one history, one turn at a time.
///
/// `channel` is the configured instance name (`telegram`, `support-bot`, …), `chat` the
/// platform's chat/channel id and `thread` the topic or thread inside it, when there is one.
/// The `Display` form `channel:chat[:thread]` is what the store keeps and operators type.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ConversationKey {
    /// Configured channel instance name.
    pub channel: String,
    /// Platform chat id (Telegram chat id, Discord channel id, Slack channel id, web session).
    pub chat: String,
    /// Topic, thread root or thread channel, when the platform has one.
    pub thread: Option<String>,
}

impl ConversationKey {
    /// A key without a thread.
    pub fn new(channel: impl Into<String>, chat: impl Into<String>) -> Self {
        Self {
            channel: channel.into(),
            chat: chat.into(),
            thread: None,
        }
    }

    /// The same key inside a thread or topic.
    pub fn in_thread(mut self, thread: impl Into<String>) -> Self {
        self.thread = Some(thread.into());
        self
    }
}

/// The text form, `channel:chat` or `channel:chat:thread`, is how keys are stored and typed.
/// A `:` inside a part (Matrix room ids: `!abc:example.org`) is written `%3A` and a `%` is
/// written `%25`, so every key reads back as itself; ids without either (every other
/// platform's) read exactly as before.
impl fmt::Display for ConversationKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (channel, chat) = (escape(&self.channel), escape(&self.chat));
        match &self.thread {
            Some(thread) => write!(f, "{channel}:{chat}:{}", escape(thread)),
            None => write!(f, "{channel}:{chat}"),
        }
    }
}

fn escape(part: &str) -> std::borrow::Cow<'_, str> {
    if part.contains([':', '%']) {
        part.replace('%', "%25").replace(':', "%3A").into()
    } else {
        part.into()
    }
}

fn unescape(part: &str) -> String {
    if !part.contains('%') {
        return part.to_owned();
    }
    let mut out = String::with_capacity(part.len());
    let mut rest = part;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let code = rest.get(at + 1..at + 3).map(str::to_ascii_uppercase);
        match code.as_deref() {
            Some("3A") => out.push(':'),
            Some("25") => out.push('%'),
            _ => {
                out.push('%');
                rest = &rest[at + 1..];
                continue;
            }
        }
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    out
}

/// Why a string is not a [`ConversationKey`].
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("conversation key must look like channel:chat or channel:chat:thread, got {0:?}")]
pub struct BadConversationKey(pub String);

impl FromStr for ConversationKey {
    type Err = BadConversationKey;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut parts = s.splitn(3, ':');
        let channel = parts.next().filter(|p| !p.is_empty());
        let chat = parts.next().filter(|p| !p.is_empty());
        match (channel, chat) {
            (Some(channel), Some(chat)) => Ok(Self {
                channel: unescape(channel),
                chat: unescape(chat),
                thread: parts.next().filter(|p| !p.is_empty()).map(unescape),
            }),
            _ => Err(BadConversationKey(s.to_owned())),
        }
    }
}

/// Who sent an event, as the platform identifies them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserRef {
    /// Stable platform user id (numeric for Telegram/Discord, `U…` for Slack).
    pub id: String,
    /// Display name or username, for prompts and logs; may change over time.
    pub name: Option<String>,
}

/// A platform message the bot posted, so it can later be edited or deleted.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MessageRef {
    /// Platform message id (Telegram message_id, Discord snowflake, Slack ts, web uuid).
    pub id: String,
}

impl MessageRef {
    /// Wrap a platform message id.
    pub fn new(id: impl Into<String>) -> Self {
        Self { id: id.into() }
    }
}

/// A user's text message, normalized.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inbound {
    /// The conversation it belongs to.
    pub key: ConversationKey,
    /// The platform's own unique id for this delivery (update id, message id, event id).
    pub event_id: String,
    /// Who wrote it.
    pub user: UserRef,
    /// Text (or caption), with the bot mention already removed.
    pub text: String,
    /// A private chat or a group, for the core's access decision.
    #[serde(default)]
    pub place: Place,
    /// Files sent with the message, as references; the core downloads them after the event
    /// is stored.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attachment>,
}

/// A press of a button the bot posted earlier.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ButtonPress {
    /// The conversation the button was posted in.
    pub key: ConversationKey,
    /// The platform's unique id for this press (callback query id, interaction id, …).
    pub event_id: String,
    /// Who pressed it.
    pub user: UserRef,
    /// The payload the bot attached to the button (see [`Button::payload`]).
    pub payload: String,
    /// The message carrying the button, when the platform says.
    pub message: Option<MessageRef>,
    /// Platform token needed to answer the press (Discord interaction token, Slack
    /// response_url); opaque to the core.
    #[serde(default)]
    pub reply_token: Option<String>,
    /// A private chat or a group, for access and approval rights.
    #[serde(default)]
    pub place: Place,
}

/// Everything a channel delivers to the core.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChannelEvent {
    /// A text message.
    Message(Inbound),
    /// A button press.
    Button(ButtonPress),
}

impl ChannelEvent {
    /// The conversation this event belongs to.
    pub fn key(&self) -> &ConversationKey {
        match self {
            Self::Message(m) => &m.key,
            Self::Button(b) => &b.key,
        }
    }

    /// The platform's unique id, used to drop redeliveries.
    pub fn event_id(&self) -> &str {
        match self {
            Self::Message(m) => &m.event_id,
            Self::Button(b) => &b.event_id,
        }
    }

    /// Where it was written: a private chat or a group.
    pub fn place(&self) -> &Place {
        match self {
            Self::Message(m) => &m.place,
            Self::Button(b) => &b.place,
        }
    }

    /// Who caused the event.
    pub fn user(&self) -> &UserRef {
        match self {
            Self::Message(m) => &m.user,
            Self::Button(b) => &b.user,
        }
    }
}

/// A button the bot attaches to a message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Button {
    /// What the user sees.
    pub label: String,
    /// What comes back in [`ButtonPress::payload`]; at most 64 bytes so it fits Telegram's
    /// callback data (the tightest platform limit).
    pub payload: String,
}

/// A message the core asks a channel to send or to put in place of an earlier one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outbound {
    /// Markdown text; the channel renders it to its platform's format.
    pub text: String,
    /// Buttons to show under the text (ignored by channels without button support).
    pub buttons: Vec<Button>,
}

impl Outbound {
    /// Plain text, no buttons.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            buttons: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversation_key_round_trips_through_display_and_from_str() {
        for key in [
            ConversationKey::new("telegram", "-100123"),
            ConversationKey::new("slack", "C01").in_thread("1712345678.000100"),
        ] {
            assert_eq!(key.to_string().parse::<ConversationKey>().unwrap(), key);
        }
    }

    #[test]
    fn matrix_ids_with_colons_and_percents_read_back_as_themselves() {
        for key in [
            ConversationKey::new("matrix", "!abc:example.org:8448").in_thread("$ev:example.org"),
            ConversationKey::new("matrix", "!50%off:example.org"),
            ConversationKey::new("web", "100%3A"),
        ] {
            let text = key.to_string();
            assert_eq!(
                text.matches(':').count(),
                1 + usize::from(key.thread.is_some()),
                "{text}"
            );
            assert_eq!(text.parse::<ConversationKey>().unwrap(), key, "{text}");
        }
        assert_eq!(
            ConversationKey::new("matrix", "!a:b").to_string(),
            "matrix:!a%3Ab"
        );
        let stray: ConversationKey = "web:a%zz%".parse().unwrap();
        assert_eq!(stray.chat, "a%zz%", "a % that escapes nothing stays");
    }

    #[test]
    fn conversation_key_without_chat_is_refused() {
        assert!("telegram".parse::<ConversationKey>().is_err());
        assert!(":x".parse::<ConversationKey>().is_err());
    }

    #[test]
    fn channel_event_serializes_with_a_type_tag() {
        let event = ChannelEvent::Message(Inbound {
            key: ConversationKey::new("web", "s1"),
            event_id: "e1".into(),
            user: UserRef {
                id: "u1".into(),
                name: None,
            },
            text: "hi".into(),
            place: Place::Direct,
            attachments: Vec::new(),
        });
        let json = serde_json::to_value(&event).unwrap();
        assert_eq!(json["type"], "message");
        let back: ChannelEvent = serde_json::from_value(json).unwrap();
        assert_eq!(back, event);
    }
}
