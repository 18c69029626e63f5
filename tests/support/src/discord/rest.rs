//! The fake's REST routes under `/api/v10`: gateway discovery, `users/@me`, channel lookup,
//! message get/create/edit/delete, typing, interaction callbacks and the interaction webhook
//! (edit original, follow-up), with Discord's checks (bot token, 2,000-character content,
//! 3-second interaction deadline, one initial response) and its error JSON.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::payloads::{FakeUser, message_json};
use super::world::{DiscordCall, Failure, FakeMessage, InteractionCallback, Shared, World};
use super::{FAKE_APPLICATION_ID, INTERACTION_DEADLINE, MAX_CONTENT_CHARS};

/// An answer before it becomes a response.
struct Reply {
    status: StatusCode,
    body: Option<Value>,
    retry_after: Option<String>,
}

fn ok(body: Value) -> Reply {
    Reply {
        status: StatusCode::OK,
        body: Some(body),
        retry_after: None,
    }
}

fn no_content() -> Reply {
    Reply {
        status: StatusCode::NO_CONTENT,
        body: None,
        retry_after: None,
    }
}

fn error(status: u16, code: i64, message: &str) -> Reply {
    Reply {
        status: StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST),
        body: Some(json!({"message": message, "code": code})),
        retry_after: None,
    }
}

/// Every REST call: record it, then answer a scripted failure or route it.
pub(crate) async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri
        .path()
        .strip_prefix("/api/v10")
        .unwrap_or(uri.path())
        .to_owned();
    let (body, files) = super::files::body(&headers, &body);
    let refusal = super::files::voice_refusal(&body, files.len());
    if refusal.is_none() {
        super::files::record(&shared, &path, &body, files);
    }
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let mut world = shared.world();
    let failure = refusal
        .is_none()
        .then(|| world.failures.pop_front())
        .flatten();
    let reply = match (refusal, failure) {
        (Some((code, message)), _) => error(400, code, message),
        (None, Some(failure)) => failed(failure),
        (None, None) => route(
            &shared,
            &mut world,
            method.as_str(),
            &path,
            authorization.as_deref(),
            &body,
        ),
    };
    world.calls.push(DiscordCall {
        method: method.to_string(),
        path,
        body,
        authorization,
        at: Instant::now(),
        status: reply.status.as_u16(),
    });
    respond(reply)
}

