//! A fake LLM server speaking both OpenAI chat-completions SSE (`POST /v1/chat/completions`)
//! and Anthropic Messages SSE (`POST /v1/messages`), scripted per request: streamed text at a
//! chosen pace, tool calls, error statuses with `Retry-After` (worded as each API words them,
//! see `errors`), a prompt too long for the context window, error events inside a stream,
//! streams cut mid-way, stalls, and a required API key. With an empty script it echoes the
//! last user message, which suits load tests.

mod errors;

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::serve;
use errors::Refusal;

/// What the fake answers to one request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// Stream `text` in chunks of `chunk_chars`, waiting `first_delay` then `delay` between
    /// chunks; `tool_calls` (name, arguments) follow the text.
    Stream {
        /// Answer text.
        text: String,
        /// Tool calls to emit after the text.
        tool_calls: Vec<(String, Value)>,
        /// Characters per chunk.
        chunk_chars: usize,
        /// Wait before the first chunk.
        first_delay: Duration,
        /// Wait between chunks.
        delay: Duration,
        /// Report `length`/`max_tokens` as the stop reason.
        max_tokens: bool,
    },
    /// Answer with an HTTP error status (and `Retry-After` seconds, if given), with the body
    /// the real API sends for it (401 wrong key, 403, 404 unknown model, 429, 529, 5xx).
    Status(u16, Option<u64>),
    /// 400: the prompt does not fit the model's context window.
    ContextTooLong,
    /// 200, then an error event of this type (`overloaded_error`, `rate_limit_error`, …)
    /// before any text.
    StreamError(&'static str),
    /// Stream `text` and then end the body without finishing the response.
    Cut(String),
    /// Send headers, then nothing, for `Duration`.
    Stall(Duration),
}

impl Reply {
    /// Stream `text` quickly, in 8-character chunks.
    pub fn text(text: impl Into<String>) -> Self {
        Self::paced(text, 8, Duration::ZERO)
    }

    /// Stream `text` in `chunk_chars` chunks, `delay` apart.
    pub fn paced(text: impl Into<String>, chunk_chars: usize, delay: Duration) -> Self {
        Self::Stream {
            text: text.into(),
            tool_calls: Vec::new(),
            chunk_chars: chunk_chars.max(1),
            first_delay: Duration::ZERO,
            delay,
            max_tokens: false,
        }
    }

    /// Ask for one tool call.
    pub fn tool_call(name: &str, args: Value) -> Self {
        Self::tool_calls(vec![(name.to_owned(), args)])
    }

    /// Ask for several tool calls in one response.
    pub fn tool_calls(calls: Vec<(String, Value)>) -> Self {
        Self::Stream {
            text: String::new(),
            tool_calls: calls,
            chunk_chars: 8,
            first_delay: Duration::ZERO,
            delay: Duration::ZERO,
            max_tokens: false,
        }
    }
}

/// Which wire protocol a request used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// OpenAI chat completions.
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
}

#[derive(Default)]
struct LlmState {
    script: Mutex<VecDeque<Reply>>,
    /// Replies for requests whose last user message contains a marker, by marker: several
    /// conversations (or sub-tasks) asking at once each get their own script.
    routed: Mutex<Vec<(String, VecDeque<Reply>)>>,
    requests: Mutex<Vec<(Protocol, HeaderMap, Value)>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    /// When set, requests without exactly this key are refused with 401.
    required_key: Mutex<Option<String>>,
}

/// The running fake.
pub struct FakeLlm {
    addr: SocketAddr,
    state: Arc<LlmState>,
}

impl FakeLlm {
    /// Start on 127.0.0.1:0.
    pub async fn start() -> Self {
        let state = Arc::new(LlmState::default());
        let app = Router::new()
            .route("/v1/chat/completions", post(openai))
            .route("/v1/messages", post(anthropic))
            .with_state(Arc::clone(&state));
        let addr = serve(app).await;
        Self { addr, state }
    }

    /// Base URL for `[provider] kind = "openai"`.
    pub fn openai_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Base URL for `[provider] kind = "anthropic"`.
    pub fn anthropic_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Queue replies for the next requests, in order.
    pub fn push(&self, reply: Reply) -> &Self {
        self.state.script.lock().unwrap().push_back(reply);
        self
    }

