//! Slack Web API client: the outbound end of the channel (`chat.postMessage`, `chat.update`,
//! `chat.delete`, `auth.test`). One JSON POST per call with the bot token as Bearer; every
//! failure is classified into a `ChannelError` the core can act on.

use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::Value;
use switchboard_channel::ChannelError;

/// Wait this long after a 429 or `ratelimited` that names no `Retry-After`.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);

/// Idle connections to the Web API kept for reuse. Over HTTP/1.1 every call in flight has a
/// connection of its own, and after a burst of answers the pool would otherwise keep them all
/// open for its idle timeout.
const IDLE_CONNECTIONS: usize = 16;

/// The fields of a Web API reply the channel reads.
#[derive(Deserialize, Debug, Default)]
pub struct Reply {
    /// Whether the call succeeded.
    #[serde(default)]
    pub ok: bool,
    /// Slack's error code when `ok` is false.
    pub error: Option<String>,
    /// The message's ts (`chat.postMessage`, `chat.update`).
    pub ts: Option<String>,
    /// The bot's own user id (`auth.test`).
    pub user_id: Option<String>,
}

/// A Web API client for one bot token.
pub struct WebApi {
    pub(crate) http: reqwest::Client,
    pub(crate) base: String,
    pub(crate) token: String,
    /// The instance name, for the log line that says which token to check.
    name: String,
}

impl WebApi {
    /// A client for `base` (e.g. `https://slack.com/api`) with `token`.
    pub fn new(name: &str, base: &str, token: &str) -> Self {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(30))
            .pool_max_idle_per_host(IDLE_CONNECTIONS)
            .build()
            .unwrap_or_default();
        Self {
            http,
            base: base.trim_end_matches('/').to_owned(),
            token: token.to_owned(),
            name: name.to_owned(),
        }
    }

    /// Call `method` with a JSON `body`; `Ok` only when Slack answered `"ok": true`.
    pub async fn call(&self, method: &str, body: &Value) -> Result<Reply, ChannelError> {
        let response = self
            .http
            .post(format!("{}/{method}", self.base))
            .bearer_auth(&self.token)
            .json(body)
            .send()
            .await
            .map_err(|e| ChannelError::Transient(format!("{method}: {}", without_url(e))))?;
        let status = response.status();
        let headers = response.headers().clone();
        let reply = response.json::<Reply>().await.ok();
        let result = classify(status, &headers, reply);
        if let Err(ChannelError::Fatal(code)) = &result {
            if is_auth_error(code) {
                tracing::error!(
                    channel = %self.name,
                    method,
                    error = %code,
                    "Slack refused the bot token; check bot_token in [channels.{}]",
                    self.name
                );
            } else {
                tracing::warn!(channel = %self.name, method, error = %code, "Slack call failed");
            }
        }
        result
    }
}

/// Map a Web API answer to the reply or a `ChannelError`.
pub fn classify(
    status: StatusCode,
    headers: &HeaderMap,
    reply: Option<Reply>,
) -> Result<Reply, ChannelError> {
    if status == StatusCode::TOO_MANY_REQUESTS {
        return Err(ChannelError::RateLimited {
            retry_after: retry_after(headers),
        });
    }
    if status.is_server_error() {
        return Err(ChannelError::Transient(format!("HTTP {status}")));
    }
    let Some(reply) = reply else {
        return Err(if status.is_success() {
            ChannelError::Transient("reply is not Slack JSON".to_owned())
        } else {
            ChannelError::Fatal(format!("HTTP {status}"))
        });
    };
    if reply.ok {
        return Ok(reply);
    }
    let code = reply.error.unwrap_or_else(|| format!("HTTP {status}"));
    Err(match code.as_str() {
        "ratelimited" | "rate_limited" => ChannelError::RateLimited {
            retry_after: retry_after(headers),
        },
        "msg_too_long" | "msg_blocks_too_long" => ChannelError::TooLong,
        "message_not_found" | "channel_not_found" | "thread_not_found" => {
            ChannelError::NotFound(code)
        }
        "internal_error" | "fatal_error" | "service_unavailable" | "request_timeout" => {
            ChannelError::Transient(code)
        }
        _ => ChannelError::Fatal(code),
    })
}