fn respond(reply: Reply) -> Response {
    let mut response = match reply.body {
        Some(body) => (reply.status, axum::Json(body)).into_response(),
        None => reply.status.into_response(),
    };
    if let Some(value) = reply.retry_after.and_then(|v| v.parse().ok()) {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

fn failed(failure: Failure) -> Reply {
    match failure {
        Failure::RateLimited { retry_after } => Reply {
            status: StatusCode::TOO_MANY_REQUESTS,
            body: Some(
                json!({"message": "You are being rate limited.", "retry_after": retry_after, "global": false}),
            ),
            retry_after: Some(retry_after.ceil().to_string()),
        },
        Failure::ServerError => Reply {
            status: StatusCode::BAD_GATEWAY,
            body: Some(json!("<html>502 Bad Gateway</html>")),
            retry_after: None,
        },
        Failure::Unauthorized => error(401, 0, "401: Unauthorized"),
        Failure::Forbidden => error(403, 50013, "Missing Permissions"),
        Failure::Error {
            status,
            code,
            message,
        } => error(status, code, &message),
    }
}

fn route(
    shared: &Shared,
    world: &mut World,
    method: &str,
    path: &str,
    auth: Option<&str>,
    body: &Value,
) -> Reply {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match (method, segments.as_slice()) {
        ("GET", ["gateway"]) => ok(json!({"url": shared.ws_url})),
        ("GET", ["gateway", "bot"]) => ok(json!({
            "url": shared.ws_url, "shards": 1,
            "session_start_limit": {"total": 1000, "remaining": 999, "reset_after": 14_400_000, "max_concurrency": 1},
        })),
        ("POST", ["interactions", id, token, "callback"]) => callback(world, id, token, body),
        ("PATCH", ["webhooks", app, token, "messages", "@original"]) => {
            edit_original(world, app, token, body)
        }
        ("POST", ["webhooks", app, token]) => followup(world, app, token, body),
        _ if !shared.authorized(auth) => error(401, 0, "401: Unauthorized"),
        ("GET", ["users", "@me"]) => ok(FakeUser::the_bot().json()),
        ("GET", ["channels", id]) => match world.channels.get(*id) {
            Some(channel) => ok(channel.clone()),
            None => error(404, 10003, "Unknown Channel"),
        },
        ("POST", ["channels", channel, "messages"]) => create(world, channel, body),
        ("GET", ["channels", channel, "messages", id]) => {
            let found = id
                .parse::<u64>()
                .ok()
                .and_then(|id| world.messages.get(*channel)?.get(&id));
            match found {
                Some(message) => ok(shape(message)),
                None => error(404, 10008, "Unknown Message"),
            }
        }
        ("PATCH", ["channels", channel, "messages", id]) => edit(world, channel, id, body),
        ("DELETE", ["channels", channel, "messages", id]) => {
            let removed = id
                .parse::<u64>()
                .ok()
                .and_then(|id| world.messages.get_mut(*channel)?.remove(&id));
            match removed {
                Some(_) => no_content(),
                None => error(404, 10008, "Unknown Message"),
            }
        }
        ("POST", ["channels", _, "typing"]) => no_content(),
        _ => error(404, 0, "404: Not Found"),
    }
}

/// Discord's length check on `content`, reported at `path` like its form errors.
fn check_content(body: &Value, path: &str) -> Result<(), Reply> {
    let content = body
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if content.chars().count() <= MAX_CONTENT_CHARS {
        return Ok(());
    }
    let detail = json!({"_errors": [{"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 2000 or fewer in length."}]});
    let errors = match path {
        "data.content" => json!({"data": {"content": detail}}),
        _ => json!({"content": detail}),
    };
    Err(Reply {
        status: StatusCode::BAD_REQUEST,
        body: Some(json!({"code": 50035, "message": "Invalid Form Body", "errors": errors})),
        retry_after: None,
    })
}

fn create(world: &mut World, channel: &str, body: &Value) -> Reply {
    if let Err(reply) = check_content(body, "content") {
        return reply;
    }
    let content = body
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let components = body.get("components").cloned().unwrap_or_else(|| json!([]));
    let no_files = body["attachments"].as_array().is_none_or(Vec::is_empty);
    if content.is_empty() && components.as_array().is_none_or(Vec::is_empty) && no_files {
        return error(400, 50006, "Cannot send an empty message");
    }
    let id = world.next_snowflake();
    let message = FakeMessage {
        id: id.to_string(),
        channel_id: channel.to_owned(),
        content,
        components,
        allowed_mentions: body.get("allowed_mentions").cloned().unwrap_or(Value::Null),
        flags: body.get("flags").and_then(Value::as_u64).unwrap_or(0),
        edits: 0,
    };
    let shown = shape(&message);
    world
        .messages
        .entry(channel.to_owned())
        .or_default()
        .insert(id, message);
    ok(shown)
}

fn edit(world: &mut World, channel: &str, id: &str, body: &Value) -> Reply {
    if let Err(reply) = check_content(body, "content") {
        return reply;
    }
    let message = id
        .parse::<u64>()
        .ok()
        .and_then(|id| world.messages.get_mut(channel)?.get_mut(&id));
    match message {
        Some(message) => {
            apply_edit(message, body);
            ok(shape(message))
        }
        None => error(404, 10008, "Unknown Message"),
    }
}

fn apply_edit(message: &mut FakeMessage, body: &Value) {
    if let Some(content) = body.get("content").and_then(Value::as_str) {
        message.content = content.to_owned();
    }
    if let Some(components) = body.get("components") {
        message.components = components.clone();
    }
    message.allowed_mentions = body.get("allowed_mentions").cloned().unwrap_or(Value::Null);
    if let Some(flags) = body.get("flags").and_then(Value::as_u64) {
        message.flags = flags;
    }
    message.edits += 1;
}

/// A message as Discord shows it in replies.
pub(crate) fn shape(message: &FakeMessage) -> Value {
    let mut shown = message_json(
        &message.id,
        &message.channel_id,
        None,
        &FakeUser::the_bot(),
        &message.content,
    );
    shown["components"] = message.components.clone();
    shown["flags"] = json!(message.flags);
    shown
}

fn callback(world: &mut World, id: &str, token: &str, body: &Value) -> Reply {
    let kind = body.get("type").and_then(Value::as_u64).unwrap_or(0);
    let data = body.get("data").cloned().unwrap_or(Value::Null);
    let (reply, after) = answer_interaction(world, id, token, kind, &data);
    world.callbacks.push(InteractionCallback {
        interaction_id: id.to_owned(),
        kind,
        data,
        after_dispatch: after,
        status: reply.status.as_u16(),
    });
    reply
}

fn answer_interaction(
    world: &mut World,
    id: &str,
    token: &str,
    kind: u64,
    data: &Value,
) -> (Reply, std::time::Duration) {
    let Some(interaction) = world.interactions.get_mut(id).filter(|i| i.token == token) else {
        return (
            error(404, 10062, "Unknown interaction"),
            std::time::Duration::ZERO,
        );
    };
    let after = interaction.dispatched_at.elapsed();
    if interaction.acknowledged {
        return (
            error(400, 40060, "Interaction has already been acknowledged."),
            after,
        );
    }
    if after > INTERACTION_DEADLINE {
        return (error(404, 10062, "Unknown interaction"), after);
    }
    if let Err(reply) = check_content(data, "data.content") {
        return (reply, after);
    }
    interaction.acknowledged = true;
    let (channel, message) = (
        interaction.channel_id.clone(),
        interaction.message_id.clone(),
    );
    match kind {
        7 => {
            let stored = message
                .parse::<u64>()
                .ok()
                .and_then(|m| world.messages.get_mut(&channel)?.get_mut(&m));
            if let Some(stored) = stored {
                apply_edit(stored, data);
            }
        }
        4 => {
            let id = world.next_snowflake();
            world.followups.push(followup_message(id, &channel, data));
        }
        _ => {}
    }
    (no_content(), after)
}

fn followup_message(id: u64, channel: &str, body: &Value) -> FakeMessage {
    FakeMessage {
        id: id.to_string(),
        channel_id: channel.to_owned(),
        content: body
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        components: body.get("components").cloned().unwrap_or_else(|| json!([])),
        allowed_mentions: body.get("allowed_mentions").cloned().unwrap_or(Value::Null),
        flags: body.get("flags").and_then(Value::as_u64).unwrap_or(0),
        edits: 0,
    }
}

/// The acknowledged interaction a webhook token belongs to: (channel, message).
fn webhook_target(world: &World, app: &str, token: &str) -> Option<(String, String)> {
    if app != FAKE_APPLICATION_ID {
        return None;
    }
    world
        .interactions
        .values()
        .find(|i| i.token == token && i.acknowledged)
        .map(|i| (i.channel_id.clone(), i.message_id.clone()))
}

fn edit_original(world: &mut World, app: &str, token: &str, body: &Value) -> Reply {
    let Some((channel, message)) = webhook_target(world, app, token) else {
        return error(404, 10015, "Unknown Webhook");
    };
    edit(world, &channel, &message, body)
}

fn followup(world: &mut World, app: &str, token: &str, body: &Value) -> Reply {
    let Some((channel, _)) = webhook_target(world, app, token) else {
        return error(404, 10015, "Unknown Webhook");
    };
    if let Err(reply) = check_content(body, "content") {
        return reply;
    }
    let id = world.next_snowflake();
    let message = followup_message(id, &channel, body);
    let shown = shape(&message);
    world.followups.push(message);
    ok(shown)
}
