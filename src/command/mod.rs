//! What an inbound event asks for, decided once where it enters the inbox: words for the
//! model, a chat command the gateway answers itself, or an approval button. The inbox stores
//! the event with the [`InboxKind`] this gives (control events pass a conversation waiting
//! on an approval), and the turn dispatches on the same [`Intent`].
//!
//! A leaf of the core: it imports only [`crate::ids`] and the channel types, so the inbox,
//! the conversation actors, memory and the store can all use it without importing each other.

use std::fmt;
use std::str::FromStr;

use switchboard_channel::ChannelEvent;

use crate::ids::{ApprovalId, InboxKind};

mod rewind;
pub use rewind::RewindButton;

/// What an inbound event asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Intent {
    /// Words for the model: a turn.
    Message,
    /// A chat command the gateway answers itself.
    Command(Command),
    /// A button press: the approval decision its payload names, or `None` for a payload no
    /// approval prompt ever carried (stale, or from another bot).
    Button(Option<ApprovalButton>),
    /// The Continue button of a paused turn: a new turn picks up where it stopped.
    Continue,
}

impl Intent {
    /// Classify `event`. The one place a message's text is read for commands.
    pub fn of(event: &ChannelEvent) -> Self {
        match event {
            ChannelEvent::Message(m) => {
                Command::parse(&m.text).map_or(Self::Message, Self::Command)
            }
            ChannelEvent::Button(press) => match schedule_button(&press.payload) {
                Some(id) => Self::Command(Command::Unschedule(id)),
                None if press.payload.parse::<ContinueButton>().is_ok() => Self::Continue,
                None => match press.payload.parse::<RewindButton>() {
                    Ok(b) => Self::Command(Command::Rewind(Some(b.number))),
                    Err(()) => Self::Button(press.payload.parse().ok()),
                },
            },
        }
    }

    /// How the inbox queues it: button presses, `/stop`, `/approve` and `/deny` are control
    /// events a conversation waiting on an approval still takes; everything else waits
    /// behind the approval, in order.
    pub fn kind(&self) -> InboxKind {
        match self {
            Self::Button(_)
            | Self::Command(Command::Stop | Command::Approve(_) | Command::Deny(_)) => {
                InboxKind::Control
            }
            // Continue starts a turn: it waits its turn like a message.
            Self::Message | Self::Command(_) | Self::Continue => InboxKind::Message,
        }
    }
}

/// A recognised chat command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Cancel the running turn.
    Stop,
    /// Forget this conversation's history.
    New,
    /// Explain the commands.
    Help,
    /// Forget this conversation's long-term memory.
    Forget,
    /// Approve a pending action by id (for channels without buttons).
    Approve(ApprovalId),
    /// Deny a pending action by id.
    Deny(ApprovalId),
    /// List this conversation's scheduled tasks (`/schedules`).
    Schedules,
    /// Cancel a scheduled task by id (`/unschedule <id>`, or its button).
    Unschedule(i64),
    /// Show (`/tz`) or set (`/tz Europe/Paris`) this conversation's time zone.
    Tz(Option<String>),
    /// Show today's token and tool-run usage against the budgets.
    Usage,
    /// List the workspace checkpoints (`/rewind`), or go back to one (`/rewind N`).
    Rewind(Option<i64>),
    /// List this conversation's models (`/model`) or switch to one (`/model <name>`).
    Model(Option<String>),
    /// List the Agent Skills this conversation's profile may use.
    Skills,
    /// Show (`/voice`) or set (`/voice on|off|auto`) whether answers here are spoken.
    Voice(Option<VoiceSwitch>),
    /// `/voice` with a word it does not know.
    VoiceUnknown,
}

/// What `/voice` sets for one conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VoiceSwitch {
    /// Every answer is spoken as well as written.
    On,
    /// No answer is spoken.
    Off,
    /// Back to the agent profile's rule.
    Auto,
}

