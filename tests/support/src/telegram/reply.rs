//! The Bot API's answer envelope: `{"ok":true,"result":…}` or `{"ok":false,"error_code":…,
//! "description":…,"parameters":{"retry_after":N}}` with the matching HTTP status.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::methods;
use super::server::Failure;

/// How a method call ends.
pub(super) enum Reply {
    Ok(Value),
    Err {
        code: u16,
        description: String,
        retry_after: Option<u32>,
    },
}

impl Reply {
    pub(super) fn bad_request(detail: &str) -> Self {
        Self::Err {
            code: 400,
            description: format!("Bad Request: {detail}"),
            retry_after: None,
        }
    }

    pub(super) fn from_failure(failure: Failure) -> Self {
        let (code, description, retry_after) = match failure {
            Failure::RetryAfter(secs) => (
                429,
                format!("Too Many Requests: retry after {secs}"),
                Some(secs),
            ),
            Failure::Conflict => (409, methods::TERMINATED.to_owned(), None),
            Failure::ServerError(code) => (code, server_error_text(code).to_owned(), None),
            Failure::Error(code, description) => (code, description, None),
        };
        Self::Err {
            code,
            description,
            retry_after,
        }
    }
}

fn server_error_text(code: u16) -> &'static str {
    match code {
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Internal Server Error",
    }
}

pub(super) fn envelope(reply: Reply) -> Response {
    let (status, body) = match reply {
        Reply::Ok(result) => (StatusCode::OK, json!({ "ok": true, "result": result })),
        Reply::Err {
            code,
            description,
            retry_after,
        } => {
            let mut body = json!({ "ok": false, "error_code": code, "description": description });
            if let Some(secs) = retry_after {
                body["parameters"] = json!({ "retry_after": secs });
            }
            (
                StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_REQUEST),
                body,
            )
        }
    };
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}
