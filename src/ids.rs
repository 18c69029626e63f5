//! Typed identifiers and stored states shared by the store and the core: the gateway's own
//! user ids, approval ids and statuses, memory scopes, and inbox kinds. Each has one text form, used in the database,
//! in button payloads and on the command line, with a `Display`/`FromStr` round trip, so no
//! caller formats or splits these strings by hand.
//!
//! A leaf module: it imports nothing from the rest of the crate, so the store, the
//! conversation actors and memory can all depend on it without depending on each other.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use switchboard_channel::ConversationKey;

/// The user id expiry events and scheduled fires carry; no platform issues ids of this shape.
pub const SYSTEM_USER: &str = "switchboard:system";

/// The user id of the operator acting on the dashboard (`crate::admin`): may answer any
/// approval; no platform issues ids of this shape either.
pub const OPERATOR_USER: &str = "switchboard:operator";

/// Text that is not a valid value of one of these types.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a valid {what}: {value:?}")]
pub struct ParseIdError {
    /// What was being parsed (`approval id`, `approval status`, …).
    pub what: &'static str,
    /// The rejected text.
    pub value: String,
}

impl ParseIdError {
    fn new(what: &'static str, value: &str) -> Self {
        Self {
            what,
            value: value.to_owned(),
        }
    }
}

/// The id of one approval request: short, ASCII letters and digits, shown in prompts,
/// button payloads and `/approve <id>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ApprovalId(String);

impl ApprovalId {
    /// The longest id accepted from outside (button payloads must fit Telegram's 64 bytes).
    pub const MAX_LEN: usize = 32;

    /// Wrap an id the gateway made or stored itself; text from users goes through `parse`.
    pub fn new(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    /// A fresh random id: 10 lowercase hex digits.
    pub fn random() -> Self {
        Self(uuid::Uuid::new_v4().simple().to_string()[..10].to_owned())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ApprovalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for ApprovalId {
    type Err = ParseIdError;

    /// Accepts 1 to [`ApprovalId::MAX_LEN`] ASCII letters and digits.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.is_empty() || s.len() > Self::MAX_LEN || !s.chars().all(|c| c.is_ascii_alphanumeric())
        {
            return Err(ParseIdError::new("approval id", s));
        }
        Ok(Self(s.to_owned()))
    }
}

/// Where an approval request stands. Only `Pending` can change, exactly once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalStatus {
    /// Waiting for a person.
    Pending,
    /// Allowed to run.
    Approved,
    /// Refused by a person.
    Denied,
    /// Nobody decided in time.
    Expired,
}

impl ApprovalStatus {
    /// Every status, in lifecycle order.
    pub const ALL: [Self; 4] = [Self::Pending, Self::Approved, Self::Denied, Self::Expired];

    /// The stored text (the `approvals.status` column).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Denied => "denied",
            Self::Expired => "expired",
        }
    }
}

impl fmt::Display for ApprovalStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ApprovalStatus {
    type Err = ParseIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|status| status.as_str() == s)
            .ok_or_else(|| ParseIdError::new("approval status", s))
    }
}

/// Whose memories a fact belongs to. Stored as `conv:<conversation key>` or
/// `user:<channel>:<user id>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum MemoryScope {
    /// Shared by everyone in one conversation.
    Conversation(ConversationKey),
    /// One user's, across that channel's conversations.
    User {
        /// Channel instance name (a `ConversationKey`'s `channel`).
        channel: String,
        /// Platform user id (may itself contain `:`).
        user: String,
    },
}

impl MemoryScope {
    /// The scope of one user on one channel.
    pub fn user(channel: impl Into<String>, user: impl Into<String>) -> Self {
        Self::User {
            channel: channel.into(),
            user: user.into(),
        }
    }
}

impl fmt::Display for MemoryScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Conversation(key) => write!(f, "conv:{key}"),
            Self::User { channel, user } => write!(f, "user:{channel}:{user}"),
        }
    }
}

impl FromStr for MemoryScope {
    type Err = ParseIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || ParseIdError::new("memory scope", s);
        if let Some(key) = s.strip_prefix("conv:") {
            return key.parse().map(Self::Conversation).map_err(|_| bad());
        }
        let rest = s.strip_prefix("user:").ok_or_else(bad)?;
        match rest.split_once(':') {
            Some((channel, user)) if !channel.is_empty() && !user.is_empty() => {
                Ok(Self::user(channel, user))
            }
            _ => Err(bad()),
        }
    }
}

impl Serialize for MemoryScope {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for MemoryScope {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// How the inbox treats a stored event while its conversation waits for an approval:
/// only `Control` events (button presses, `/stop`, `/approve`, `/deny`) are claimed then.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InboxKind {
    /// A message that starts or continues a turn.
    Message,
    /// An event that may be handled while a turn is suspended.
    Control,
}

impl InboxKind {
    /// The stored text (the `inbox.kind` column).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Message => "message",
            Self::Control => "control",
        }
    }
}

impl fmt::Display for InboxKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for InboxKind {
    type Err = ParseIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [Self::Message, Self::Control]
            .into_iter()
            .find(|kind| kind.as_str() == s)
            .ok_or_else(|| ParseIdError::new("inbox kind", s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approval_ids_round_trip_and_reject_anything_but_short_alphanumerics() {
        let id = ApprovalId::random();
        assert_eq!(id.as_str().len(), 10);
        assert_eq!(id.to_string().parse::<ApprovalId>(), Ok(id.clone()));
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(json, format!("\"{id}\""));
        assert_eq!(serde_json::from_str::<ApprovalId>(&json).unwrap(), id);
        for bad in ["", "a-b", "a:b", "a b", &"x".repeat(33)] {
            assert!(bad.parse::<ApprovalId>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn approval_statuses_keep_their_stored_text() {
        let texts: Vec<_> = ApprovalStatus::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(texts, ["pending", "approved", "denied", "expired"]);
        for status in ApprovalStatus::ALL {
            assert_eq!(status.as_str().parse(), Ok(status));
            let json = serde_json::to_string(&status).unwrap();
            assert_eq!(json, format!("\"{status}\""));
        }
        assert!("Approved".parse::<ApprovalStatus>().is_err());
    }

    #[test]
    fn memory_scopes_read_the_format_already_stored() {
        let key = ConversationKey::new("slack", "C1").in_thread("9");
        let conv = MemoryScope::Conversation(key);
        assert_eq!(conv.to_string(), "conv:slack:C1:9");
        assert_eq!("conv:slack:C1:9".parse(), Ok(conv));
        let user = MemoryScope::user("tg", "switchboard:system");
        assert_eq!(user.to_string(), "user:tg:switchboard:system");
        assert_eq!("user:tg:switchboard:system".parse(), Ok(user.clone()));
        let json = serde_json::to_string(&user).unwrap();
        assert_eq!(serde_json::from_str::<MemoryScope>(&json).unwrap(), user);
        for bad in [
            "", "conv:", "conv:web", "user:tg", "user::u", "user:tg:", "team:x:y",
        ] {
            assert!(bad.parse::<MemoryScope>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn inbox_kinds_keep_their_stored_text() {
        assert_eq!(InboxKind::Message.as_str(), "message");
        assert_eq!(InboxKind::Control.as_str(), "control");
        assert_eq!("control".parse(), Ok(InboxKind::Control));
        assert!("other".parse::<InboxKind>().is_err());
    }
}