impl Command {
    /// Parse `/stop`, `/new`, `/help`, `/forget`, `/approve <id>`, `/deny <id>` (also
    /// `/cmd@botname`, any case, surrounding spaces). Private: callers classify whole
    /// events with [`Intent::of`].
    fn parse(text: &str) -> Option<Self> {
        let mut words = text.split_whitespace();
        let word = words.next()?.strip_prefix('/')?;
        let name = word
            .split('@')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        let id = || words.clone().next().and_then(|w| w.parse().ok());
        match name.as_str() {
            "stop" => Some(Self::Stop),
            "new" | "reset" => Some(Self::New),
            "help" | "start" => Some(Self::Help),
            "forget" => Some(Self::Forget),
            "usage" => Some(Self::Usage),
            "rewind" => Some(Self::Rewind(rewind::argument(words.next()))),
            "approve" => id().map(Self::Approve),
            "deny" => id().map(Self::Deny),
            "schedules" => Some(Self::Schedules),
            "unschedule" => words
                .next()?
                .trim_start_matches('#')
                .parse()
                .ok()
                .map(Self::Unschedule),
            "tz" => Some(Self::Tz(words.next().map(str::to_owned))),
            "model" | "models" => Some(Self::Model(words.next().map(str::to_owned))),
            "skills" => Some(Self::Skills),
            "voice" => Some(match words.next().map(str::to_ascii_lowercase).as_deref() {
                None => Self::Voice(None),
                Some("on") => Self::Voice(Some(VoiceSwitch::On)),
                Some("off") => Self::Voice(Some(VoiceSwitch::Off)),
                Some("auto" | "default") => Self::Voice(Some(VoiceSwitch::Auto)),
                Some(_) => Self::VoiceUnknown,
            }),
            _ => None,
        }
    }

    /// The gateway's reply to a command that needs nothing but a reply.
    pub fn reply(&self) -> &'static str {
        match self {
            Self::Stop => "⏹ Stopped.",
            Self::New => "🆕 Started a new conversation — I've forgotten what we said before.",
            Self::Forget => "🧹 Forgot what I remembered from this conversation.",
            Self::Help | Self::Approve(_) | Self::Deny(_) | Self::Usage => HELP,
            // Answered by the scheduler (`schedule::Schedules::answer`), which reads the store.
            Self::Schedules | Self::Unschedule(_) | Self::Tz(_) | Self::Rewind(_) => HELP,
            // Answered by the conversation's profile (`profile::Active::model_command`,
            // `skills::report::chat_list`).
            Self::Model(_) | Self::Skills => HELP,
            // Answered by the turn, which reads and writes the conversation's rule.
            Self::Voice(_) => HELP,
            Self::VoiceUnknown => "Use `/voice on`, `/voice off` or `/voice auto`.",
        }
    }
}

const HELP: &str = "I'm an assistant. Write to me in plain language.\n\n\
Commands:\n\
• `/stop` — stop what I'm doing\n\
• `/new` — start a fresh conversation\n\
• `/forget` — forget what I remembered here\n\
• `/usage` — today's token and tool-run usage\n\
• `/approve <id>` / `/deny <id>` — answer an approval request\n\
• `/schedules` — scheduled tasks here; `/unschedule <id>` cancels one\n\
• `/tz [zone]` — this conversation's time zone\n\
• `/rewind [N]` — list checkpoints, or put the files back to one\n\
• `/model [name]` — the models here; switch to one\n\
• `/skills` — the skills I can load here\n\
• `/voice [on|off|auto]` — whether I answer here with voice notes too\n\
• `/help` — this message";

/// A cancel button's payload for scheduled task `id`: `sc:<id>:x` (well under Telegram's
/// 64 bytes).
pub fn cancel_schedule_payload(id: i64) -> String {
    format!("sc:{id}:x")
}

