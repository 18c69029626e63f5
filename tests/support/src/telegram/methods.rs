//! The Bot API methods the fake answers, each with Telegram's checks: known chat, valid HTML,
//! at most 4096 UTF-16 units of visible text, callback data of at most 64 bytes, edits that
//! change something, and `getUpdates` as a long poll that confirms by offset.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;

use super::params::{int, text};
use super::reply::Reply;
use super::server::{FakeDraft, FakeMessage, Shared, World, next_message_id};
use super::updates::{FakeUser, unix_now};
use super::{FAKE_BOT_ID, FAKE_BOT_USERNAME, MAX_TEXT_UTF16, html};

/// Telegram's answer to a getUpdates cut short by a newer one.
pub(super) const TERMINATED: &str = "Conflict: terminated by other getUpdates request; make sure \
    that only one bot instance is running";
const WEBHOOK_ACTIVE: &str = "Conflict: can't use getUpdates method while webhook is active; \
    use deleteWebhook to delete the webhook first";
const NOT_MODIFIED: &str = "message is not modified: specified new message content and reply \
    markup are exactly the same as a current content and reply markup of the message";

/// The methods the fake knows, in the Bot API's spelling.
const METHODS: &[&str] = &[
    "getMe",
    "getUpdates",
    "setWebhook",
    "deleteWebhook",
    "sendMessage",
    "editMessageText",
    "deleteMessage",
    "sendChatAction",
    "answerCallbackQuery",
    "sendMessageDraft",
    "getFile",
    "sendDocument",
    "sendPhoto",
    "sendVoice",
];

/// `method` in the Bot API's spelling (Telegram matches names case-insensitively and
/// teloxide sends `SendMessage`), so recorded calls and scripted failures use one name.
pub(super) fn canonical(method: &str) -> String {
    METHODS
        .iter()
        .find(|known| known.eq_ignore_ascii_case(method))
        .map_or_else(|| method.to_owned(), |known| (*known).to_owned())
}

/// Answer one call.
pub(super) async fn call(shared: &Shared, method: &str, params: &Value) -> Reply {
    match method.to_ascii_lowercase().as_str() {
        "getme" => Reply::Ok(get_me()),
        "getupdates" => get_updates(shared, params).await,
        "setwebhook" => set_webhook(&mut shared.world(), params),
        "deletewebhook" => {
            shared.world().webhook = None;
            Reply::Ok(json!(true))
        }
        "sendmessage" => send_message(&mut shared.world(), params),
        "editmessagetext" => edit_message_text(&mut shared.world(), params),
        "deletemessage" => delete_message(&mut shared.world(), params),
        "sendchataction" => with_chat(&shared.world(), params, |_| Reply::Ok(json!(true))),
        "answercallbackquery" => answer_callback_query(&mut shared.world(), params),
        "sendmessagedraft" => send_message_draft(&mut shared.world(), params),
        _ => Reply::Err {
            code: 404,
            description: "Not Found: method not found".into(),
            retry_after: None,
        },
    }
}

fn get_me() -> Value {
    let mut me = FakeUser::the_bot().to_json();
    me["first_name"] = json!("Switchboard Test");
    me["username"] = json!(FAKE_BOT_USERNAME);
    me["can_join_groups"] = json!(true);
    me["can_read_all_group_messages"] = json!(false);
    me["supports_inline_queries"] = json!(false);
    me["can_connect_to_business"] = json!(false);
    me["has_main_web_app"] = json!(false);
    me
}

