//! Discord REST failures → `ChannelError`: the last step of every outbound call, so the core
//! can back off, split, forget a message or give up without knowing Discord's error codes.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde::Deserialize;
use serde_json::Value;
use switchboard_channel::ChannelError;

/// Wait this long after a 429 that names no `retry_after`.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);
/// Longest wait we accept from a 429, so a bad header cannot park a chat for days.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);

/// "Invalid Form Body": a field failed validation (for `content`, usually the length).
pub const INVALID_FORM_BODY: i64 = 50035;
/// "Unknown Channel".
pub const UNKNOWN_CHANNEL: i64 = 10003;
/// "Unknown Message".
pub const UNKNOWN_MESSAGE: i64 = 10008;
/// "Unknown Webhook": an interaction token past its 15 minutes, or never acknowledged.
pub const UNKNOWN_WEBHOOK: i64 = 10015;
/// "Unknown interaction": not answered within 3 seconds, or an unknown id.
pub const UNKNOWN_INTERACTION: i64 = 10062;

/// The JSON body Discord answers errors with (429s carry `retry_after`, others `code`).
#[derive(Deserialize, Debug, Default)]
pub struct ErrorBody {
    /// Discord's JSON error code (absent on most 429s).
    pub code: Option<i64>,
    /// Human-readable message.
    #[serde(default)]
    pub message: String,
    /// Seconds to wait, on a 429.
    pub retry_after: Option<f64>,
    /// Per-field validation errors, on a 50035.
    pub errors: Option<Value>,
}

/// A failed call as Discord answered it, kept until it is classified and logged.
#[derive(Debug)]
pub struct Failure {
    /// HTTP status.
    pub status: StatusCode,
    /// The error body, when it was Discord JSON.
    pub body: Option<ErrorBody>,
    /// `Retry-After` in seconds, when present.
    pub retry_after_header: Option<f64>,
}

impl Failure {
    /// Read status, `Retry-After` and the JSON body of a non-2xx answer.
    pub fn new(status: StatusCode, headers: &HeaderMap, body: &[u8]) -> Self {
        let retry_after_header = headers
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok());
        Self {
            status,
            body: serde_json::from_slice(body).ok(),
            retry_after_header,
        }
    }

    /// Discord's JSON error code, if any.
    pub fn code(&self) -> Option<i64> {
        self.body.as_ref().and_then(|b| b.code)
    }

    /// A short description for logs and `ChannelError` details: status, code and message.
    pub fn describe(&self) -> String {
        match &self.body {
            Some(ErrorBody {
                code: Some(code),
                message,
                ..
            }) => format!("HTTP {} (code {code}: {message})", self.status.as_u16()),
            _ => format!("HTTP {}", self.status),
        }
    }

    /// The `ChannelError` the core acts on.
    pub fn classify(&self) -> ChannelError {
        let status = self.status;
        if status == StatusCode::TOO_MANY_REQUESTS {
            return ChannelError::RateLimited {
                retry_after: self.retry_after(),
            };
        }
        if status.is_server_error() {
            return ChannelError::Transient(self.describe());
        }
        match self.code() {
            Some(INVALID_FORM_BODY) if self.content_too_long() => ChannelError::TooLong,
            Some(UNKNOWN_CHANNEL | UNKNOWN_MESSAGE | UNKNOWN_WEBHOOK | UNKNOWN_INTERACTION) => {
                ChannelError::NotFound(self.describe())
            }
            _ => ChannelError::Fatal(self.describe()),
        }
    }

    /// The wait a 429 asks for: the body's `retry_after`, else `Retry-After`, else a second.
    fn retry_after(&self) -> Duration {
        self.body
            .as_ref()
            .and_then(|b| b.retry_after)
            .or(self.retry_after_header)
            .filter(|secs| secs.is_finite() && *secs >= 0.0)
            .map_or(DEFAULT_RETRY_AFTER, |secs| {
                Duration::from_secs_f64(secs.min(MAX_RETRY_AFTER.as_secs_f64()))
            })
    }

    /// Whether a 50035 is about the length of `content` (`BASE_TYPE_MAX_LENGTH`), at any depth
    /// (`content` for messages, `data.content` for interaction answers).
    fn content_too_long(&self) -> bool {
        let Some(errors) = self.body.as_ref().and_then(|b| b.errors.as_ref()) else {
            return false;
        };
        find_key(errors, "content").is_some_and(|v| v.to_string().contains("BASE_TYPE_MAX_LENGTH"))
    }
}

