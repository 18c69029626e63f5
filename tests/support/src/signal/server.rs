//! The daemon's three HTTP endpoints over the stand-in's state.

use std::convert::Infallible;

use axum::Router;
use axum::extract::State as Extract;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{Call, EDITS_SHOWN, FAKE_ACCOUNT, FAKE_ACCOUNT_ACI, Failure, FakeSignal, Sent, State};

pub(super) fn router(fake: FakeSignal) -> Router {
    Router::new()
        .route("/api/v1/rpc", post(rpc))
        .route("/api/v1/events", get(events))
        .route("/api/v1/check", get(check))
        .with_state(fake)
}

async fn check(Extract(fake): Extract<FakeSignal>) -> StatusCode {
    if fake.lock().down {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    }
}

async fn events(Extract(fake): Extract<FakeSignal>, headers: HeaderMap) -> Response {
    let (tx, rx) = mpsc::unbounded_channel();
    let backlog = {
        let mut state = fake.lock();
        if state.down {
            return StatusCode::SERVICE_UNAVAILABLE.into_response();
        }
        let resumed = headers
            .get("last-event-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        state.opened.push(resumed.clone());
        let backlog: Vec<(u64, Value)> = match resumed.map(|id| id.parse::<u64>()) {
            None => Vec::new(),
            Some(Ok(id)) if state.kept.iter().any(|(k, _)| *k == id) => state
                .kept
                .iter()
                .filter(|(k, _)| *k > id)
                .cloned()
                .collect(),
            // An unknown id (too old, or from before the daemon restarted): everything kept.
            Some(_) => state.kept.iter().cloned().collect(),
        };
        state.streams.push(tx);
        // On-connection mode: what waited at Signal's servers is received now.
        while let Some(envelope) = state.pending.pop_front() {
            FakeSignal::keep_and_push(&mut state, envelope);
        }
        backlog
    };
    let mut ends = fake.ends.subscribe();
    let generation = *ends.borrow_and_update();
    let ended = async move {
        while ends.changed().await.is_ok() {
            if *ends.borrow() != generation {
                return;
            }
        }
    };
    let stream = futures::stream::iter(backlog)
        .chain(futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|e| (e, rx))
        }))
        .take_until(Box::pin(ended))
        .map(to_event);
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

fn to_event((id, envelope): (u64, Value)) -> Result<Event, Infallible> {
    Ok(Event::default()
        .id(id.to_string())
        .event("receive")
        .data(envelope.to_string()))
}

async fn rpc(Extract(fake): Extract<FakeSignal>, body: axum::body::Bytes) -> Response {
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return axum::Json(error(Value::Null, -32700, "Parse error", Value::Null)).into_response();
    };
    let mut state = fake.lock();
    if state.down {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    let id = request["id"].clone();
    let Some(method) = request["method"].as_str() else {
        return axum::Json(error(id, -32600, "method field must be set", Value::Null))
            .into_response();
    };
    let params = request["params"].clone();
    state.calls.push(Call {
        method: method.to_owned(),
        params: params.clone(),
    });
    if let Some(failed) = injected(&mut state, method, &id) {
        return failed;
    }
    let answer = match method {
        "send" => send(&mut state, &params),
        "remoteDelete" => remote_delete(&mut state, &params),
        "sendTyping" => target(&params)
            .map(|_| json!({ "timestamp": FakeSignal::timestamp(&mut state), "results": [] })),
        "getAttachment" => get_attachment(&state, &params),
        "getUserStatus" => user_status(&state, &params),
        "version" => Ok(json!({ "version": "0.13.22" })),
        "listAccounts" => Ok(json!([{ "number": FAKE_ACCOUNT }])),
        _ => Err((-32601, "Method not implemented".to_owned(), Value::Null)),
    };
    axum::Json(match answer {
        Ok(result) => json!({ "jsonrpc": "2.0", "result": result, "id": id }),
        Err((code, message, data)) => error(id, code, &message, data),
    })
    .into_response()
}

/// The failure a test asked the next call of `method` to meet, as the daemon answers it.
fn injected(state: &mut State, method: &str, id: &Value) -> Option<Response> {
    let id = id.clone();
    let failed = match state
        .failures
        .get_mut(method)
        .and_then(std::collections::VecDeque::pop_front)
    {
        Some(Failure::Unavailable) => StatusCode::SERVICE_UNAVAILABLE.into_response(),
        Some(Failure::RateLimited(secs)) => {
            let result = json!({ "type": "RATE_LIMIT_FAILURE", "retryAfterSeconds": secs });
            axum::Json(send_error(
                id,
                -5,
                "Failed to send message due to rate limiting",
                result,
            ))
            .into_response()
        }
        Some(Failure::ProofRequired) => {
            let result = json!({ "type": "RATE_LIMIT_FAILURE", "token": "fake-challenge-token", "retryAfterSeconds": 86400 });
            axum::Json(send_error(
                id,
                -5,
                "Failed to send message due to rate limiting",
                result,
            ))
            .into_response()
        }
        None => return None,
    };
    Some(failed)
}

type Answer = Result<Value, (i64, String, Value)>;

fn error(id: Value, code: i64, message: &str, data: Value) -> Value {
    json!({ "jsonrpc": "2.0", "error": { "code": code, "message": message, "data": data }, "id": id })
}

fn send_error(id: Value, code: i64, message: &str, mut result: Value) -> Value {
    result["recipientAddress"] = json!({ "uuid": null, "number": null });
    error(
        id,
        code,
        message,
        json!({ "response": { "timestamp": 0, "results": [result] } }),
    )
}

