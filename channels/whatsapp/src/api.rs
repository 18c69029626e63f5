//! The Graph API client: `POST /<phone_number_id>/messages` (messages, templates, the read
//! receipt with its typing indicator), media lookups and uploads; and the mapping of
//! WhatsApp's error codes to what the core can act on. Every call carries the access token
//! as `Authorization: Bearer`, and its answer's `error.code` decides, never its title.

use std::time::Duration;

use reqwest::header::RETRY_AFTER;
use serde::Deserialize;
use serde_json::Value;
use switchboard_channel::{ChannelError, Secret};

use crate::payload::ApiError;

/// Too many messages from this number (throughput).
pub(crate) const THROUGHPUT_LIMIT: i64 = 130_429;
/// Too many messages from this number to the same person in a short time.
pub(crate) const PAIR_LIMIT: i64 = 131_056;
/// More than 24 hours since the person last wrote: only a template may go out.
pub(crate) const REENGAGEMENT: i64 = 131_047;
/// The account's own API call rate.
const ACCOUNT_LIMIT: i64 = 80_007;

/// How one Graph API call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GraphError {
    /// Meta answered with an error object.
    Api {
        /// The HTTP status.
        status: u16,
        /// WhatsApp's error code (`130429`, `131047`, …).
        code: i64,
        /// Meta's details.
        detail: String,
        /// `Retry-After`, when Meta sent one.
        retry_after: Option<Duration>,
    },
    /// No answer, or one that is not Meta's JSON (a proxy's error page).
    Transport(String),
}

impl GraphError {
    /// WhatsApp's error code, when Meta gave one.
    pub(crate) fn code(&self) -> Option<i64> {
        match self {
            Self::Api { code, .. } => Some(*code),
            Self::Transport(_) => None,
        }
    }
}

impl From<GraphError> for ChannelError {
    fn from(err: GraphError) -> Self {
        match err {
            GraphError::Api {
                code, retry_after, ..
            } if matches!(code, THROUGHPUT_LIMIT | PAIR_LIMIT | ACCOUNT_LIMIT) => {
                // The pair limit allows about one message every six seconds to a person.
                let default = match code {
                    ACCOUNT_LIMIT => Duration::from_secs(60),
                    PAIR_LIMIT => Duration::from_secs(6),
                    _ => Duration::from_secs(1),
                };
                Self::RateLimited {
                    retry_after: retry_after.unwrap_or(default),
                }
            }
            GraphError::Api {
                status,
                code,
                detail,
                ..
            } if status >= 500 || matches!(code, 1 | 2 | 131_000 | 131_016) => {
                Self::Transient(format!("({code}) {detail}"))
            }
            GraphError::Api { code, detail, .. } => Self::Fatal(format!("({code}) {detail}")),
            GraphError::Transport(detail) => Self::Transient(detail),
        }
    }
}

/// Meta's error envelope.
#[derive(Deserialize)]
struct ErrorEnvelope {
    error: ApiError,
}

/// The answer to a sent message: the new message's id.
#[derive(Deserialize)]
struct Sent {
    #[serde(default)]
    messages: Vec<SentId>,
}

#[derive(Deserialize)]
struct SentId {
    id: String,
}

/// A media object's download URL, as `GET /<media-id>` answers.
#[derive(Deserialize, Debug)]
pub(crate) struct MediaInfo {
    pub url: String,
    #[serde(default)]
    pub file_size: Option<u64>,
}

/// One business number's Graph API client.
pub(crate) struct Graph {
    pub http: reqwest::Client,
    /// `api_url` without a trailing `/`.
    pub base: String,
    phone_number_id: String,
    token: Secret,
}

impl Graph {
    /// A client for `phone_number_id` at `api_url`.
    pub(crate) fn new(api_url: &str, phone_number_id: &str, token: Secret) -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap_or_default();
        Self {
            http,
            base: api_url.trim_end_matches('/').to_owned(),
            phone_number_id: phone_number_id.to_owned(),
            token,
        }
    }

    /// `request` with the access token.
    pub(crate) fn authed(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        request.bearer_auth(self.token.expose().unwrap_or_default())
    }

    /// `POST /<phone_number_id>/<what>` with a JSON `body`; the answer's JSON.
    pub(crate) async fn post(&self, what: &str, body: &Value) -> Result<Value, GraphError> {
        let url = format!("{}/{}/{what}", self.base, self.phone_number_id);
        self.call(self.http.post(url).json(body)).await
    }

    /// Send one message (`body` without `messaging_product`); its `wamid`.
    pub(crate) async fn send(&self, mut body: Value) -> Result<String, GraphError> {
        body["messaging_product"] = "whatsapp".into();
        let answer = self.post("messages", &body).await?;
        let sent: Sent = serde_json::from_value(answer)
            .map_err(|e| GraphError::Transport(format!("unexpected answer: {e}")))?;
        sent.messages
            .into_iter()
            .next()
            .map(|m| m.id)
            .ok_or_else(|| GraphError::Transport("answer without a message id".into()))
    }

    /// Where media `id` can be fetched now (the URL expires after a few minutes).
    pub(crate) async fn media(&self, id: &str) -> Result<MediaInfo, GraphError> {
        let url = format!("{}/{id}", self.base);
        let answer = self.call(self.http.get(url)).await?;
        serde_json::from_value(answer)
            .map_err(|e| GraphError::Transport(format!("unexpected media answer: {e}")))
    }

    /// Send `request` with the token; Meta's JSON, or its error.
    pub(crate) async fn call(&self, request: reqwest::RequestBuilder) -> Result<Value, GraphError> {
        let response = self
            .authed(request)
            .send()
            .await
            .map_err(|e| GraphError::Transport(e.without_url().to_string()))?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok()?.trim().parse().ok())
            .map(Duration::from_secs);
        let text = response
            .text()
            .await
            .map_err(|e| GraphError::Transport(e.without_url().to_string()))?;
        if (200..300).contains(&status) {
            return serde_json::from_str(&text)
                .map_err(|e| GraphError::Transport(format!("unexpected answer: {e}")));
        }
        match serde_json::from_str::<ErrorEnvelope>(&text) {
            Ok(envelope) => Err(GraphError::Api {
                status,
                code: envelope.error.code,
                detail: envelope.error.detail(),
                retry_after,
            }),
            Err(_) => Err(GraphError::Transport(format!(
                "HTTP {status} without Meta's error"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(status: u16, code: i64) -> GraphError {
        GraphError::Api {
            status,
            code,
            detail: "x".into(),
            retry_after: None,
        }
    }

    #[test]
    fn rate_limit_codes_are_rate_limited_and_the_rest_transient_or_fatal() {
        assert_eq!(
            ChannelError::from(api(400, PAIR_LIMIT)),
            ChannelError::RateLimited {
                retry_after: Duration::from_secs(6)
            }
        );
        assert!(matches!(
            ChannelError::from(api(400, THROUGHPUT_LIMIT)),
            ChannelError::RateLimited { .. }
        ));
        assert!(matches!(
            ChannelError::from(api(503, 0)),
            ChannelError::Transient(_)
        ));
        assert!(matches!(
            ChannelError::from(api(400, 131_026)),
            ChannelError::Fatal(_)
        ));
        assert!(matches!(
            ChannelError::from(GraphError::Transport("reset".into())),
            ChannelError::Transient(_)
        ));
    }
}
