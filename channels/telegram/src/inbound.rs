//! Inbound edge: one Telegram `Update` (from polling or the webhook) becomes at most one
//! `ChannelEvent` (marked as written in a private chat or a group, for the core's access
//! decision), or is skipped (not for us). Also the update kinds both receive paths ask for.
//! Pure: no I/O.

use switchboard_channel::{
    ButtonPress, ChannelEvent, ConversationKey, Inbound, MessageRef, Place, UserRef,
};
use teloxide::types::{
    AllowedUpdate, CallbackQuery, Chat, MaybeInaccessibleMessage, Message, Update, UpdateKind, User,
};

use crate::client::{BotIdentity, Client};
use crate::files::attachments;

/// The update kinds the gateway handles (`Reader::read`); both receive paths ask Telegram
/// for only these, so it does not send the others.
pub(crate) const ALLOWED_UPDATES: [AllowedUpdate; 2] =
    [AllowedUpdate::Message, AllowedUpdate::CallbackQuery];

/// What the channel needs to read an update.
pub(crate) struct Reader<'a> {
    pub(crate) channel: &'a str,
    pub(crate) me: &'a BotIdentity,
    pub(crate) require_mention: bool,
}

/// What becomes of one update.
#[derive(Debug, PartialEq)]
pub(crate) enum Triage {
    /// Hand it to the sink (boxed: an event is far larger than a skip reason).
    Deliver(Box<ChannelEvent>),
    /// Not for us (other kinds, bots, unaddressed group chatter); acknowledged and dropped.
    Skip(&'static str),
}

impl Client {
    /// A reader that turns updates into events for this channel.
    pub(crate) fn reader<'a>(&'a self, me: &'a BotIdentity) -> Reader<'a> {
        Reader {
            channel: &self.name,
            me,
            require_mention: self.config.require_mention_in_groups,
        }
    }
}

impl Reader<'_> {
    /// Decide what `update` becomes.
    pub(crate) fn read(&self, update: &Update) -> Triage {
        match &update.kind {
            UpdateKind::Message(msg) => self.message(update.id.0, msg),
            UpdateKind::CallbackQuery(query) => self.callback(query),
            UpdateKind::Error(raw) => {
                tracing::warn!(
                    channel = self.channel,
                    update_id = update.id.0,
                    "skipped an update the Telegram client could not read: {}",
                    raw.to_string().chars().take(200).collect::<String>()
                );
                Triage::Skip("an update teloxide could not parse")
            }
            _ => Triage::Skip("an update kind the gateway does not handle"),
        }
    }

    fn message(&self, update_id: u32, msg: &Message) -> Triage {
        let Some(from) = msg.from.as_ref() else {
            return Triage::Skip("a message without a sender");
        };
        if from.is_bot {
            return Triage::Skip("a message from a bot");
        }
        let attachments = attachments(msg);
        let raw = msg.text().or_else(|| msg.caption()).unwrap_or("");
        if raw.is_empty() && attachments.is_empty() {
            return Triage::Skip("a message without text");
        }
        let private = msg.chat.is_private();
        let text = match self.addressed_text(msg, raw, private) {
            Some(text) => text,
            None => return Triage::Skip("a group message not addressed to the bot"),
        };
        if text.is_empty() && attachments.is_empty() {
            return Triage::Skip("a mention without text");
        }
        Triage::Deliver(Box::new(ChannelEvent::Message(Inbound {
            key: self.key(msg),
            event_id: format!("u{update_id}"),
            user: user_ref(from),
            text,
            place: place(&msg.chat),
            attachments,
        })))
    }

    /// The text the core should see, or `None` when a group message is not for the bot.
    fn addressed_text(&self, msg: &Message, raw: &str, private: bool) -> Option<String> {
        let (command_text, command) = strip_command_suffix(raw, &self.me.username);
        let (text, mentioned) = strip_mention(&command_text, &self.me.username);
        if private || !self.require_mention {
            return (command != Command::ForOtherBot).then_some(text);
        }
        let replied = self.replies_to_bot(msg);
        (mentioned || replied || command == Command::ForUs).then_some(text)
    }

    fn replies_to_bot(&self, msg: &Message) -> bool {
        let Some(parent) = msg.reply_to_message() else {
            return false;
        };
        // In a forum topic every message "replies" to the topic's first message.
        if msg.is_topic_message && msg.thread_id.is_some_and(|t| t.0 == parent.id) {
            return false;
        }
        parent.from.as_ref().is_some_and(|u| u.id.0 == self.me.id)
    }

