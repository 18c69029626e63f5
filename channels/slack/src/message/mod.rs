//! Slack `message` and `app_mention` events → `Inbound`: the Slack conversation model, decided
//! here at the edge so the core only sees keys.
//!
//! - **DM** (`message.im`): top-level messages are one conversation, the DM itself (no
//!   thread in the key), answered at top level; a reply in a thread (`thread_ts` ≠ `ts`)
//!   belongs to that thread's own conversation and is answered there.
//! - **Channel**: an `app_mention` starts (or continues) a conversation: the thread it was
//!   written in, else a new thread under it (`reply_in_thread`), else the channel. A
//!   `message.channels` / `message.groups` reply without a mention continues a thread only if
//!   the bot takes part in it ([`Triage::IfKnown`]: the gateway already has that
//!   conversation); other channel chatter is ignored.
//! - **Double delivery**: a mention in a channel arrives twice, as `app_mention` and as
//!   `message.channels`, each with its own Slack `event_id`. Both are stored under the id
//!   `<channel>:<ts>` (the message's own identity), so the inbox keeps exactly one.

use serde::Deserialize;
use serde_json::Value;
use switchboard_channel::{ChannelEvent, ConversationKey, Inbound, Place, UserRef};

use crate::inbound::{Context, Malformed, Triage};

/// The fields of a `message` or `app_mention` event the gateway reads.
#[derive(Deserialize, Debug)]
struct MessageEvent {
    #[serde(rename = "type")]
    kind: String,
    user: Option<String>,
    #[serde(default)]
    text: String,
    channel: Option<String>,
    channel_type: Option<String>,
    ts: Option<String>,
    thread_ts: Option<String>,
    bot_id: Option<String>,
    subtype: Option<String>,
    /// Files shared with the message (subtype `file_share`).
    #[serde(default)]
    files: Vec<Value>,
}

/// Where a delivered message goes, before its `Inbound` is built.
enum Route {
    /// Addressed to the bot (a DM, a mention): deliver under this key.
    Addressed(ConversationKey),
    /// A channel reply without a mention: deliver under this key if the bot is in it.
    IfKnown(ConversationKey),
}

/// Decide what an `event_callback`'s `event` becomes.
pub fn normalise_event(
    ctx: &Context<'_>,
    event_id: &str,
    event: Value,
) -> Result<Triage, Malformed> {
    let kind = event
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if kind != "message" && kind != "app_mention" {
        return Ok(Triage::Ignore("event type not handled"));
    }
    let event: MessageEvent = serde_json::from_value(event)?;
    if let Some(reason) = skipped(ctx, &event) {
        return Ok(Triage::Ignore(reason));
    }
    let (Some(user), Some(channel), Some(ts)) = (&event.user, &event.channel, &event.ts) else {
        return Ok(Triage::Ignore("event without user, channel or ts"));
    };
    let is_dm = event
        .channel_type
        .as_deref()
        .map_or_else(|| channel.starts_with('D'), |t| t == "im");
    let route = match route(ctx, &event, is_dm) {
        Ok(route) => route,
        Err(reason) => return Ok(Triage::Ignore(reason)),
    };
    // In a DM each event arrives once; in a channel a mention arrives twice (see above).
    let event_id = if is_dm {
        event_id.to_owned()
    } else {
        format!("{channel}:{ts}")
    };
    let build = |key| {
        ChannelEvent::Message(Inbound {
            key,
            event_id,
            user: UserRef {
                id: user.clone(),
                name: None,
            },
            text: unescape(&strip_mention(&event.text, ctx.bot_user_id)),
            place: if is_dm {
                Place::Direct
            } else {
                Place::group(channel)
            },
            attachments: crate::files::attachments(&event.files),
        })
    };
    Ok(match route {
        Route::Addressed(key) => Triage::Deliver(vec![build(key)]),
        Route::IfKnown(key) => Triage::IfKnown(Box::new(build(key))),
    })
}

/// Why an event is not a person's message to consider, if it is not.
fn skipped(ctx: &Context<'_>, event: &MessageEvent) -> Option<&'static str> {
    if event.bot_id.is_some() {
        return Some("bot message");
    }
    // A thread reply also sent to the channel is still a reply, a file share a message with
    // files; every other subtype is an edit, a deletion, a join or a bot's post.
    if event
        .subtype
        .as_deref()
        .is_some_and(|s| s != "thread_broadcast" && s != "file_share")
    {
        return Some("edit, deletion or other message subtype");
    }
    if event.user.is_some() && ctx.bot_user_id == event.user.as_deref() {
        return Some("the bot's own message");
    }
    None
}

/// The conversation a message belongs to, or why it is ignored.
fn route(ctx: &Context<'_>, event: &MessageEvent, is_dm: bool) -> Result<Route, &'static str> {
    let channel = event.channel.as_deref().unwrap_or_default();
    let ts = event.ts.as_deref().unwrap_or_default();
    // A thread's root carries `thread_ts == ts`; only a reply is inside the thread.
    let thread = event.thread_ts.as_deref().filter(|t| *t != ts);
    let key = ConversationKey::new(ctx.name, channel);
    let mention = event.kind == "app_mention";
    match (mention, is_dm, thread) {
        (false, true, None) => Ok(Route::Addressed(key)),
        (false, true, Some(thread)) => Ok(Route::Addressed(key.in_thread(thread))),
        (true, true, _) => Err("a mention in a DM arrives as message.im"),
        (true, false, Some(thread)) => Ok(Route::Addressed(key.in_thread(thread))),
        (true, false, None) if ctx.config.reply_in_thread => {
            Ok(Route::Addressed(key.in_thread(ts)))
        }
        (true, false, None) => Ok(Route::Addressed(key)),
        (false, false, Some(thread)) => Ok(Route::IfKnown(key.in_thread(thread))),
        (false, false, None) => Err("channel message outside a thread, without a mention"),
    }
}

/// Remove the bot's `<@BOTID>` (or `<@BOTID|name>`) mentions. Before `auth.test` has
/// answered the bot id is unknown, and a leading mention is taken to be the bot's.
fn strip_mention(text: &str, bot_user_id: Option<&str>) -> String {
    match bot_user_id {
        Some(id) => {
            let plain = format!("<@{id}>");
            let named = format!("<@{id}|");
            let mut out = text.replace(&plain, "");
            while let Some(start) = out.find(&named) {
                let end = out[start..].find('>').map_or(out.len(), |e| start + e + 1);
                out.replace_range(start..end, "");
            }
            out.split_whitespace().collect::<Vec<_>>().join(" ")
        }
        None => {
            let trimmed = text.trim_start();
            match trimmed.strip_prefix("<@").and_then(|r| r.split_once('>')) {
                Some((_, rest)) => rest.trim().to_owned(),
                None => text.trim().to_owned(),
            }
        }
    }
}

/// Slack escapes `&`, `<` and `>` in message text; the core wants what the user typed.
fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests;
