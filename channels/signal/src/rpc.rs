//! The JSON-RPC client of signal-cli's HTTP daemon (`POST /api/v1/rpc`), and what its failures
//! mean for the core. signal-cli reports a failed send as a JSON-RPC error whose `data.response`
//! holds each recipient's result: `RATE_LIMIT_FAILURE` (Signal's 413/429, with
//! `retryAfterSeconds`, and a `token` when Signal wants a captcha solved first: "proof
//! required"), `UNREGISTERED_FAILURE`, `IDENTITY_FAILURE`, `NETWORK_FAILURE`.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_channel::ChannelError;

/// signal-cli's error code for a send refused by Signal's rate limit.
const RATELIMIT_ERROR: i64 = -5;
/// How long one call may take; a send to a large group takes a while.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// The wait when Signal says "slow down" without saying how long.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(30);
/// How long sends to a number Signal called unregistered are refused without asking again.
const UNREGISTERED_PAUSE: Duration = Duration::from_secs(600);
/// How long every send is refused after Signal asked for a captcha, unless it said.
const PROOF_PAUSE: Duration = Duration::from_secs(3600);

/// A failed call, sorted by what the caller does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Signal's rate limit: wait this long.
    RateLimited(Duration),
    /// Signal wants a captcha solved before this account sends more ("proof required");
    /// only the operator can (`signal-cli submitRateLimitChallenge`).
    ProofRequired {
        /// The challenge token the operator passes on.
        token: String,
        /// How long Signal said the limit lasts without a captcha.
        retry_after: Option<Duration>,
    },
    /// The recipient has no Signal account (any more).
    Unregistered(String),
    /// The daemon is away or answered with a server error; a retry may work.
    Transient(String),
    /// Anything else: the request itself is wrong (bad params, unknown group, untrusted key).
    Refused(String),
}

impl Failure {
    /// Sort a JSON-RPC `error` object.
    pub(crate) fn from_error(error: &Value) -> Self {
        let message = error["message"].as_str().unwrap_or("no message").to_owned();
        let results = error["data"]["response"]["results"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if let Some(r) = results.iter().find(|r| r["token"].is_string()) {
            return Self::ProofRequired {
                token: r["token"].as_str().unwrap_or_default().to_owned(),
                retry_after: r["retryAfterSeconds"].as_u64().map(Duration::from_secs),
            };
        }
        let of_type = |t: &str| results.iter().find(|r| r["type"] == t);
        if error["code"].as_i64() == Some(RATELIMIT_ERROR)
            || of_type("RATE_LIMIT_FAILURE").is_some()
        {
            let secs = results
                .iter()
                .filter_map(|r| r["retryAfterSeconds"].as_u64())
                .max();
            return Self::RateLimited(secs.map_or(DEFAULT_RETRY_AFTER, Duration::from_secs));
        }
        if let Some(r) = of_type("UNREGISTERED_FAILURE") {
            let who = r["recipientAddress"]["number"]
                .as_str()
                .or(r["recipientAddress"]["uuid"].as_str())
                .unwrap_or("the recipient");
            return Self::Unregistered(who.to_owned());
        }
        if of_type("NETWORK_FAILURE").is_some() {
            return Self::Transient(message);
        }
        Self::Refused(message)
    }
}

/// The daemon's JSON-RPC endpoint, and which refusals were already logged.
pub(crate) struct Rpc {
    http: reqwest::Client,
    url: String,
    account: String,
    next_id: AtomicU64,
    /// Refusals retrying cannot cure (an unregistered recipient, a captcha to solve), each
    /// logged once per recipient so a busy conversation does not flood the log.
    logged: Mutex<HashSet<String>>,
    /// Until when sends are refused here without asking the daemon: per recipient after
    /// "unregistered", and for everyone (`*`) after a captcha request. Asking again would
    /// only repeat the refusal, and Signal counts the attempts against the limit.
    refused: Mutex<HashMap<String, (tokio::time::Instant, ChannelError)>>,
}

impl Rpc {
    pub(crate) fn new(daemon_url: &str, account: &str) -> Result<Self, String> {
        let http = reqwest::Client::builder()
            .timeout(CALL_TIMEOUT)
            .build()
            .map_err(|e| format!("no HTTP client: {e}"))?;
        Ok(Self {
            http,
            url: format!("{}/api/v1/rpc", daemon_url.trim_end_matches('/')),
            account: account.to_owned(),
            next_id: AtomicU64::new(1),
            logged: Mutex::new(HashSet::new()),
            refused: Mutex::new(HashMap::new()),
        })
    }