    /// Queue `reply` for the next request whose last user message contains `marker` (such
    /// requests take these replies before the shared queue's, in order).
    pub fn push_for(&self, marker: &str, reply: Reply) -> &Self {
        let mut routed = self.state.routed.lock().unwrap();
        match routed.iter_mut().find(|(m, _)| m == marker) {
            Some((_, queue)) => queue.push_back(reply),
            None => routed.push((marker.to_owned(), VecDeque::from([reply]))),
        }
        drop(routed);
        self
    }

    /// Refuse (401, worded as the API words it) every request that does not carry `key`.
    pub fn require_key(&self, key: &str) -> &Self {
        *self.state.required_key.lock().unwrap() = Some(key.to_owned());
        self
    }

    /// Bodies of every request received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.state
            .requests
            .lock()
            .unwrap()
            .iter()
            .map(|(_, _, b)| b.clone())
            .collect()
    }

    /// Wait until at least `n` requests arrived, and return their bodies; panic after
    /// `within`.
    pub async fn wait_for_requests(&self, n: usize, within: Duration) -> Vec<Value> {
        crate::eventually(within, &format!("{n} requests at the LLM"), async || {
            let requests = self.requests();
            if requests.len() >= n {
                Ok(requests)
            } else {
                Err(requests.len())
            }
        })
        .await
    }

    /// Headers of every request received so far.
    pub fn request_headers(&self) -> Vec<HeaderMap> {
        self.state
            .requests
            .lock()
            .unwrap()
            .iter()
            .map(|(_, h, _)| h.clone())
            .collect()
    }

    /// Most requests that were being answered at the same moment.
    pub fn max_in_flight(&self) -> usize {
        self.state.max_in_flight.load(Ordering::SeqCst)
    }
}

async fn openai(
    State(s): State<Arc<LlmState>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    respond(s, Protocol::OpenAi, headers, body)
}

async fn anthropic(
    State(s): State<Arc<LlmState>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    respond(s, Protocol::Anthropic, headers, body)
}