async fn get_updates(shared: &Shared, params: &Value) -> Reply {
    let timeout = int(params, "timeout").unwrap_or(0).clamp(0, 60);
    let limit = usize::try_from(int(params, "limit").unwrap_or(100).clamp(1, 100)).unwrap_or(100);
    let deadline = Instant::now() + Duration::from_secs(timeout.unsigned_abs());
    let generation = {
        let mut world = shared.world();
        if let Some(offset) = int(params, "offset") {
            world.updates.retain(|(id, _)| *id >= offset);
            world.confirmed_offset = world.confirmed_offset.max(offset);
        }
        world.poll_generation += 1;
        world.poll_generation
    };
    shared.updates_ready.notify_waiters();
    loop {
        let notified = shared.updates_ready.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        {
            let world = shared.world();
            if world.conflict || world.poll_generation != generation {
                return conflict(TERMINATED);
            }
            if world.webhook.is_some() {
                return conflict(WEBHOOK_ACTIVE);
            }
            if !world.updates.is_empty() || Instant::now() >= deadline {
                let batch: Vec<Value> = world
                    .updates
                    .iter()
                    .take(limit)
                    .map(|(_, u)| u.clone())
                    .collect();
                return Reply::Ok(Value::Array(batch));
            }
        }
        let _ = tokio::time::timeout_at(deadline, notified).await;
    }
}

fn conflict(description: &str) -> Reply {
    Reply::Err {
        code: 409,
        description: description.to_owned(),
        retry_after: None,
    }
}

fn set_webhook(world: &mut World, params: &Value) -> Reply {
    let Some(url) = text(params, "url") else {
        return Reply::bad_request("bad webhook: an HTTPS URL must be provided for webhook");
    };
    if !url.is_empty() && !url.starts_with("https://") {
        return Reply::bad_request("bad webhook: an HTTPS URL must be provided for webhook");
    }
    world.webhook = (!url.is_empty()).then(|| (url, text(params, "secret_token")));
    Reply::Ok(json!(true))
}

fn with_chat(world: &World, params: &Value, then: impl FnOnce(i64) -> Reply) -> Reply {
    match int(params, "chat_id") {
        Some(chat) if world.chats.contains(&chat) => then(chat),
        _ => Reply::bad_request("chat not found"),
    }
}

/// The visible text of `raw` under the call's `parse_mode`, checked against the limit.
fn visible_text(params: &Value, raw: &str, allow_empty: bool) -> Result<String, Reply> {
    let visible = match text(params, "parse_mode").as_deref() {
        Some(mode) if mode.eq_ignore_ascii_case("html") => html::parse(raw)
            .map_err(|detail| Reply::bad_request(&format!("can't parse entities: {detail}")))?,
        _ => raw.to_owned(),
    };
    if visible.trim().is_empty() && !allow_empty {
        return Err(Reply::bad_request("message text is empty"));
    }
    if visible.encode_utf16().count() > MAX_TEXT_UTF16 {
        return Err(Reply::bad_request("message is too long"));
    }
    Ok(visible)
}

