//! Why an LLM call failed, classified so the person in the chat gets one line that says what
//! to do (`conversation::turn::report`) and the log gets the whole cause chain: a status the
//! API answered, a streamed error object, or a transport failure with every `source()`.

use std::error::Error as _;
use std::time::Duration;

use serde_json::Value;

/// Why an LLM call failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ProviderError {
    /// No API key is configured for an API that needs one (nothing was sent), or the API
    /// answered 401 to a request that carried no key.
    #[error("no API key for the LLM API ({hint})")]
    NoKey {
        /// What to set, for the log.
        hint: String,
    },
    /// The API refused the key that was sent (401 or 403).
    #[error("the LLM API rejected the API key (HTTP {status}): {message}")]
    KeyRejected {
        /// 401 or 403.
        status: u16,
        /// The API's own words.
        message: String,
    },
    /// The API answered 404: the model (or the endpoint under `base_url`) does not exist.
    #[error("the LLM API does not know model `{model}` (HTTP 404): {message}")]
    ModelNotFound {
        /// The model that was asked for.
        model: String,
        /// The API's own words.
        message: String,
    },
    /// The API answered 429 (rate limited) or 529 / an `overloaded_error` (overloaded).
    #[error("the LLM API is {} (HTTP {status}, retry after {retry_after:?})", if *.status == 529 { "overloaded" } else { "rate limiting us" })]
    RateLimited {
        /// 429 or 529.
        status: u16,
        /// From `Retry-After`, when sent.
        retry_after: Option<Duration>,
    },
    /// The conversation does not fit the model's context window.
    #[error("the request is too long for the model's context window: {0}")]
    ContextTooLong(String),
    /// The API answered with another error status.
    #[error("LLM API answered HTTP {status}: {body}")]
    Http {
        /// HTTP status.
        status: u16,
        /// Start of the response body.
        body: String,
    },
    /// No connection could be made.
    #[error("could not connect to the LLM API at {host} ({kind}): {detail}")]
    Connect {
        /// What kind of failure, for the chat line.
        kind: ConnectKind,
        /// The host that was dialled (never the whole URL, which may carry credentials).
        host: String,
        /// The full cause chain.
        detail: String,
    },
    /// Nothing arrived within `timeout_secs`.
    #[error("the LLM API did not answer within {0:?}")]
    Timeout(Duration),
    /// The stream broke off or carried an error event.
    #[error("the LLM stream broke off: {0}")]
    Stream(String),
    /// The API sent something we could not understand.
    #[error("unexpected LLM response: {0}")]
    Decode(String),
}

/// Why a connection to the LLM API could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectKind {
    /// Nothing listens there (connection refused).
    Refused,
    /// The host name does not resolve.
    Dns,
    /// The TLS handshake failed (certificate, protocol).
    Tls,
    /// The connection attempt took too long.
    TimedOut,
    /// Anything else on the way (reset, unreachable network).
    Other,
}

impl std::fmt::Display for ConnectKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Refused => "connection refused",
            Self::Dns => "host name not found",
            Self::Tls => "TLS handshake failed",
            Self::TimedOut => "connection timed out",
            Self::Other => "network error",
        })
    }
}

impl ProviderError {
    /// Worth another try (before any token was shown): 429, 5xx, 529, connection trouble
    /// that can pass (refused, DNS, timeouts); never a key, model, size or TLS problem.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::RateLimited { .. } | Self::Timeout(_) | Self::Stream(_) => true,
            Self::Connect { kind, .. } => *kind != ConnectKind::Tls,
            Self::Http { status, .. } => *status >= 500,
            Self::NoKey { .. }
            | Self::KeyRejected { .. }
            | Self::ModelNotFound { .. }
            | Self::ContextTooLong(_)
            | Self::Decode(_) => false,
        }
    }

    /// A transport failure from reqwest, with its whole `source()` chain kept for the log.
    pub(crate) fn from_transport(err: &reqwest::Error) -> Self {
        let detail = chain(err);
        let host = err
            .url()
            .and_then(|u| u.host_str())
            .unwrap_or("?")
            .to_owned();
        if !err.is_connect() && !err.is_timeout() {
            return Self::Stream(detail);
        }
        let kind = connect_kind(err, &detail);
        Self::Connect { kind, host, detail }
    }

    /// An error status with its body, as one of the classes above.
    pub(crate) fn from_status(
        status: u16,
        retry_after: Option<Duration>,
        body: &str,
        call: &CallInfo<'_>,
    ) -> Self {
        let json: Value = serde_json::from_str(body).unwrap_or(Value::Null);
        let message = api_message(&json, body);
        match status {
            401 if !call.key_sent => Self::NoKey {
                hint: call.key_hint.clone(),
            },
            401 | 403 => Self::KeyRejected { status, message },
            404 => Self::ModelNotFound {
                model: call.model.to_owned(),
                message,
            },
            429 | 529 => Self::RateLimited {
                status,
                retry_after,
            },
            400 | 413 if too_long(&json, &message) => Self::ContextTooLong(message),
            _ => Self::Http {
                status,
                body: message,
            },
        }
    }

    /// An error object that arrived inside a 200 stream (OpenAI `{"error": …}` chunks,
    /// Anthropic `event: error`).
    pub(crate) fn from_stream_error(error: &Value) -> Self {
        let message = error["message"]
            .as_str()
            .unwrap_or("error event")
            .to_owned();
        let kind = error["type"].as_str().or(error["code"].as_str());
        match kind {
            Some("overloaded_error") => Self::RateLimited {
                status: 529,
                retry_after: None,
            },
            Some("rate_limit_error" | "rate_limit_exceeded") => Self::RateLimited {
                status: 429,
                retry_after: None,
            },
            _ if too_long(&serde_json::json!({ "error": error }), &message) => {
                Self::ContextTooLong(message)
            }
            _ => Self::Stream(message),
        }
    }
}