    /// Call `method` with `params` (the account is added); its `result`.
    pub(crate) async fn call(&self, method: &str, mut params: Value) -> Result<Value, Failure> {
        params["account"] = json!(self.account);
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = json!({ "jsonrpc": "2.0", "method": method, "params": params, "id": id });
        let response = self
            .http
            .post(&self.url)
            .json(&body)
            .send()
            .await
            .map_err(|e| Failure::Transient(format!("signal-cli daemon unreachable: {e}")))?;
        let status = response.status();
        if matches!(status.as_u16(), 413 | 429) {
            let wait = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok()?.parse().ok())
                .map_or(DEFAULT_RETRY_AFTER, Duration::from_secs);
            return Err(Failure::RateLimited(wait));
        }
        if status.is_server_error() {
            return Err(Failure::Transient(format!(
                "signal-cli daemon: HTTP {status}"
            )));
        }
        let answer: Value = response
            .json()
            .await
            .map_err(|e| Failure::Transient(format!("unreadable answer from signal-cli: {e}")))?;
        if !answer["error"].is_null() {
            return Err(Failure::from_error(&answer["error"]));
        }
        if !status.is_success() {
            return Err(Failure::Refused(format!(
                "signal-cli daemon: HTTP {status}"
            )));
        }
        Ok(answer["result"].clone())
    }

    /// The refusal still standing for a send to `to`, if any.
    pub(crate) fn refusal(&self, to: &str) -> Option<ChannelError> {
        let now = tokio::time::Instant::now();
        let mut refused = self
            .refused
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        refused.retain(|_, (until, _)| *until > now);
        refused
            .get("*")
            .or_else(|| refused.get(to))
            .map(|(_, err)| err.clone())
    }

    fn refuse(&self, who: &str, pause: Duration, err: &ChannelError) {
        let until = tokio::time::Instant::now() + pause;
        self.refused
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(who.to_owned(), (until, err.clone()));
    }

    /// `failure` as the core's error, logging a refusal no retry cures once per `to` and
    /// refusing further sends it would only repeat.
    pub(crate) fn to_channel_error(&self, failure: Failure, to: &str) -> ChannelError {
        match failure {
            Failure::RateLimited(wait) => ChannelError::RateLimited { retry_after: wait },
            Failure::Transient(why) => ChannelError::Transient(why),
            Failure::ProofRequired { token, retry_after } => {
                if self.first_time(&format!("proof:{to}")) {
                    tracing::warn!(
                        to,
                        challenge = %token,
                        "Signal wants a captcha solved before this account sends more: solve one at \
                         https://signalcaptchas.org/challenge/generate.html and run `signal-cli -a <account> \
                         submitRateLimitChallenge --challenge <challenge> --captcha <captcha>`; \
                         messages are not retried until then"
                    );
                }
                let err = ChannelError::Fatal(
                    "Signal requires a captcha before more messages (proof required)".into(),
                );
                self.refuse("*", retry_after.unwrap_or(PROOF_PAUSE), &err);
                err
            }
            Failure::Unregistered(who) => {
                if self.first_time(&format!("unregistered:{to}")) {
                    tracing::warn!(
                        to,
                        who,
                        "the recipient is not registered on Signal; not retried"
                    );
                }
                let err = ChannelError::Fatal(format!("{who} is not registered on Signal"));
                self.refuse(to, UNREGISTERED_PAUSE, &err);
                err
            }
            Failure::Refused(why) => ChannelError::Fatal(why),
        }
    }

    fn first_time(&self, what: &str) -> bool {
        self.logged
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(what.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results(r: Value) -> Value {
        json!({ "code": -1, "message": "Failed to send message", "data": { "response": { "timestamp": 1, "results": [r] } } })
    }

    #[test]
    fn a_rate_limit_carries_signals_wait() {
        let mut error = results(json!({ "type": "RATE_LIMIT_FAILURE", "retryAfterSeconds": 7 }));
        error["code"] = json!(-5);
        assert_eq!(
            Failure::from_error(&error),
            Failure::RateLimited(Duration::from_secs(7))
        );
    }

    #[test]
    fn a_challenge_token_is_proof_required_and_an_unregistered_number_says_who() {
        let proof = results(json!({ "type": "RATE_LIMIT_FAILURE", "token": "tok-1" }));
        assert_eq!(
            Failure::from_error(&proof),
            Failure::ProofRequired {
                token: "tok-1".into(),
                retry_after: None
            }
        );
        let gone = results(
            json!({ "type": "UNREGISTERED_FAILURE", "recipientAddress": { "number": "+15550009999" } }),
        );
        assert_eq!(
            Failure::from_error(&gone),
            Failure::Unregistered("+15550009999".into())
        );
    }

    #[test]
    fn refusals_no_retry_cures_are_fatal_and_logged_once() {
        let rpc = Rpc::new("http://127.0.0.1:1", "+15550001111").unwrap();
        let err = rpc.to_channel_error(Failure::Unregistered("+1555".into()), "+1555");
        assert!(matches!(err, ChannelError::Fatal(_)));
        assert!(!rpc.first_time("unregistered:+1555"), "already logged");
        assert!(rpc.refusal("+1555").is_some(), "not asked again");
        assert!(rpc.refusal("+1666").is_none(), "others still are");
    }
}
