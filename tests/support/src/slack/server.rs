//! `FakeSlack`: the Web API methods the Slack channel calls (`auth.test`, `chat.postMessage`,
//! `chat.update`, `chat.delete`), answered with Slack's JSON shapes and checks (Bearer token,
//! 40,000-char text, 3,000-char sections), recording every call, with scripted failures.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use tokio::time::Instant;
use tokio_util::sync::DropGuard;

use super::files::Files;
use super::{FAKE_BOT_ID, FAKE_BOT_TOKEN, FAKE_BOT_USER_ID, MAX_SECTION_CHARS, MAX_TEXT_CHARS};

/// A scripted answer for the next calls, whatever their method.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// HTTP 429 with `Retry-After: <secs>` and `{"ok":false,"error":"ratelimited"}`.
    RateLimited {
        /// Seconds to put in `Retry-After`.
        retry_after_secs: u64,
    },
    /// `{"ok":false,"error":"msg_too_long"}`.
    MsgTooLong,
    /// `{"ok":false,"error":"invalid_auth"}`.
    InvalidAuth,
    /// HTTP 500 with an HTML body, as a broken proxy would answer.
    ServerError,
    /// `{"ok":false,"error":<code>}` for any other Slack error code.
    Error(String),
}

/// One recorded Web API call.
#[derive(Clone, Debug)]
pub struct SlackCall {
    /// The method name, e.g. `chat.postMessage`.
    pub method: String,
    /// The request body (JSON, or a form turned into a JSON object of strings).
    pub body: Value,
    /// When the call arrived (tokio time, so paused-clock tests can measure gaps).
    pub at: Instant,
    /// `Ok(())` when answered `"ok": true`, else the error code (or `http_429`, `http_500`).
    pub outcome: Result<(), String>,
}

/// A message as it currently stands in the fake workspace.
#[derive(Clone, Debug, PartialEq)]
pub struct FakeMessage {
    /// The message's ts (its id).
    pub ts: String,
    /// The thread it was posted in.
    pub thread_ts: Option<String>,
    /// Current text.
    pub text: String,
    /// Current Block Kit blocks, if any.
    pub blocks: Option<Value>,
    /// How many times it was updated.
    pub edits: u32,
    /// Whether Slack would unfurl links or media in it: true unless the post said
    /// `unfurl_links` and `unfurl_media` false (Slack unfurls media by default).
    pub unfurls: bool,
}

#[derive(Default)]
struct World {
    calls: Vec<SlackCall>,
    failures: VecDeque<Failure>,
    /// channel id → ts → message; ts order is post order.
    messages: BTreeMap<String, BTreeMap<String, FakeMessage>>,
    next_ts: u64,
}

pub(super) struct Shared {
    token: String,
    pub(super) files: Files,
    world: Mutex<World>,
}

impl Shared {
    fn world(&self) -> std::sync::MutexGuard<'_, World> {
        self.world.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A fake Slack Web API on 127.0.0.1; stops when dropped.
pub struct FakeSlack {
    addr: SocketAddr,
    pub(super) shared: Arc<Shared>,
    _stop: DropGuard,
}

impl FakeSlack {
    /// Start a fake accepting [`FAKE_BOT_TOKEN`].
    pub async fn start() -> Self {
        Self::start_with_token(FAKE_BOT_TOKEN).await
    }

    /// Start a fake accepting `token` as the bot token.
    pub async fn start_with_token(token: &str) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let shared = Arc::new(Shared {
            files: Files::new(token, format!("http://{addr}")),
            token: token.to_owned(),
            world: Mutex::new(World::default()),
        });
        let app = Router::new()
            .route("/api/{method}", post(handle))
            .with_state(Arc::clone(&shared))
            .merge(shared.files.routes());
        let stop = crate::serve_until_dropped(listener, app);
        Self {
            addr,
            shared,
            _stop: stop,
        }
    }

    /// The Web API base URL to configure as `api_url` (`http://127.0.0.1:<port>/api`).
    pub fn api_url(&self) -> String {
        format!("http://{}/api", self.addr)
    }

    /// Every call so far, in arrival order.
    pub fn calls(&self) -> Vec<SlackCall> {
        self.shared.world().calls.clone()
    }

