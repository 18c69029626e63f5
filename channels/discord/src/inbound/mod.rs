//! serenity's MESSAGE_CREATE and component INTERACTION_CREATE models → `ChannelEvent`: the
//! edge where Discord types stop. Runs in the gateway handler before the sink; decides what is
//! delivered, what is ignored (bots, system messages, unmentioned guild chatter) and what is
//! refused (guild and channel allow lists). Who may talk to the bot is the core's decision,
//! made in its sink: every person's event is delivered with its place.
//!
//! Conversations: `chat` is the channel the message was written in — the DM channel, the
//! guild text channel, or the thread (a thread is a channel of its own on Discord, so each
//! thread is its own conversation and answers posted to `chat` land in it); `thread` is unused.

use serenity::model::application::{ComponentInteraction, ComponentInteractionDataKind};
use serenity::model::channel::{Message, MessageType};
use serenity::model::user::User;
use switchboard_channel::{
    ButtonPress, ChannelEvent, ConversationKey, Inbound, MessageRef, Place as ChatPlace, UserRef,
};

use crate::config::{DiscordConfig, Place};
use crate::presses::PressToken;

/// What to do with one gateway event.
#[derive(Debug, PartialEq)]
pub enum Triage {
    /// Hand this to the sink (boxed: an event is far larger than the other variants).
    Deliver(Box<ChannelEvent>),
    /// Drop it; the reason is logged at trace.
    Ignore(&'static str),
    /// Drop it: the guild or channel is not on `allowed_guilds` / `allowed_channels`.
    RefusedPlace(String),
}

/// The instance's view needed to normalise: its name, config and the bot's own user id.
pub struct Context<'a> {
    /// Configured instance name (`ConversationKey::channel`).
    pub name: &'a str,
    /// The instance's configuration (allowlists, mention rules).
    pub config: &'a DiscordConfig,
    /// The bot's user id.
    pub bot_id: &'a str,
}

impl Context<'_> {
    fn key(&self, channel: &str) -> ConversationKey {
        ConversationKey::new(self.name, channel)
    }

    /// The refusal for a guild event outside the allowlists, if it is one.
    fn check_place(&self, guild: Option<String>, place: &Place<'_>) -> Option<Triage> {
        let guild = guild?;
        if !self.config.guild_allowed(&guild) {
            return Some(Triage::RefusedPlace(format!("guild {guild}")));
        }
        if !self.config.channel_allowed(place) {
            return Some(Triage::RefusedPlace(format!("channel {}", place.channel)));
        }
        None
    }
}

/// Decide what a MESSAGE_CREATE becomes; `parent` is the thread's parent channel, when the
/// message was written in a thread and the allowlists needed it.
pub fn message_verdict(ctx: &Context<'_>, msg: &Message, parent: Option<&str>) -> Triage {
    let author = msg.author.id.to_string();
    if author == ctx.bot_id {
        return Triage::Ignore("the bot's own message");
    }
    if msg.author.bot || msg.webhook_id.is_some() {
        return Triage::Ignore("a bot or webhook message");
    }
    if !matches!(msg.kind, MessageType::Regular | MessageType::InlineReply) {
        return Triage::Ignore("a system message");
    }
    let channel = msg.channel_id.to_string();
    let place = Place {
        channel: &channel,
        parent,
    };
    let guild = msg.guild_id.map(|g| g.to_string());
    let in_guild = guild.is_some();
    let chat_place = chat_place(guild.as_deref(), &place);
    if let Some(refused) = ctx.check_place(guild, &place) {
        return refused;
    }
    if in_guild && !ctx.config.always_on(&place) && !addresses_bot(msg, ctx.bot_id) {
        return Triage::Ignore("a guild message that neither mentions nor replies to the bot");
    }
    let text = strip_mention(&msg.content, ctx.bot_id);
    let attachments = crate::files::attachments(msg);
    if text.is_empty() && attachments.is_empty() {
        return Triage::Ignore("no text besides the mention, and no attachment");
    }
    let nick = msg.member.as_ref().and_then(|m| m.nick.clone());
    Triage::Deliver(Box::new(ChannelEvent::Message(Inbound {
        key: ctx.key(&channel),
        event_id: format!("m{}", msg.id),
        user: user_ref(&msg.author, nick),
        text,
        place: chat_place,
        attachments,
    })))
}

/// Decide what a component interaction becomes. Only buttons are delivered.
pub fn press_verdict(
    ctx: &Context<'_>,
    press: &ComponentInteraction,
    parent: Option<&str>,
) -> Triage {
    if !matches!(press.data.kind, ComponentInteractionDataKind::Button) {
        return Triage::Ignore("a component other than a button");
    }
    let channel = press.channel_id.to_string();
    let place = Place {
        channel: &channel,
        parent,
    };
    let guild = press.guild_id.map(|g| g.to_string());
    let chat_place = chat_place(guild.as_deref(), &place);
    if let Some(refused) = ctx.check_place(guild, &place) {
        return refused;
    }
    let token = PressToken {
        interaction_id: press.id.to_string(),
        application_id: press.application_id.to_string(),
        token: press.token.clone(),
    };
    let nick = press.member.as_ref().and_then(|m| m.nick.clone());
    Triage::Deliver(Box::new(ChannelEvent::Button(ButtonPress {
        key: ctx.key(&channel),
        event_id: format!("i{}", press.id),
        user: user_ref(&press.user, nick),
        payload: press.data.custom_id.clone(),
        message: Some(MessageRef::new(press.message.id.to_string())),
        reply_token: Some(token.encode()),
        place: chat_place,
    })))
}

/// A DM, or a guild place known by its channel, thread parent and guild ids (what
/// `allowed_channels` and `allowed_guilds` list).
fn chat_place(guild: Option<&str>, place: &Place<'_>) -> ChatPlace {
    let Some(guild) = guild else {
        return ChatPlace::Direct;
    };
    let ids = [Some(place.channel), place.parent, Some(guild)];
    ChatPlace::Group {
        ids: ids.into_iter().flatten().map(str::to_owned).collect(),
    }
}

/// Whether a guild message is for the bot: it mentions the bot, or replies to its message.
fn addresses_bot(msg: &Message, bot_id: &str) -> bool {
    let mentioned = msg.mentions.iter().any(|u| u.id.to_string() == bot_id)
        || msg.content.contains(&format!("<@{bot_id}>"))
        || msg.content.contains(&format!("<@!{bot_id}>"));
    let replied = msg
        .referenced_message
        .as_ref()
        .is_some_and(|m| m.author.id.to_string() == bot_id);
    mentioned || replied
}

/// Remove the bot's `<@id>` / `<@!id>` mentions (and the space after each), then trim.
pub fn strip_mention(text: &str, bot_id: &str) -> String {
    let mut out = text.to_owned();
    for token in [
        format!("<@{bot_id}> "),
        format!("<@!{bot_id}> "),
        format!("<@{bot_id}>"),
        format!("<@!{bot_id}>"),
    ] {
        out = out.replace(&token, "");
    }
    out.trim().to_owned()
}

/// Who wrote or pressed: the server nickname, else the display name, else the username.
fn user_ref(user: &User, nick: Option<String>) -> UserRef {
    UserRef {
        id: user.id.to_string(),
        name: nick
            .or_else(|| user.global_name.clone())
            .or_else(|| Some(user.name.clone())),
    }
}

#[cfg(test)]
mod tests;