/// What the provider knew about the call that failed, for classifying its error.
pub(crate) struct CallInfo<'a> {
    /// The model asked for.
    pub model: &'a str,
    /// Whether an API key went with the request.
    pub key_sent: bool,
    /// What to set to give it one.
    pub key_hint: String,
}

/// `err` and every `source()` below it, joined by ": ".
pub(crate) fn chain(err: &reqwest::Error) -> String {
    let mut out = err.without_url_ref();
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        // hyper and reqwest repeat their cause inside their own text at times.
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}

/// The text of a reqwest error without its URL (which may carry credentials).
trait WithoutUrlRef {
    fn without_url_ref(&self) -> String;
}

impl WithoutUrlRef for reqwest::Error {
    fn without_url_ref(&self) -> String {
        let text = self.to_string();
        match self.url() {
            Some(url) => text
                .replace(&format!(" for url ({url})"), "")
                .replace(url.as_str(), "<url>"),
            None => text,
        }
    }
}

/// Which connect failure the chain describes. A refused connection and a TLS failure are
/// found by type (the io error's kind; the rustls error, which hyper-rustls wraps inside an
/// io error); a DNS failure reaches us only as hyper-util's opaque resolver error, so it is
/// matched on its wording.
fn connect_kind(err: &reqwest::Error, detail: &str) -> ConnectKind {
    let mut source = err.source();
    while let Some(cause) = source {
        if is_tls(cause) {
            return ConnectKind::Tls;
        }
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            match io.kind() {
                std::io::ErrorKind::ConnectionRefused => return ConnectKind::Refused,
                std::io::ErrorKind::TimedOut => return ConnectKind::TimedOut,
                _ => {}
            }
        }
        source = cause.source();
    }
    let lower = detail.to_ascii_lowercase();
    if lower.contains("dns error") || lower.contains("failed to lookup address") {
        ConnectKind::Dns
    } else if lower.contains("certificate") || lower.contains("tls handshake") {
        ConnectKind::Tls
    } else if err.is_timeout() || lower.contains("timed out") {
        ConnectKind::TimedOut
    } else {
        ConnectKind::Other
    }
}

/// Whether `err` is a rustls error, or io errors wrapped around one (hyper-rustls nests it
/// two deep, and an io error's `source()` skips the error it wraps, so `get_ref` it is).
fn is_tls(err: &(dyn std::error::Error + 'static)) -> bool {
    if err.downcast_ref::<rustls::Error>().is_some() {
        return true;
    }
    match err
        .downcast_ref::<std::io::Error>()
        .and_then(std::io::Error::get_ref)
    {
        Some(inner) => is_tls(inner),
        None => false,
    }
}

/// The API's own error message (OpenAI and Anthropic both use `{"error": {"message"}}`),
/// else the start of the body.
fn api_message(json: &Value, body: &str) -> String {
    let message = json["error"]["message"]
        .as_str()
        .or(json["message"].as_str())
        .or(json["error"].as_str());
    match message {
        Some(m) => m.chars().take(300).collect(),
        None => body.trim().chars().take(300).collect(),
    }
}

/// Whether a 400 says the prompt does not fit: OpenAI's `context_length_exceeded` code,
/// Anthropic's "prompt is too long", and the wording OpenAI-compatible servers copy.
fn too_long(json: &Value, message: &str) -> bool {
    if json["error"]["code"] == "context_length_exceeded" {
        return true;
    }
    let lower = message.to_ascii_lowercase();
    [
        "prompt is too long",
        "maximum context length",
        "context window",
        "context_length_exceeded",
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(key_sent: bool) -> CallInfo<'static> {
        CallInfo {
            model: "gpt-x",
            key_sent,
            key_hint: "set OPENAI_API_KEY".into(),
        }
    }

    #[test]
    fn statuses_are_classified_by_what_the_user_must_do() {
        let body = r#"{"error":{"message":"Incorrect API key provided","code":"invalid_api_key"}}"#;
        assert!(matches!(
            ProviderError::from_status(401, None, body, &call(false)),
            ProviderError::NoKey { .. }
        ));
        assert!(matches!(
            ProviderError::from_status(401, None, body, &call(true)),
            ProviderError::KeyRejected { status: 401, ref message } if message.contains("Incorrect")
        ));
        let long = r#"{"error":{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}}"#;
        assert!(matches!(
            ProviderError::from_status(400, None, long, &call(true)),
            ProviderError::ContextTooLong(_)
        ));
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        assert!(matches!(
            ProviderError::from_status(400, None, anthropic, &call(true)),
            ProviderError::ContextTooLong(_)
        ));
        let other = ProviderError::from_status(400, None, "<html>bad</html>", &call(true));
        assert_eq!(
            other,
            ProviderError::Http {
                status: 400,
                body: "<html>bad</html>".into()
            }
        );
    }
}