/// The first value under `key` anywhere in `value`.
fn find_key<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    match value {
        Value::Object(map) => map
            .get(key)
            .or_else(|| map.values().find_map(|v| find_key(v, key))),
        Value::Array(items) => items.iter().find_map(|v| find_key(v, key)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn failure(status: u16, headers: &[(&'static str, &str)], body: Value) -> Failure {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.insert(*name, value.parse().unwrap());
        }
        let status = StatusCode::from_u16(status).unwrap();
        Failure::new(status, &map, body.to_string().as_bytes())
    }

    fn too_long_body() -> Value {
        json!({"code": 50035, "message": "Invalid Form Body", "errors": {"content": {"_errors": [
            {"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 2000 or fewer in length."}
        ]}}})
    }

    #[test]
    fn a_429_waits_for_the_body_retry_after_before_the_header() {
        let limited =
            json!({"message": "You are being rate limited.", "retry_after": 2.5, "global": false});
        let got = failure(429, &[("retry-after", "3")], limited).classify();
        let want = Duration::from_millis(2500);
        assert_eq!(got, ChannelError::RateLimited { retry_after: want });

        let got = failure(429, &[("retry-after", "3")], json!("not json")).classify();
        let want = Duration::from_secs(3);
        assert_eq!(got, ChannelError::RateLimited { retry_after: want });

        let got = failure(429, &[], json!({})).classify();
        let want = DEFAULT_RETRY_AFTER;
        assert_eq!(got, ChannelError::RateLimited { retry_after: want });
    }

    #[test]
    fn content_over_the_limit_is_too_long_but_other_form_errors_are_fatal() {
        assert_eq!(
            failure(400, &[], too_long_body()).classify(),
            ChannelError::TooLong
        );
        let nested = json!({"code": 50035, "message": "Invalid Form Body",
            "errors": {"data": {"content": {"_errors": [{"code": "BASE_TYPE_MAX_LENGTH", "message": "x"}]}}}});
        assert_eq!(failure(400, &[], nested).classify(), ChannelError::TooLong);
        let label = json!({"code": 50035, "message": "Invalid Form Body",
            "errors": {"components": {"_errors": [{"code": "BASE_TYPE_MAX_LENGTH", "message": "x"}]}}});
        assert!(matches!(
            failure(400, &[], label).classify(),
            ChannelError::Fatal(_)
        ));
    }

    #[test]
    fn unknown_messages_channels_and_interactions_are_not_found() {
        for code in [10008, 10003, 10015, 10062] {
            let body = json!({"code": code, "message": "Unknown"});
            let got = failure(404, &[], body).classify();
            assert!(matches!(got, ChannelError::NotFound(_)), "{code}: {got:?}");
        }
    }

    #[test]
    fn auth_and_permission_refusals_are_fatal_and_server_errors_transient() {
        let unauthorized = json!({"message": "401: Unauthorized", "code": 0});
        let got = failure(401, &[], unauthorized).classify();
        assert_eq!(
            got,
            ChannelError::Fatal("HTTP 401 (code 0: 401: Unauthorized)".into())
        );
        let forbidden = json!({"message": "Missing Permissions", "code": 50013});
        assert!(matches!(
            failure(403, &[], forbidden).classify(),
            ChannelError::Fatal(_)
        ));
        let got = failure(502, &[], json!("<html>bad gateway</html>")).classify();
        assert_eq!(got, ChannelError::Transient("HTTP 502 Bad Gateway".into()));
        let plain_404 = failure(404, &[], json!("<html>nope</html>")).classify();
        assert!(matches!(plain_404, ChannelError::Fatal(_)), "{plain_404:?}");
    }
}