fn keyboard(params: &Value) -> Result<Option<Value>, Reply> {
    let Some(markup) = params.get("reply_markup").cloned() else {
        return Ok(None);
    };
    let rows = markup["inline_keyboard"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let too_long = rows
        .iter()
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(|button| button["callback_data"].as_str())
        .any(|data| data.is_empty() || data.len() > 64);
    if too_long {
        return Err(Reply::bad_request("BUTTON_DATA_INVALID"));
    }
    Ok(Some(markup))
}

fn send_message(world: &mut World, params: &Value) -> Reply {
    let Some(chat_id) = int(params, "chat_id").filter(|c| world.chats.contains(c)) else {
        return Reply::bad_request("chat not found");
    };
    let raw = text(params, "text").unwrap_or_default();
    let (visible, reply_markup) = match (visible_text(params, &raw, false), keyboard(params)) {
        (Ok(visible), Ok(markup)) => (visible, markup),
        (Err(reply), _) | (_, Err(reply)) => return reply,
    };
    let message = FakeMessage {
        chat_id,
        message_id: next_message_id(world),
        thread_id: int(params, "message_thread_id").and_then(|t| i32::try_from(t).ok()),
        text: visible,
        raw,
        parse_mode: text(params, "parse_mode"),
        reply_markup,
        edits: 0,
        deleted: false,
    };
    let json = message_json(&message);
    world
        .messages
        .insert((chat_id, message.message_id), message);
    Reply::Ok(json)
}

fn edit_message_text(world: &mut World, params: &Value) -> Reply {
    let key = (
        int(params, "chat_id").unwrap_or_default(),
        int(params, "message_id")
            .and_then(|m| i32::try_from(m).ok())
            .unwrap_or_default(),
    );
    let raw = text(params, "text").unwrap_or_default();
    let (visible, reply_markup) = match (visible_text(params, &raw, false), keyboard(params)) {
        (Ok(visible), Ok(markup)) => (visible, markup),
        (Err(reply), _) | (_, Err(reply)) => return reply,
    };
    let parse_mode = text(params, "parse_mode");
    let Some(message) = world.messages.get_mut(&key).filter(|m| !m.deleted) else {
        return Reply::bad_request("message to edit not found");
    };
    if message.raw == raw
        && message.parse_mode == parse_mode
        && message.reply_markup == reply_markup
    {
        return Reply::bad_request(NOT_MODIFIED);
    }
    message.text = visible;
    message.raw = raw;
    message.parse_mode = parse_mode;
    message.reply_markup = reply_markup;
    message.edits += 1;
    Reply::Ok(message_json(message))
}

fn delete_message(world: &mut World, params: &Value) -> Reply {
    let key = (
        int(params, "chat_id").unwrap_or_default(),
        int(params, "message_id")
            .and_then(|m| i32::try_from(m).ok())
            .unwrap_or_default(),
    );
    match world.messages.get_mut(&key).filter(|m| !m.deleted) {
        Some(message) => {
            message.deleted = true;
            Reply::Ok(json!(true))
        }
        None => Reply::bad_request("message to delete not found"),
    }
}

fn answer_callback_query(world: &mut World, params: &Value) -> Reply {
    let id = text(params, "callback_query_id").unwrap_or_default();
    if world.open_queries.remove(&id) {
        Reply::Ok(json!(true))
    } else {
        Reply::bad_request("query is too old and response timeout expired or query ID is invalid")
    }
}

fn send_message_draft(world: &mut World, params: &Value) -> Reply {
    let Some(chat_id) = int(params, "chat_id").filter(|c| world.chats.contains(c)) else {
        return Reply::bad_request("chat not found");
    };
    if chat_id < 0 {
        return Reply::bad_request("drafts can be sent only to private chats");
    }
    let draft_id = int(params, "draft_id").unwrap_or_default();
    if draft_id == 0 {
        return Reply::bad_request("draft_id must be non-zero");
    }
    let raw = text(params, "text").unwrap_or_default();
    match visible_text(params, &raw, true) {
        Ok(text) => {
            world.drafts.push(FakeDraft {
                chat_id,
                draft_id,
                text,
            });
            Reply::Ok(json!(true))
        }
        Err(reply) => reply,
    }
}

/// The `Message` object the Bot API returns for a bot's message.
fn message_json(message: &FakeMessage) -> Value {
    let chat = if message.chat_id > 0 {
        json!({ "id": message.chat_id, "type": "private", "first_name": "Test" })
    } else {
        json!({ "id": message.chat_id, "type": "supergroup", "title": "Test supergroup",
                "is_forum": message.thread_id.is_some() })
    };
    let mut json = json!({
        "message_id": message.message_id,
        "date": unix_now(),
        "chat": chat,
        "from": { "id": FAKE_BOT_ID, "is_bot": true, "first_name": "Switchboard Test",
                  "username": FAKE_BOT_USERNAME },
        "text": message.text,
    });
    if let Some(thread) = message.thread_id {
        json["message_thread_id"] = json!(thread);
        json["is_topic_message"] = json!(true);
    }
    if let Some(markup) = &message.reply_markup {
        json["reply_markup"] = markup.clone();
    }
    json
}