    fn key(&self, msg: &Message) -> ConversationKey {
        let key = ConversationKey::new(self.channel, msg.chat.id.0.to_string());
        match msg.thread_id.filter(|_| msg.is_topic_message) {
            Some(thread) => key.in_thread(thread.0.0.to_string()),
            None => key,
        }
    }

    fn callback(&self, query: &CallbackQuery) -> Triage {
        let (Some(data), Some(message)) = (query.data.as_ref(), query.message.as_ref()) else {
            return Triage::Skip("a callback query without data or message");
        };
        let mut key = ConversationKey::new(self.channel, message.chat().id.0.to_string());
        if let MaybeInaccessibleMessage::Regular(msg) = message {
            key = self.key(msg);
        }
        Triage::Deliver(Box::new(ChannelEvent::Button(ButtonPress {
            key,
            event_id: format!("cb{}", query.id.0),
            user: user_ref(&query.from),
            payload: data.clone(),
            message: Some(MessageRef::new(message.id().0.to_string())),
            reply_token: Some(query.id.0.clone()),
            place: place(message.chat()),
        })))
    }
}

/// A private chat, or a group known by its chat id (what `allowed_groups` lists).
fn place(chat: &Chat) -> Place {
    if chat.is_private() {
        Place::Direct
    } else {
        Place::group(chat.id.0.to_string())
    }
}

fn user_ref(user: &User) -> UserRef {
    let name = match &user.username {
        Some(username) => format!("@{username}"),
        None => user.full_name(),
    };
    UserRef {
        id: user.id.0.to_string(),
        name: Some(name),
    }
}

/// Whom a leading `/command@bot` names.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Command {
    None,
    ForUs,
    ForOtherBot,
}

/// `/stop@mybot now` → (`/stop now`, ForUs); other text is returned as it is.
fn strip_command_suffix(text: &str, username: &str) -> (String, Command) {
    let Some(rest) = text.strip_prefix('/') else {
        return (text.to_owned(), Command::None);
    };
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let (word, tail) = rest.split_at(end);
    match word.split_once('@') {
        Some((command, bot)) if bot.eq_ignore_ascii_case(username) => {
            (format!("/{command}{tail}"), Command::ForUs)
        }
        Some(_) => (text.to_owned(), Command::ForOtherBot),
        None => (text.to_owned(), Command::None),
    }
}

/// Remove every `@username` of the bot; returns the tidied text and whether one was found.
fn strip_mention(text: &str, username: &str) -> (String, bool) {
    let needle = format!("@{}", username.to_ascii_lowercase());
    let mut out = text.to_owned();
    let mut found = false;
    let mut from = 0;
    while let Some(pos) = out.to_ascii_lowercase()[from..]
        .find(&needle)
        .map(|p| p + from)
    {
        let end = pos + needle.len();
        let bounded_before = !out[..pos].chars().next_back().is_some_and(is_name_char);
        let bounded_after = !out[end..].chars().next().is_some_and(is_name_char);
        if !(bounded_before && bounded_after) {
            from = end;
            continue;
        }
        found = true;
        let before = out[..pos].trim_end();
        let after = out[end..].trim_start();
        out = if before.is_empty() {
            after.trim_start_matches([',', ':']).trim_start().to_owned()
        } else if after.is_empty() {
            before.to_owned()
        } else {
            format!("{before} {after}")
        };
        from = 0;
    }
    (out.trim().to_owned(), found)
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leading_mention_is_stripped_with_its_punctuation() {
        assert_eq!(
            strip_mention("@SwitchBot, hi there", "switchbot"),
            ("hi there".into(), true)
        );
        assert_eq!(
            strip_mention("what do you think @switchbot", "SwitchBot").0,
            "what do you think"
        );
        assert_eq!(
            strip_mention("ask @switchbot about it", "switchbot").0,
            "ask about it"
        );
    }

    #[test]
    fn a_longer_name_or_an_email_is_not_a_mention() {
        assert!(!strip_mention("@switchbot_fan hello", "switchbot").1);
        assert!(!strip_mention("mail me at me@switchbot", "switchbot").1);
    }

    #[test]
    fn a_command_for_us_loses_its_suffix_and_one_for_another_bot_is_marked() {
        assert_eq!(
            strip_command_suffix("/stop@SwitchBot", "switchbot"),
            ("/stop".into(), Command::ForUs)
        );
        assert_eq!(
            strip_command_suffix("/new@switchbot please", "switchbot"),
            ("/new please".into(), Command::ForUs)
        );
        assert_eq!(
            strip_command_suffix("/help@otherbot", "switchbot").1,
            Command::ForOtherBot
        );
        assert_eq!(strip_command_suffix("/help", "switchbot").1, Command::None);
    }
}
