//! The webhook route Meta calls, on the gateway's listener: `GET` is the verification
//! handshake (`hub.mode=subscribe`, `hub.verify_token`, answered with `hub.challenge`);
//! `POST` carries notifications, checked against `X-Hub-Signature-256` on the raw body (401
//! otherwise), parsed (400 when malformed), dispatched by `metadata.phone_number_id` and
//! handed to the sink; only then 200, so a notification Meta sees acknowledged is stored. A
//! sink failure answers 500 and Meta redelivers; the inbox drops what it already has.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use switchboard_channel::{Delivery, secrets_match};

use crate::hub::Hub;
use crate::inbound::{self, Triage};
use crate::payload::{MessagesValue, Notification, Status};
use crate::state::Inner;
use crate::verify::signed;

/// The hub's route, with its full path so the gateway can merge it at its root.
pub(crate) fn router(hub: Arc<Hub>) -> Router {
    let path = hub.path.clone();
    Router::new()
        .route(&path, get(handshake).post(notification))
        .with_state(hub)
}

/// The query Meta sends when the webhook is registered.
#[derive(Deserialize)]
struct Handshake {
    #[serde(rename = "hub.mode")]
    mode: Option<String>,
    #[serde(rename = "hub.verify_token")]
    verify_token: Option<String>,
    #[serde(rename = "hub.challenge")]
    challenge: Option<String>,
}

async fn handshake(State(hub): State<Arc<Hub>>, Query(query): Query<Handshake>) -> Response {
    let given = query.verify_token.unwrap_or_default();
    let known = hub.channels().iter().any(|c| {
        c.config
            .verify_token
            .expose()
            .is_some_and(|token| !token.is_empty() && secrets_match(token, &given))
    });
    match (query.mode.as_deref(), known, query.challenge) {
        (Some("subscribe"), true, Some(challenge)) => (StatusCode::OK, challenge).into_response(),
        _ => {
            tracing::warn!(path = %hub.path, "refused a WhatsApp webhook handshake: wrong verify_token");
            StatusCode::FORBIDDEN.into_response()
        }
    }
}

async fn notification(State(hub): State<Arc<Hub>>, headers: HeaderMap, body: Bytes) -> Response {
    let signature = headers
        .get("x-hub-signature-256")
        .and_then(|v| v.to_str().ok());
    let channels = hub.channels();
    let signers: Vec<&Arc<Inner>> = channels
        .iter()
        .filter(|c| {
            signed(
                c.config.app_secret.expose().unwrap_or_default(),
                signature,
                &body,
            )
        })
        .collect();
    if signers.is_empty() {
        tracing::debug!(path = %hub.path, "refused an unsigned WhatsApp webhook");
        return (StatusCode::UNAUTHORIZED, "invalid signature").into_response();
    }
    let notification: Notification = match serde_json::from_slice(&body) {
        Ok(n) => n,
        Err(e) => return bad_request(&hub, &e),
    };
    if notification.object != "whatsapp_business_account" {
        return StatusCode::OK.into_response();
    }
    for change in notification.entry.into_iter().flat_map(|e| e.changes) {
        if change.field != "messages" {
            continue;
        }
        let value: MessagesValue = match serde_json::from_value(change.value) {
            Ok(v) => v,
            Err(e) => return bad_request(&hub, &e),
        };
        let number = &value.metadata.phone_number_id;
        // Only a channel whose own app secret signed the body may take its number's changes.
        let Some(channel) = signers.iter().find(|c| c.config.phone_number_id == *number) else {
            tracing::info!(path = %hub.path, phone_number_id = %number, "WhatsApp webhook for a number no channel here owns; ignored");
            continue;
        };
        if let Err(status) = handle(&hub, channel, value).await {
            return status.into_response();
        }
    }
    StatusCode::OK.into_response()
}

fn bad_request(hub: &Hub, error: &dyn std::fmt::Display) -> Response {
    tracing::debug!(path = %hub.path, %error, "malformed WhatsApp webhook");
    (StatusCode::BAD_REQUEST, "malformed body").into_response()
}

/// One number's messages and statuses; `Err` with the status to answer when one could not
/// be stored (or carries an id the inbox cannot key on).
async fn handle(hub: &Hub, channel: &Arc<Inner>, value: MessagesValue) -> Result<(), StatusCode> {
    for status in &value.statuses {
        report_status(channel, status);
    }
    for error in &value.errors {
        tracing::warn!(channel = %channel.name, code = error.code, detail = %error.detail(), "WhatsApp reported an error");
    }
    let allowed = switchboard_channel::ChannelSettings::access(&channel.config).allowed_users;
    for msg in value.messages {
        let Some(person) = inbound::person(&msg, &value.contacts, &allowed) else {
            tracing::debug!(channel = %channel.name, "WhatsApp message naming no sender; ignored");
            continue;
        };
        let at = msg
            .timestamp
            .as_deref()
            .and_then(|t| t.parse().ok())
            .unwrap_or(0);
        let id = msg.id.clone();
        let quoted = msg
            .context
            .as_ref()
            .and_then(|c| c.id.as_deref())
            .and_then(|c| channel.quote(c));
        let event = match inbound::normalise(&channel.name, &person, msg, quoted.as_deref()) {
            Triage::Deliver(event) => *event,
            Triage::Ignore(reason) => {
                tracing::debug!(channel = %channel.name, reason, "WhatsApp message ignored");
                continue;
            }
        };
        if let Err(bad) = event.check_ids() {
            tracing::warn!(channel = %channel.name, reason = %bad, "refused a WhatsApp message with a bad id");
            return Err(StatusCode::BAD_REQUEST);
        }
        match hub.sink.deliver(event).await {
            Ok(Delivery::Stored | Delivery::Duplicate) => channel.saw(&person.chat, at, &id),
            Ok(Delivery::Refused) => {
                tracing::info!(channel = %channel.name, user = %person.user, "WhatsApp message refused by access rules (allowed_users names numbers; this person may write without one)");
            }
            Err(e) => {
                tracing::warn!(channel = %channel.name, error = %e, "could not store a WhatsApp message; Meta will redeliver");
                return Err(StatusCode::INTERNAL_SERVER_ERROR);
            }
        }
    }
    Ok(())
}

/// A `failed` delivery status: logged with its code, counted in the channel's health; one
/// failed for the 24-hour window goes out again as the template (after the 200: Meta waits
/// for nobody's Graph API call).
fn report_status(channel: &Arc<Inner>, status: &Status) {
    if status.status != "failed" {
        return;
    }
    channel.failed_status();
    let code = status.errors.first().map_or(0, |e| e.code);
    if code == crate::api::REENGAGEMENT {
        let (channel, id) = (Arc::clone(channel), status.id.clone());
        tokio::spawn(async move { channel.failed_for_the_window(&id).await });
    }
    let detail = status
        .errors
        .first()
        .map(crate::payload::ApiError::detail)
        .unwrap_or_default();
    let to = status.recipient_id.as_deref().unwrap_or("?");
    tracing::warn!(channel = %channel.name, message = %status.id, to, code, %detail, "WhatsApp could not deliver a message");
}