    /// The calls to `method` so far.
    pub fn calls_to(&self, method: &str) -> Vec<SlackCall> {
        let world = self.shared.world();
        world
            .calls
            .iter()
            .filter(|c| c.method == method)
            .cloned()
            .collect()
    }

    /// Wait until at least `n` calls to `method` arrived, or panic after `timeout`.
    pub async fn wait_for_calls(
        &self,
        method: &str,
        n: usize,
        timeout: Duration,
    ) -> Vec<SlackCall> {
        crate::eventually(timeout, &format!("{n} {method} calls"), async || {
            let calls = self.calls_to(method);
            if calls.len() >= n {
                Ok(calls)
            } else {
                Err(calls)
            }
        })
        .await
    }

    /// Answer the next `n` calls with `failure`.
    pub fn fail_next(&self, n: usize, failure: Failure) {
        let mut world = self.shared.world();
        world.failures.extend(std::iter::repeat_n(failure, n));
    }

    /// The messages now in `channel`, oldest first.
    pub fn messages(&self, channel: &str) -> Vec<FakeMessage> {
        let world = self.shared.world();
        world
            .messages
            .get(channel)
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Forget recorded calls (messages stay).
    pub fn clear_calls(&self) {
        self.shared.world().calls.clear();
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    Path(method): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body = parse_body(&headers, &body);
    let mut world = shared.world();
    let (response, outcome) = match shared.files.method(&method, &body) {
        Some(Ok(reply)) => (axum::Json(reply).into_response(), Ok(())),
        Some(Err(code)) => (error_json(&code), Err(code)),
        None => answer(&shared.token, &mut world, &method, &headers, &body),
    };
    world.calls.push(SlackCall {
        method,
        body,
        at: Instant::now(),
        outcome,
    });
    response
}

/// JSON bodies as they are; form bodies as an object of strings; nothing as `{}`.
fn parse_body(headers: &HeaderMap, body: &[u8]) -> Value {
    let is_form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    if is_form {
        let pairs: BTreeMap<String, String> =
            serde_urlencoded::from_bytes(body).unwrap_or_default();
        return json!(pairs);
    }
    serde_json::from_slice(body).unwrap_or_else(|_| json!({}))
}

fn answer(
    token: &str,
    world: &mut World,
    method: &str,
    headers: &HeaderMap,
    body: &Value,
) -> (Response, Result<(), String>) {
    if let Some(failure) = world.failures.pop_front() {
        return failed(failure);
    }
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let result = match bearer {
        None => Err("not_authed".to_owned()),
        Some(given) if given != token => Err("invalid_auth".to_owned()),
        Some(_) => dispatch(world, method, body),
    };
    match result {
        Ok(reply) => (axum::Json(reply).into_response(), Ok(())),
        Err(code) => (error_json(&code), Err(code)),
    }
}

fn failed(failure: Failure) -> (Response, Result<(), String>) {
    match failure {
        Failure::RateLimited { retry_after_secs } => {
            let body = json!({"ok": false, "error": "ratelimited"});
            let response = (
                StatusCode::TOO_MANY_REQUESTS,
                [(header::RETRY_AFTER, retry_after_secs.to_string())],
                axum::Json(body),
            );
            (response.into_response(), Err("http_429".into()))
        }
        Failure::ServerError => {
            let response = (
                StatusCode::INTERNAL_SERVER_ERROR,
                "<html>upstream error</html>",
            );
            (response.into_response(), Err("http_500".into()))
        }
        Failure::MsgTooLong => (error_json("msg_too_long"), Err("msg_too_long".into())),
        Failure::InvalidAuth => (error_json("invalid_auth"), Err("invalid_auth".into())),
        Failure::Error(code) => (error_json(&code), Err(code)),
    }
}

fn error_json(code: &str) -> Response {
    axum::Json(json!({"ok": false, "error": code})).into_response()
}

fn dispatch(world: &mut World, method: &str, body: &Value) -> Result<Value, String> {
    match method {
        "auth.test" => Ok(json!({
            "ok": true, "url": "https://fake-workspace.slack.test/", "team": "Fake Workspace",
            "user": "switchboard", "team_id": "T0FAKETEAM", "user_id": FAKE_BOT_USER_ID,
            "bot_id": FAKE_BOT_ID, "is_enterprise_install": false,
        })),
        "chat.postMessage" => post_message(world, body),
        "chat.update" => update_message(world, body),
        // Seen only by `user`; recorded in the calls, never among the channel's messages.
        "chat.postEphemeral" => {
            let (_channel, _user) = (field(body, "channel")?, field(body, "user")?);
            Ok(json!({"ok": true, "message_ts": "1700009999.000001"}))
        }
        "chat.delete" => {
            let (channel, ts) = (field(body, "channel")?, field(body, "ts")?);
            let removed = world.messages.get_mut(&channel).and_then(|m| m.remove(&ts));
            removed.ok_or("message_not_found")?;
            Ok(json!({"ok": true, "channel": channel, "ts": ts}))
        }
        _ => Err("unknown_method".to_owned()),
    }
}

/// Whether a flag was sent as `false` (JSON, or `"false"` in a form body).
fn is_false(value: Option<&Value>) -> bool {
    matches!(value, Some(Value::Bool(false))) || value.and_then(Value::as_str) == Some("false")
}

fn post_message(world: &mut World, body: &Value) -> Result<Value, String> {
    let channel = field(body, "channel").map_err(|_| "channel_not_found".to_owned())?;
    let (text, blocks) = content(body)?;
    if text.is_empty() && blocks.is_none() {
        return Err("no_text".to_owned());
    }
    world.next_ts += 1;
    let ts = format!("1700000000.{:06}", world.next_ts);
    let message = FakeMessage {
        ts: ts.clone(),
        thread_ts: body
            .get("thread_ts")
            .and_then(Value::as_str)
            .map(str::to_owned),
        text,
        blocks,
        edits: 0,
        unfurls: !(is_false(body.get("unfurl_links")) && is_false(body.get("unfurl_media"))),
    };
    let shown = shape(&message);
    world
        .messages
        .entry(channel.clone())
        .or_default()
        .insert(ts.clone(), message);
    Ok(json!({"ok": true, "channel": channel, "ts": ts, "message": shown}))
}

fn update_message(world: &mut World, body: &Value) -> Result<Value, String> {
    let (channel, ts) = (field(body, "channel")?, field(body, "ts")?);
    let (text, blocks) = content(body)?;
    let message = world
        .messages
        .get_mut(&channel)
        .and_then(|m| m.get_mut(&ts))
        .ok_or("message_not_found")?;
    message.text = text;
    // Like Slack: leaving `blocks` out keeps the old ones; `[]` removes them.
    match blocks {
        Some(Value::Array(list)) if list.is_empty() => message.blocks = None,
        Some(list) => message.blocks = Some(list),
        None => {}
    }
    message.edits += 1;
    let shown = shape(message);
    Ok(json!({"ok": true, "channel": channel, "ts": ts, "text": message.text, "message": shown}))
}

/// The `text` and `blocks` of a post or update, checked against Slack's limits.
fn content(body: &Value) -> Result<(String, Option<Value>), String> {
    let text = body
        .get("text")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if text.chars().count() > MAX_TEXT_CHARS {
        return Err("msg_too_long".to_owned());
    }
    let blocks = body.get("blocks").cloned();
    if let Some(list) = &blocks {
        let list = list.as_array().ok_or("invalid_blocks")?;
        let too_long = list.iter().any(|b| {
            b["text"]["text"]
                .as_str()
                .is_some_and(|t| t.chars().count() > MAX_SECTION_CHARS)
        });
        if list.len() > 50 || too_long {
            return Err("invalid_blocks".to_owned());
        }
    }
    Ok((text, blocks))
}

fn field(body: &Value, name: &str) -> Result<String, String> {
    body.get(name)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| format!("invalid_arguments: {name}"))
}

/// A message as Slack shows it in replies.
fn shape(message: &FakeMessage) -> Value {
    let mut shown = json!({
        "type": "message", "subtype": "bot_message", "text": message.text,
        "bot_id": FAKE_BOT_ID, "user": FAKE_BOT_USER_ID, "ts": message.ts,
    });
    if let Some(thread) = &message.thread_ts {
        shown["thread_ts"] = json!(thread);
    }
    if let Some(blocks) = &message.blocks {
        shown["blocks"] = blocks.clone();
    }
    shown
}
