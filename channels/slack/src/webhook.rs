//! The two webhook routes Slack calls: `POST /slack/<name>/events` (Events API) and
//! `POST /slack/<name>/interactions` (button presses). Each checks the signature on the raw
//! body, normalises, hands events to the sink and only then answers 200, so an event Slack
//! sees acknowledged is already stored; a sink failure answers 500 and Slack retries. A
//! channel reply without a mention is handed on only if the gateway already has its thread's
//! conversation (remembered, else asked of the sink), and is otherwise acknowledged unstored.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};
use switchboard_channel::{Delivery, EventSink, SinkError};

use crate::config::route_paths;
use crate::inbound::{self, BlockActions, Context, Envelope, Triage};
use crate::message;
use crate::state::Inner;
use crate::verify::{unix_now, verify};

#[derive(Clone)]
struct WebhookState {
    inner: Arc<Inner>,
    sink: Arc<dyn EventSink>,
}

/// The channel's routes, with full paths so the gateway can merge them at its root.
pub(crate) fn router(inner: Arc<Inner>, sink: Arc<dyn EventSink>) -> Router {
    let [events, interactions] = route_paths(&inner.name);
    Router::new()
        .route(&events, post(events_handler))
        .route(&interactions, post(interactions_handler))
        .with_state(WebhookState { inner, sink })
}

async fn events_handler(
    State(state): State<WebhookState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(refused) = check_signature(&state.inner, &headers, &body) {
        return refused;
    }
    let envelope: Envelope = match serde_json::from_slice(&body) {
        Ok(envelope) => envelope,
        Err(e) => return bad_request(&state.inner, "event", &e),
    };
    match envelope {
        Envelope::UrlVerification { challenge } => {
            Json(json!({ "challenge": challenge })).into_response()
        }
        Envelope::EventCallback { event_id, event } => {
            let ctx = context(&state.inner);
            match message::normalise_event(&ctx, &event_id, event) {
                Ok(verdict) => act(&state, verdict).await,
                Err(e) => bad_request(&state.inner, "event", &e),
            }
        }
        Envelope::Other => StatusCode::OK.into_response(),
    }
}

/// The form Slack posts interactions in: one `payload` field holding JSON.
#[derive(Deserialize)]
struct InteractionForm {
    payload: String,
}

async fn interactions_handler(
    State(state): State<WebhookState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(refused) = check_signature(&state.inner, &headers, &body) {
        return refused;
    }
    let payload: Value = match serde_urlencoded::from_bytes::<InteractionForm>(&body)
        .map_err(|e| e.to_string())
        .and_then(|form| serde_json::from_str(&form.payload).map_err(|e| e.to_string()))
    {
        Ok(payload) => payload,
        Err(e) => return bad_request(&state.inner, "interaction", &e),
    };
    if payload.get("type").and_then(Value::as_str) != Some("block_actions") {
        return StatusCode::OK.into_response();
    }
    let actions: BlockActions = match serde_json::from_value(payload) {
        Ok(actions) => actions,
        Err(e) => return bad_request(&state.inner, "block_actions", &e),
    };
    if let (Some(chat), Some(message)) = (actions.channel_id(), &actions.message) {
        state
            .inner
            .remember_pressed(chat, &message.ts, message.blocks.clone());
    }
    let verdict = inbound::normalise_actions(&context(&state.inner), &actions);
    act(&state, verdict).await
}

fn context(inner: &Inner) -> Context<'_> {
    Context {
        name: &inner.name,
        config: &inner.config,
        bot_user_id: inner.bot_user_id(),
    }
}

/// `Some(401)` unless the request is signed with our secret within the last five minutes.
fn check_signature(inner: &Inner, headers: &HeaderMap, body: &[u8]) -> Option<Response> {
    let result = verify(
        inner.config.signing_secret.expose().unwrap_or_default(),
        headers,
        body,
        unix_now(),
    );
    result.err().map(|reason| {
        tracing::debug!(channel = %inner.name, %reason, "refused an unsigned Slack request");
        (StatusCode::UNAUTHORIZED, "invalid signature").into_response()
    })
}

fn bad_request(inner: &Inner, what: &str, error: &dyn std::fmt::Display) -> Response {
    tracing::debug!(channel = %inner.name, %error, "malformed Slack {what}");
    (StatusCode::BAD_REQUEST, "malformed body").into_response()
}

/// Carry out a verdict: deliver (then 200, or 500 so Slack retries) or acknowledge.
async fn act(state: &WebhookState, verdict: Triage) -> Response {
    let events = match verdict {
        Triage::Deliver(events) => events,
        Triage::IfKnown(event) => match state.inner.knows(state.sink.as_ref(), event.key()).await {
            Ok(true) => vec![*event],
            Ok(false) => {
                return ignored(state, "channel reply in a thread the bot is not part of");
            }
            Err(e) => return store_failed(state, &e),
        },
        Triage::Ignore(reason) => return ignored(state, reason),
    };
    // Ids the inbox cannot key on (an empty event id, a control character) would be dropped
    // as duplicates or fail on every retry: refused before anything is stored.
    if let Some(bad) = events.iter().find_map(|e| e.check_ids().err()) {
        tracing::warn!(channel = %state.inner.name, reason = %bad, "refused a Slack event with a bad id");
        return (StatusCode::BAD_REQUEST, "bad id").into_response();
    }
    for event in events {
        let key = event.key().clone();
        match state.sink.deliver(event).await {
            Ok(Delivery::Stored | Delivery::Duplicate) => state.inner.remember(&key),
            Ok(Delivery::Refused) => {}
            Err(e) => return store_failed(state, &e),
        }
    }
    StatusCode::OK.into_response()
}

fn ignored(state: &WebhookState, reason: &str) -> Response {
    tracing::trace!(channel = %state.inner.name, reason, "ignored a Slack event");
    StatusCode::OK.into_response()
}

fn store_failed(state: &WebhookState, error: &SinkError) -> Response {
    // A warning: the inbox logged the cause, at ERROR where someone must act.
    tracing::warn!(channel = %state.inner.name, %error, "could not store a Slack event; Slack will retry");
    StatusCode::INTERNAL_SERVER_ERROR.into_response()
}