/// The task id of a cancel button's payload.
fn schedule_button(payload: &str) -> Option<i64> {
    payload
        .strip_prefix("sc:")?
        .strip_suffix(":x")?
        .parse()
        .ok()
}

/// What a button (or `/approve`, `/deny`) asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Run this call once.
    Once,
    /// Run it and allow the same call in this conversation from now on.
    Always,
    /// Do not run it.
    Deny,
    /// Nobody answered in time (internal: only the gateway's expiry events carry it).
    Expire,
}

/// An approval button's payload: `ap:<id>:<o|a|d|x>`, at most 64 bytes (Telegram's callback
/// limit). A typed value with one `Display`/`FromStr` round trip.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApprovalButton {
    /// Approval id.
    pub id: ApprovalId,
    /// Requested action.
    pub action: Action,
}

impl fmt::Display for ApprovalButton {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let code = match self.action {
            Action::Once => 'o',
            Action::Always => 'a',
            Action::Deny => 'd',
            Action::Expire => 'x',
        };
        write!(f, "ap:{}:{code}", self.id)
    }
}

impl FromStr for ApprovalButton {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, ()> {
        let mut parts = s.split(':');
        let (Some("ap"), Some(id), Some(code), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(());
        };
        let action = match code {
            "o" => Action::Once,
            "a" => Action::Always,
            "d" => Action::Deny,
            "x" => Action::Expire,
            _ => return Err(()),
        };
        let id = id.parse().map_err(|_| ())?;
        Ok(Self { id, action })
    }
}

/// The Continue button under a paused turn's summary (payload `go`): pressing it runs a new
/// turn, with a fresh step budget, that picks up where the paused one stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContinueButton;

impl ContinueButton {
    /// What the user sees on it.
    pub const LABEL: &'static str = "▶ Continue";
    /// The user message a press stands for (stored in history like typed words).
    pub const SAYS: &'static str = "continue";
}

impl fmt::Display for ContinueButton {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("go")
    }
}

impl FromStr for ContinueButton {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, ()> {
        if s == "go" { Ok(Self) } else { Err(()) }
    }
}

#[cfg(test)]
mod tests {
    use switchboard_channel::{ButtonPress, ConversationKey, Inbound, UserRef};

    use super::*;

    fn id(text: &str) -> ApprovalId {
        text.parse().unwrap()
    }

    fn message(text: &str) -> ChannelEvent {
        ChannelEvent::Message(Inbound {
            key: ConversationKey::new("fake", "c"),
            event_id: "e1".into(),
            user: UserRef {
                id: "u".into(),
                name: None,
            },
            text: text.into(),
            place: switchboard_channel::Place::Direct,
            attachments: Vec::new(),
        })
    }

    fn press(payload: &str) -> ChannelEvent {
        ChannelEvent::Button(ButtonPress {
            key: ConversationKey::new("fake", "c"),
            event_id: "e2".into(),
            user: UserRef {
                id: "u".into(),
                name: None,
            },
            payload: payload.into(),
            message: None,
            reply_token: None,
            place: switchboard_channel::Place::Direct,
        })
    }

    #[test]
    fn commands_are_recognised_with_bot_suffix_and_case() {
        assert_eq!(Command::parse("/stop"), Some(Command::Stop));
        assert_eq!(Command::parse("  /NEW@my_bot  "), Some(Command::New));
        assert_eq!(Command::parse("/help me"), Some(Command::Help));
        assert_eq!(
            Command::parse("/approve ab12cd"),
            Some(Command::Approve(id("ab12cd")))
        );
        assert_eq!(
            Command::parse("/deny@bot ab12cd"),
            Some(Command::Deny(id("ab12cd")))
        );
    }

    #[test]
    fn ordinary_text_and_unknown_commands_are_not_commands() {
        assert_eq!(Command::parse("stop"), None);
        assert_eq!(Command::parse("/stopwatch"), None);
        assert_eq!(Command::parse(""), None);
        assert_eq!(Command::parse("/approve"), None, "an id is required");
        assert_eq!(Command::parse("/approve a-b"), None, "ids are alphanumeric");
    }

