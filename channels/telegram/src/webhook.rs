//! Receive path, webhook mode: `setWebhook` at start, then Telegram posts each update to
//! `POST /telegram/<name>`. The secret header is checked in constant time, the update is
//! stored through the sink, and only then does Telegram get its 200 (a 500 makes it redeliver).

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use switchboard_channel::{ChannelError, EventSink};
use teloxide::payloads::SetWebhookSetters;
use teloxide::prelude::Requester;
use teloxide::types::Update;
use tokio_util::sync::CancellationToken;

use crate::client::Client;
use crate::config::webhook_path;
use crate::errors::Failure;
use crate::inbound::{ALLOWED_UPDATES, Triage};

/// The header Telegram echoes the configured `secret_token` in.
pub const SECRET_HEADER: &str = "x-telegram-bot-api-secret-token";

/// Wait between two `setWebhook` attempts that failed for a passing reason.
const RETRY_WAIT: Duration = Duration::from_secs(5);

#[derive(Clone)]
struct Hook {
    client: Arc<Client>,
    sink: Arc<dyn EventSink>,
}

/// The route Telegram posts updates to.
pub(crate) fn router(client: Arc<Client>, sink: Arc<dyn EventSink>) -> Router {
    let path = webhook_path(&client.name);
    Router::new()
        .route(&path, post(receive))
        .with_state(Hook { client, sink })
}

/// Register the webhook with Telegram, retrying passing failures until `shutdown`.
pub(crate) async fn register(
    client: Arc<Client>,
    shutdown: CancellationToken,
) -> Result<(), ChannelError> {
    loop {
        let attempt = set_webhook(&client).await;
        let failure = match attempt {
            Ok(()) => {
                client.health.webhook_set();
                tracing::info!(channel = %client.name, "Telegram webhook set");
                return Ok(());
            }
            Err(failure) => failure,
        };
        let wait = match failure {
            Failure::Transient(_) | Failure::Conflict(_) => RETRY_WAIT,
            Failure::RateLimited(wait) => wait,
            fatal => {
                let err = client.channel_error("setWebhook", None, fatal);
                tracing::error!(
                    channel = %client.name,
                    error = %err,
                    "cannot set the Telegram webhook: check channels.{}.webhook_url and token",
                    client.name
                );
                client.health.stopped(err.to_string());
                return Err(err);
            }
        };
        client
            .health
            .error(format!("setWebhook failed: {failure:?}"));
        tracing::warn!(channel = %client.name, "setWebhook failed ({failure:?}); retrying in {wait:?}");
        tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            () = tokio::time::sleep(wait) => {}
        }
    }
}

async fn set_webhook(client: &Client) -> Result<(), Failure> {
    client.identity().await?;
    let url = client.config.webhook_url.as_deref().unwrap_or_default();
    let url = url
        .parse()
        .map_err(|e| Failure::Refused(format!("webhook_url is not a URL: {e}")))?;
    let mut request = client.bot.set_webhook(url).allowed_updates(ALLOWED_UPDATES);
    if let Some(secret) = client.config.secret_token.expose() {
        request = request.secret_token(secret.to_owned());
    }
    request.await.map(|_| ()).map_err(|e| client.failure(&e))
}

async fn receive(State(hook): State<Hook>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let client = &hook.client;
    if !secret_matches(client, &headers) {
        tracing::warn!(channel = %client.name, "refused a webhook call without the right secret token");
        return StatusCode::UNAUTHORIZED;
    }
    let update: Update = match serde_json::from_slice(&body) {
        Ok(update) => update,
        Err(err) => {
            tracing::warn!(channel = %client.name, error = %err, "refused a malformed Telegram update");
            return StatusCode::BAD_REQUEST;
        }
    };
    let me = match client.identity().await {
        Ok(me) => me,
        Err(failure) => {
            tracing::warn!(channel = %client.name, "getMe failed ({failure:?}); Telegram will redeliver");
            return StatusCode::INTERNAL_SERVER_ERROR;
        }
    };
    match client.reader(me).read(&update) {
        Triage::Deliver(event) if event.check_ids().is_err() => {
            let bad = event.check_ids().unwrap_err();
            tracing::warn!(channel = %client.name, update_id = update.id.0, reason = %bad, "refused a Telegram update with a bad id");
            StatusCode::BAD_REQUEST
        }
        Triage::Deliver(event) => match hook.sink.deliver(*event).await {
            Ok(_) => StatusCode::OK,
            Err(err) => {
                tracing::warn!(
                    channel = %client.name,
                    update_id = update.id.0,
                    error = %err,
                    "could not store a Telegram update; answering 500 so Telegram redelivers"
                );
                StatusCode::INTERNAL_SERVER_ERROR
            }
        },
        Triage::Skip(_) => StatusCode::OK,
    }
}

fn secret_matches(client: &Client, headers: &HeaderMap) -> bool {
    let (Some(expected), Some(given)) = (
        client.config.secret_token.expose(),
        headers.get(SECRET_HEADER),
    ) else {
        return false;
    };
    switchboard_channel::secrets_match(expected, given)
}
