//! Slack Events API and interaction payloads → `ChannelEvent`: the edge where Slack's JSON
//! stops. Runs after the signature check and before the sink; decides what is delivered and
//! what is ignored (bots, edits, other event types, channel chatter). Messages and mentions
//! are normalised in `message` (the conversation model), button presses here.

use serde::Deserialize;
use serde_json::Value;
use switchboard_channel::{ButtonPress, ChannelEvent, ConversationKey, MessageRef, Place, UserRef};

use crate::config::SlackConfig;

/// The outer envelope of an Events API request.
#[derive(Deserialize, Debug)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Envelope {
    /// Sent once when the events URL is saved; answered with its challenge.
    UrlVerification {
        /// Echoed back to prove we own the URL.
        challenge: String,
    },
    /// An event we subscribed to.
    EventCallback {
        /// Slack's unique id for this event; the same on every retry.
        event_id: String,
        /// The event itself; only `message` and `app_mention` are read.
        event: Value,
    },
    /// Anything else (`app_rate_limited`, …): acknowledged and ignored.
    #[serde(other)]
    Other,
}

/// What to do with one Slack event or interaction.
#[derive(Debug, PartialEq)]
pub enum Triage {
    /// Hand these to the sink, then acknowledge.
    Deliver(Vec<ChannelEvent>),
    /// A channel reply that does not mention the bot: hand it to the sink only if the
    /// conversation (its thread) is one the gateway already has, else acknowledge and drop.
    IfKnown(Box<ChannelEvent>),
    /// Acknowledge and drop; the reason is logged at debug.
    Ignore(&'static str),
}

/// A malformed `message`/`app_mention` event: answered 400.
#[derive(Debug, thiserror::Error)]
#[error("malformed event: {0}")]
pub struct Malformed(#[from] serde_json::Error);

/// The instance's view needed to normalise: its name, config and the bot's own user id.
pub struct Context<'a> {
    /// Configured instance name (`ConversationKey::channel`).
    pub name: &'a str,
    /// The instance's configuration (allowlists, threading).
    pub config: &'a SlackConfig,
    /// The bot's user id from `auth.test`, once known.
    pub bot_user_id: Option<&'a str>,
}

/// The fields of a `block_actions` interaction the gateway reads.
#[derive(Deserialize, Debug)]
pub struct BlockActions {
    user: IdName,
    trigger_id: Option<String>,
    channel: Option<IdName>,
    container: Option<Container>,
    /// The message carrying the buttons, with its blocks.
    pub message: Option<PressedMessage>,
    response_url: Option<String>,
    #[serde(default)]
    actions: Vec<Action>,
}

#[derive(Deserialize, Debug)]
struct IdName {
    id: String,
    username: Option<String>,
    name: Option<String>,
}

#[derive(Deserialize, Debug)]
struct Container {
    channel_id: Option<String>,
}

/// The message a button was pressed on.
#[derive(Deserialize, Debug)]
pub struct PressedMessage {
    /// The message's ts: its id for `chat.update`.
    pub ts: String,
    thread_ts: Option<String>,
    /// Its Block Kit blocks, kept so the answer can replace only the buttons.
    #[serde(default)]
    pub blocks: Vec<Value>,
}

#[derive(Deserialize, Debug)]
struct Action {
    value: Option<String>,
    action_ts: Option<String>,
}

impl BlockActions {
    /// The channel the buttons were pressed in.
    pub fn channel_id(&self) -> Option<&str> {
        self.channel
            .as_ref()
            .map(|c| c.id.as_str())
            .or_else(|| self.container.as_ref()?.channel_id.as_deref())
    }
}

/// Decide what a `block_actions` interaction becomes: one `Button` event per action.
pub fn normalise_actions(ctx: &Context<'_>, payload: &BlockActions) -> Triage {
    let Some(channel) = payload.channel_id() else {
        return Triage::Ignore("block_actions without a channel");
    };
    // A message that became a thread's root carries `thread_ts == ts` but is not inside it.
    let thread = payload
        .message
        .as_ref()
        .and_then(|m| m.thread_ts.clone().filter(|t| *t != m.ts));
    let key = ConversationKey {
        channel: ctx.name.to_owned(),
        chat: channel.to_owned(),
        thread,
    };
    let user = UserRef {
        id: payload.user.id.clone(),
        name: payload
            .user
            .username
            .clone()
            .or_else(|| payload.user.name.clone()),
    };
    let events: Vec<ChannelEvent> = payload
        .actions
        .iter()
        .enumerate()
        .filter_map(|(i, action)| {
            let event_id = match (&payload.trigger_id, i) {
                (Some(trigger), 0) => trigger.clone(),
                (Some(trigger), i) => format!("{trigger}:{i}"),
                (None, i) => format!("{}:{}:{i}", action.action_ts.as_deref()?, user.id),
            };
            Some(ChannelEvent::Button(ButtonPress {
                key: key.clone(),
                event_id,
                user: user.clone(),
                payload: action.value.clone()?,
                message: payload.message.as_ref().map(|m| MessageRef::new(&m.ts)),
                reply_token: payload.response_url.clone(),
                place: press_place(channel),
            }))
        })
        .collect();
    if events.is_empty() {
        return Triage::Ignore("block_actions without a button value");
    }
    Triage::Deliver(events)
}

/// Slack direct-message channel ids start with `D`; every other id is a shared channel.
fn press_place(channel: &str) -> Place {
    if channel.starts_with('D') {
        Place::Direct
    } else {
        Place::group(channel)
    }
}

#[cfg(test)]
mod tests;