    #[test]
    fn control_events_are_buttons_stop_approve_and_deny_only() {
        let kind = |e: &ChannelEvent| Intent::of(e).kind();
        for text in ["/stop", "/approve ab12", "/deny ab12"] {
            assert_eq!(kind(&message(text)), InboxKind::Control, "{text}");
        }
        for text in ["hello", "/new", "/help", "/forget", "/approve"] {
            assert_eq!(kind(&message(text)), InboxKind::Message, "{text}");
        }
        assert_eq!(kind(&press("garbage")), InboxKind::Control);
        assert_eq!(Intent::of(&press("garbage")), Intent::Button(None));
        assert_eq!(
            Intent::of(&press("ap:ab12:d")),
            Intent::Button(Some(ApprovalButton {
                id: id("ab12"),
                action: Action::Deny
            }))
        );
    }

    #[test]
    fn scheduling_commands_and_cancel_buttons_are_recognised() {
        assert_eq!(Command::parse("/schedules"), Some(Command::Schedules));
        assert_eq!(
            Command::parse("/unschedule #12"),
            Some(Command::Unschedule(12))
        );
        assert_eq!(Command::parse("/unschedule"), None, "an id is required");
        assert_eq!(Command::parse("/tz"), Some(Command::Tz(None)));
        assert_eq!(
            Command::parse("/tz@bot Europe/Paris"),
            Some(Command::Tz(Some("Europe/Paris".into())))
        );
        let payload = cancel_schedule_payload(12);
        assert!(payload.len() <= 64);
        assert_eq!(
            Intent::of(&press(&payload)),
            Intent::Command(Command::Unschedule(12))
        );
        assert_eq!(Intent::of(&press("sc:x:x")), Intent::Button(None));
    }

    #[test]
    fn voice_switches_on_off_and_back_to_the_profile_and_says_so_for_other_words() {
        assert_eq!(Command::parse("/voice"), Some(Command::Voice(None)));
        assert_eq!(
            Command::parse("/voice ON"),
            Some(Command::Voice(Some(VoiceSwitch::On)))
        );
        assert_eq!(
            Command::parse("/voice off"),
            Some(Command::Voice(Some(VoiceSwitch::Off)))
        );
        assert_eq!(
            Command::parse("/voice auto"),
            Some(Command::Voice(Some(VoiceSwitch::Auto)))
        );
        let unknown = Command::parse("/voice loud").expect("a command");
        assert_eq!(unknown, Command::VoiceUnknown);
        assert!(unknown.reply().contains("/voice on"));
        assert!(HELP.contains("/voice"));
    }

    #[test]
    fn the_continue_button_is_its_own_intent_and_waits_like_a_message() {
        let payload = ContinueButton.to_string();
        assert_eq!(payload.parse::<ContinueButton>(), Ok(ContinueButton));
        assert_eq!(Intent::of(&press(&payload)), Intent::Continue);
        assert_eq!(Intent::Continue.kind(), InboxKind::Message);
        assert!(payload.parse::<ApprovalButton>().is_err());
        assert!("go:1".parse::<ContinueButton>().is_err());
    }

    #[test]
    fn button_payloads_round_trip_and_fit_telegram() {
        for action in [Action::Once, Action::Always, Action::Deny, Action::Expire] {
            let b = ApprovalButton {
                id: id("a1b2c3d4e5"),
                action,
            };
            let text = b.to_string();
            assert!(text.len() <= 64);
            assert_eq!(text.parse::<ApprovalButton>(), Ok(b));
        }
        for bad in [
            "",
            "ap::o",
            "ap:x:z",
            "ap:abc:o:extra",
            "xx:abc:o",
            "ap:a-b:o",
        ] {
            assert!(bad.parse::<ApprovalButton>().is_err(), "{bad}");
        }
    }
}