fn respond(state: Arc<LlmState>, protocol: Protocol, headers: HeaderMap, body: Value) -> Response {
    let last_user = last_user_text(protocol, &body);
    let echo = format!("You said: {last_user}");
    let routed = state
        .routed
        .lock()
        .unwrap()
        .iter_mut()
        .find(|(marker, queue)| !queue.is_empty() && last_user.contains(marker.as_str()))
        .and_then(|(_, queue)| queue.pop_front());
    let model = body["model"].as_str().unwrap_or_default().to_owned();
    let sent_key = errors::key_of(protocol, &headers);
    state
        .requests
        .lock()
        .unwrap()
        .push((protocol, headers, body));
    let required = state.required_key.lock().unwrap().clone();
    if let Some(required) = required {
        match sent_key {
            None => return errors::refuse(protocol, Refusal::NoKey, &model, None),
            Some(k) if k != required => {
                return errors::refuse(protocol, Refusal::WrongKey, &model, None);
            }
            Some(_) => {}
        }
    }
    let reply = routed.unwrap_or_else(|| {
        let next = state.script.lock().unwrap().pop_front();
        next.unwrap_or_else(|| Reply::text(echo))
    });
    match reply {
        Reply::Status(code, retry_after) => {
            return errors::refuse(protocol, Refusal::Status(code), &model, retry_after);
        }
        Reply::ContextTooLong => {
            return errors::refuse(protocol, Refusal::ContextTooLong, &model, None);
        }
        _ => {}
    }
    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(16);
    tokio::spawn(async move {
        let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        state.max_in_flight.fetch_max(now, Ordering::SeqCst);
        write_reply(protocol, reply, &tx).await;
        state.in_flight.fetch_sub(1, Ordering::SeqCst);
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap()
}

fn last_user_text(protocol: Protocol, body: &Value) -> String {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.iter().rev().find(|m| m["role"] == "user");
    match (protocol, last) {
        (_, None) => String::new(),
        (Protocol::OpenAi, Some(m)) => m["content"].as_str().unwrap_or_default().to_owned(),
        (Protocol::Anthropic, Some(m)) => match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect(),
            _ => String::new(),
        },
    }
}

type Tx = mpsc::Sender<Result<Bytes, Infallible>>;

async fn send(tx: &Tx, event: Option<&str>, data: Value) {
    let frame = match event {
        Some(name) => format!("event: {name}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    };
    let _ = tx.send(Ok(Bytes::from(frame))).await;
}

async fn write_reply(protocol: Protocol, reply: Reply, tx: &Tx) {
    match reply {
        Reply::Status(..) | Reply::ContextTooLong => {}
        Reply::StreamError(kind) => {
            let error = errors::stream_error(protocol, kind);
            let event = (protocol == Protocol::Anthropic).then_some("error");
            send(tx, event, error).await;
        }
        Reply::Stall(d) => tokio::time::sleep(d).await,
        Reply::Cut(text) => {
            start(protocol, tx).await;
            text_chunk(protocol, tx, &text).await;
        }
        Reply::Stream {
            text,
            tool_calls,
            chunk_chars,
            first_delay,
            delay,
            max_tokens,
        } => {
            // A zero pause is no pause: tokio's timer rounds every deadline up to its next
            // millisecond tick, so even `sleep(ZERO)` cost up to 1 ms a chunk, which the
            // load harness measured as the gateway's latency.
            pause(first_delay).await;
            start(protocol, tx).await;
            let chars: Vec<char> = text.chars().collect();
            for (i, chunk) in chars.chunks(chunk_chars).enumerate() {
                if i > 0 {
                    pause(delay).await;
                }
                text_chunk(protocol, tx, &chunk.iter().collect::<String>()).await;
            }
            for (i, (name, args)) in tool_calls.iter().enumerate() {
                tool_call(protocol, tx, i, name, args).await;
            }
            finish(protocol, tx, !tool_calls.is_empty(), max_tokens).await;
        }
    }
}

/// Wait `d`, or not at all when it is zero.
async fn pause(d: Duration) {
    if !d.is_zero() {
        tokio::time::sleep(d).await;
    }
}

async fn start(protocol: Protocol, tx: &Tx) {
    if protocol == Protocol::Anthropic {
        send(tx, Some("message_start"), json!({"type": "message_start", "message": {"id": "msg_fake", "type": "message", "role": "assistant", "content": [], "model": "fake", "stop_reason": null, "usage": {"input_tokens": 10, "output_tokens": 1}}})).await;
        send(tx, Some("content_block_start"), json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})).await;
        send(tx, Some("ping"), json!({"type": "ping"})).await;
    }
}

async fn text_chunk(protocol: Protocol, tx: &Tx, text: &str) {
    match protocol {
        Protocol::OpenAi => send(tx, None, json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})).await,
        Protocol::Anthropic => send(tx, Some("content_block_delta"), json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}})).await,
    }
}

async fn tool_call(protocol: Protocol, tx: &Tx, i: usize, name: &str, args: &Value) {
    let id = format!("call_{i}_{name}");
    let args = args.to_string();
    let (head, tail) = args.split_at(args.len() / 2);
    match protocol {
        Protocol::OpenAi => {
            send(tx, None, json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": head}}]}}]})).await;
            send(tx, None, json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "function": {"arguments": tail}}]}}]})).await;
        }
        Protocol::Anthropic => {
            let index = i + 1;
            send(tx, Some("content_block_start"), json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}})).await;
            for part in [head, tail] {
                send(tx, Some("content_block_delta"), json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": part}})).await;
            }
            send(
                tx,
                Some("content_block_stop"),
                json!({"type": "content_block_stop", "index": index}),
            )
            .await;
        }
    }
}

async fn finish(protocol: Protocol, tx: &Tx, tools: bool, max_tokens: bool) {
    match protocol {
        Protocol::OpenAi => {
            let reason = if max_tokens {
                "length"
            } else if tools {
                "tool_calls"
            } else {
                "stop"
            };
            send(
                tx,
                None,
                json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}),
            )
            .await;
            send(
                tx,
                None,
                json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}}),
            )
            .await;
            let _ = tx.send(Ok(Bytes::from("data: [DONE]\n\n"))).await;
        }
        Protocol::Anthropic => {
            let reason = if max_tokens {
                "max_tokens"
            } else if tools {
                "tool_use"
            } else {
                "end_turn"
            };
            send(
                tx,
                Some("content_block_stop"),
                json!({"type": "content_block_stop", "index": 0}),
            )
            .await;
            send(tx, Some("message_delta"), json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null}, "usage": {"output_tokens": 5}})).await;
            send(tx, Some("message_stop"), json!({"type": "message_stop"})).await;
        }
    }
}