/// A number, or `group.<id>`, from `recipient` / `groupId`.
fn target(params: &Value) -> Result<String, (i64, String, Value)> {
    let invalid = |m: &str| (-32602, m.to_owned(), Value::Null);
    if let Some(group) = params["groupId"].as_str() {
        return Ok(format!("group.{group}"));
    }
    let recipient = match &params["recipient"] {
        Value::Array(list) if list.len() == 1 => list[0].as_str(),
        Value::String(one) => Some(one.as_str()),
        _ => None,
    };
    recipient
        .map(str::to_owned)
        .ok_or_else(|| invalid("No recipients given"))
}

fn send(state: &mut State, params: &Value) -> Answer {
    let to = target(params)?;
    if state.unregistered.contains(&to) {
        let result = json!({ "recipientAddress": { "number": to, "uuid": null }, "type": "UNREGISTERED_FAILURE" });
        return Err((
            -1,
            "Failed to send message".into(),
            json!({ "response": { "timestamp": 0, "results": [result] } }),
        ));
    }
    let text = params["message"].as_str().unwrap_or_default().to_owned();
    if text.is_empty() && params["attachment"].is_null() && params["attachments"].is_null() {
        return Err((
            -1,
            "Message body and attachments are empty".into(),
            Value::Null,
        ));
    }
    let styles: Vec<String> = match &params["textStyle"] {
        Value::Array(list) => list
            .iter()
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect(),
        Value::String(one) => vec![one.clone()],
        _ => Vec::new(),
    };
    if let Some(bad) = styles.iter().find(|s| !valid_style(s, &text)) {
        return Err((-1, format!("Invalid text style: {bad}"), Value::Null));
    }
    let timestamp = FakeSignal::timestamp(state);
    if let Some(original) = params["editTimestamp"].as_u64() {
        let Some(sent) = state
            .sent
            .iter_mut()
            .find(|s| s.timestamp == original && s.to == to)
        else {
            return Err((-1, "Failed to send message".into(), Value::Null));
        };
        sent.edits += 1;
        // Signal's apps drop edits past their cap without a word to the sender.
        if sent.edits <= EDITS_SHOWN {
            sent.text = text;
            sent.styles = styles;
        }
    } else {
        state.sent.push(Sent {
            timestamp,
            to: to.clone(),
            text,
            styles,
            edits: 0,
            deleted: false,
        });
    }
    Ok(
        json!({ "timestamp": timestamp, "results": [{ "recipientAddress": { "number": to, "uuid": null }, "type": "SUCCESS" }] }),
    )
}

/// `start:length:STYLE` inside `text` (UTF-16 units) with a style Signal knows.
fn valid_style(entry: &str, text: &str) -> bool {
    let parts: Vec<&str> = entry.splitn(3, ':').collect();
    let [start, len, style] = parts[..] else {
        return false;
    };
    let (Ok(start), Ok(len)) = (start.parse::<usize>(), len.parse::<usize>()) else {
        return false;
    };
    start + len <= text.encode_utf16().count()
        && ["BOLD", "ITALIC", "SPOILER", "STRIKETHROUGH", "MONOSPACE"].contains(&style)
}

fn remote_delete(state: &mut State, params: &Value) -> Answer {
    let to = target(params)?;
    let target_ts = params["targetTimestamp"].as_u64().ok_or((
        -32602,
        "targetTimestamp missing".to_owned(),
        Value::Null,
    ))?;
    if let Some(sent) = state
        .sent
        .iter_mut()
        .find(|s| s.timestamp == target_ts && s.to == to)
    {
        sent.deleted = true;
    }
    Ok(json!({ "timestamp": FakeSignal::timestamp(state), "results": [] }))
}

/// `getUserStatus`: per recipient, whether it is registered and its ACI (the bot's is
/// [`FAKE_ACCOUNT_ACI`], a person's the one [`super::Person::new`] gives its number).
fn user_status(state: &State, params: &Value) -> Answer {
    let recipients: Vec<&str> = match &params["recipient"] {
        Value::Array(list) => list.iter().filter_map(Value::as_str).collect(),
        Value::String(one) => vec![one.as_str()],
        _ => return Err((-32602, "recipient must be set".to_owned(), Value::Null)),
    };
    Ok(recipients
        .into_iter()
        .map(|r| {
            let registered = !state.unregistered.contains(r);
            let uuid = if r == FAKE_ACCOUNT {
                Some(FAKE_ACCOUNT_ACI.to_owned())
            } else {
                r.strip_prefix("+1555020")
                    .and_then(|n| n.parse::<u64>().ok())
                    .filter(|_| registered)
                    .map(|n| format!("00000000-0000-4000-8000-{n:012}"))
            };
            json!({ "recipient": r, "number": r, "uuid": uuid, "isRegistered": registered })
        })
        .collect())
}

fn get_attachment(state: &State, params: &Value) -> Answer {
    let id = params["id"].as_str().unwrap_or_default();
    if params["recipient"].is_null() && params["groupId"].is_null() {
        return Err((-32602, "recipient or groupId required".into(), Value::Null));
    }
    let bytes = state.attachments.get(id).ok_or((
        -1,
        format!("Attachment file not found: {id}"),
        Value::Null,
    ))?;
    Ok(json!({ "data": base64::engine::general_purpose::STANDARD.encode(bytes) }))
}
