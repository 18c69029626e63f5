//! The error answers of the fake LLM, worded as each API words them: OpenAI's
//! `{"error": {"message", "type", "code"}}` and Anthropic's
//! `{"type": "error", "error": {"type", "message"}}`, for a missing or wrong key, an unknown
//! model, rate limits, overload, a prompt too long for the context window and server errors.

use axum::Json;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::Protocol;

/// Why the fake refuses a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Refusal {
    /// No key came with the request (401).
    NoKey,
    /// A key came, but not the one required (401).
    WrongKey,
    /// The prompt does not fit (400).
    ContextTooLong,
    /// A plain status: 403, 404, 429, 529, 5xx…
    Status(u16),
}

/// The key the request carried, in this protocol's header.
pub(super) fn key_of(protocol: Protocol, headers: &HeaderMap) -> Option<String> {
    let value = match protocol {
        Protocol::OpenAi => headers
            .get("authorization")?
            .to_str()
            .ok()?
            .strip_prefix("Bearer ")?,
        Protocol::Anthropic => headers.get("x-api-key")?.to_str().ok()?,
    };
    Some(value.to_owned())
}

/// The response for `refusal`, with `Retry-After: retry_after` when given.
pub(super) fn refuse(
    protocol: Protocol,
    refusal: Refusal,
    model: &str,
    retry_after: Option<u64>,
) -> Response {
    let (status, kind, code, message) = wording(protocol, refusal, model);
    let body = match protocol {
        Protocol::OpenAi => {
            json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
        }
        Protocol::Anthropic => {
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
    };
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, Json(body)).into_response();
    if let Some(secs) = retry_after {
        response.headers_mut().insert("retry-after", secs.into());
    }
    response
}

/// The error object an Anthropic stream carries in `event: error` (e.g. `overloaded_error`),
/// or the one an OpenAI-compatible server puts in a `data:` chunk.
pub(super) fn stream_error(protocol: Protocol, kind: &str) -> Value {
    let message = match kind {
        "overloaded_error" => "Overloaded",
        "rate_limit_error" | "rate_limit_exceeded" => "Rate limit reached",
        _ => "Internal server error",
    };
    match protocol {
        Protocol::OpenAi => json!({"error": {"message": message, "type": kind, "code": kind}}),
        Protocol::Anthropic => {
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
    }
}

/// Status, error type, OpenAI error code and message for one refusal.
fn wording(
    protocol: Protocol,
    refusal: Refusal,
    model: &str,
) -> (u16, &'static str, Option<&'static str>, String) {
    let anthropic = protocol == Protocol::Anthropic;
    match refusal {
        Refusal::NoKey if anthropic => (
            401,
            "authentication_error",
            None,
            "x-api-key header is required".into(),
        ),
        Refusal::NoKey => (
            401,
            "invalid_request_error",
            None,
            "You didn't provide an API key. You need to provide your API key in an \
             Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
                .into(),
        ),
        Refusal::WrongKey | Refusal::Status(401) if anthropic => (
            401,
            "authentication_error",
            None,
            "invalid x-api-key".into(),
        ),
        Refusal::WrongKey | Refusal::Status(401) => (
            401,
            "invalid_request_error",
            Some("invalid_api_key"),
            "Incorrect API key provided: test-***. You can find your API key at \
             https://platform.openai.com/account/api-keys."
                .into(),
        ),
        Refusal::ContextTooLong if anthropic => (
            400,
            "invalid_request_error",
            None,
            "prompt is too long: 210417 tokens > 200000 maximum".into(),
        ),
        Refusal::ContextTooLong => (
            400,
            "invalid_request_error",
            Some("context_length_exceeded"),
            "This model's maximum context length is 128000 tokens. However, your messages \
             resulted in 130211 tokens. Please reduce the length of the messages."
                .into(),
        ),
        Refusal::Status(status) => status_wording(anthropic, status, model),
    }
}

fn status_wording(
    anthropic: bool,
    status: u16,
    model: &str,
) -> (u16, &'static str, Option<&'static str>, String) {
    match (anthropic, status) {
        (true, 403) => (
            403,
            "permission_error",
            None,
            "Your API key does not have permission to use the specified resource.".into(),
        ),
        (false, 403) => (
            403,
            "invalid_request_error",
            Some("unsupported_country_region_territory"),
            "Country, region, or territory not supported".into(),
        ),
        (true, 404) => (404, "not_found_error", None, format!("model: {model}")),
        (false, 404) => (
            404,
            "invalid_request_error",
            Some("model_not_found"),
            format!("The model `{model}` does not exist or you do not have access to it."),
        ),
        (true, 429) => (
            429,
            "rate_limit_error",
            None,
            "Number of request tokens has exceeded your per-minute rate limit".into(),
        ),
        (false, 429) => (
            429,
            "requests",
            Some("rate_limit_exceeded"),
            "Rate limit reached for requests".into(),
        ),
        (_, 529) => (529, "overloaded_error", None, "Overloaded".into()),
        (_, status) => (status, "server_error", None, "scripted failure".into()),
    }
}