/// Whether a Slack error code means the token itself is bad.
pub fn is_auth_error(code: &str) -> bool {
    matches!(
        code,
        "invalid_auth" | "not_authed" | "account_inactive" | "token_revoked" | "token_expired"
    )
}

/// `Retry-After` in seconds, or one second when absent or unreadable.
fn retry_after(headers: &HeaderMap) -> Duration {
    headers
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(DEFAULT_RETRY_AFTER, Duration::from_secs)
}

/// A reqwest error's text without its URL (a proxy URL could carry credentials).
fn without_url(error: reqwest::Error) -> String {
    error.without_url().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(ok: bool, error: Option<&str>) -> Option<Reply> {
        Some(Reply {
            ok,
            error: error.map(str::to_owned),
            ..Reply::default()
        })
    }

    #[expect(
        clippy::too_many_lines,
        reason = "one table: each Slack answer beside the error it becomes"
    )]
    #[test]
    fn slack_answers_map_to_channel_errors() {
        let none = HeaderMap::new();
        let mut wait = HeaderMap::new();
        wait.insert("retry-after", "7".parse().unwrap());
        let cases = [
            (
                StatusCode::TOO_MANY_REQUESTS,
                &wait,
                None,
                Err(ChannelError::RateLimited {
                    retry_after: Duration::from_secs(7),
                }),
            ),
            (
                StatusCode::TOO_MANY_REQUESTS,
                &none,
                None,
                Err(ChannelError::RateLimited {
                    retry_after: DEFAULT_RETRY_AFTER,
                }),
            ),
            (
                StatusCode::OK,
                &wait,
                reply(false, Some("ratelimited")),
                Err(ChannelError::RateLimited {
                    retry_after: Duration::from_secs(7),
                }),
            ),
            (
                StatusCode::OK,
                &none,
                reply(false, Some("msg_too_long")),
                Err(ChannelError::TooLong),
            ),
            (
                StatusCode::OK,
                &none,
                reply(false, Some("message_not_found")),
                Err(ChannelError::NotFound("message_not_found".into())),
            ),
            (
                StatusCode::OK,
                &none,
                reply(false, Some("channel_not_found")),
                Err(ChannelError::NotFound("channel_not_found".into())),
            ),
            (
                StatusCode::OK,
                &none,
                reply(false, Some("invalid_auth")),
                Err(ChannelError::Fatal("invalid_auth".into())),
            ),
            (
                StatusCode::OK,
                &none,
                reply(false, Some("not_in_channel")),
                Err(ChannelError::Fatal("not_in_channel".into())),
            ),
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                &none,
                None,
                Err(ChannelError::Transient(
                    "HTTP 500 Internal Server Error".into(),
                )),
            ),
            (
                StatusCode::BAD_GATEWAY,
                &none,
                reply(false, None),
                Err(ChannelError::Transient("HTTP 502 Bad Gateway".into())),
            ),
            (
                StatusCode::OK,
                &none,
                None,
                Err(ChannelError::Transient("reply is not Slack JSON".into())),
            ),
            (
                StatusCode::NOT_FOUND,
                &none,
                None,
                Err(ChannelError::Fatal("HTTP 404 Not Found".into())),
            ),
        ];
        for (status, headers, body, expected) in cases {
            let got = classify(status, headers, body).map(|r| r.ok);
            assert_eq!(got, expected.map(|()| true), "{status}");
        }
        assert!(classify(StatusCode::OK, &none, reply(true, None)).is_ok());
    }

    #[test]
    fn token_errors_are_recognised_as_auth_errors() {
        for code in [
            "invalid_auth",
            "not_authed",
            "account_inactive",
            "token_revoked",
        ] {
            assert!(is_auth_error(code), "{code}");
        }
        assert!(!is_auth_error("channel_not_found"));
    }
}
