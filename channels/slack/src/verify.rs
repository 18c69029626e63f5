//! Request signing check: the first thing every Slack webhook goes through, on the raw body,
//! before anything is parsed or stored. Slack signs `v0:{timestamp}:{body}` with the app's
//! signing secret (HMAC-SHA256) and sends `v0=<hex>` in `X-Slack-Signature`.

use axum::http::HeaderMap;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// How far a request's timestamp may be from our clock before it counts as a replay.
pub const MAX_CLOCK_SKEW_SECS: i64 = 5 * 60;

/// Why a request was refused; answered 401 and logged at debug (never the secret).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BadSignature {
    /// `X-Slack-Request-Timestamp` or `X-Slack-Signature` is absent or not text.
    #[error("missing signature headers")]
    MissingHeaders,
    /// The timestamp is not a Unix time in seconds.
    #[error("malformed timestamp")]
    BadTimestamp,
    /// The timestamp is more than five minutes from now: a replay or a wrong clock.
    #[error("timestamp {skew_secs}s away from now")]
    Stale {
        /// Seconds between the request's timestamp and our clock.
        skew_secs: i64,
    },
    /// The signature does not match the body.
    #[error("signature does not match")]
    Mismatch,
}

/// Check the signature headers of a request against its raw `body`, at Unix time `now`.
pub fn verify(
    signing_secret: &str,
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
) -> Result<(), BadSignature> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let (Some(timestamp), Some(signature)) = (
        header("x-slack-request-timestamp"),
        header("x-slack-signature"),
    ) else {
        return Err(BadSignature::MissingHeaders);
    };
    let sent_at: i64 = timestamp
        .trim()
        .parse()
        .map_err(|_| BadSignature::BadTimestamp)?;
    let skew_secs = now.saturating_sub(sent_at).saturating_abs();
    if skew_secs > MAX_CLOCK_SKEW_SECS {
        return Err(BadSignature::Stale { skew_secs });
    }
    let given = signature
        .strip_prefix("v0=")
        .and_then(|hex_sig| hex::decode(hex_sig).ok())
        .ok_or(BadSignature::Mismatch)?;
    let mut mac = Hmac::<Sha256>::new_from_slice(signing_secret.as_bytes())
        .expect("HMAC accepts keys of any length");
    mac.update(b"v0:");
    mac.update(timestamp.as_bytes());
    mac.update(b":");
    mac.update(body);
    // verify_slice compares in constant time.
    mac.verify_slice(&given).map_err(|_| BadSignature::Mismatch)
}

/// The current Unix time in seconds.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "test-signing-secret";

    fn headers(timestamp: &str, body: &[u8], secret: &str) -> HeaderMap {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(format!("v0:{timestamp}:").as_bytes());
        mac.update(body);
        let sig = format!("v0={}", hex::encode(mac.finalize().into_bytes()));
        let mut map = HeaderMap::new();
        map.insert("x-slack-request-timestamp", timestamp.parse().unwrap());
        map.insert("x-slack-signature", sig.parse().unwrap());
        map
    }

    #[test]
    fn slacks_documented_example_request_passes() {
        // The worked example from Slack's "Verifying requests from Slack" page.
        let body = b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
        let mut h = HeaderMap::new();
        h.insert("x-slack-request-timestamp", "1531420618".parse().unwrap());
        let sig = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";
        h.insert("x-slack-signature", sig.parse().unwrap());
        let doc_secret = "8f742231b10e8888abcd99yyyzzz85a5";
        assert_eq!(verify(doc_secret, &h, body, 1_531_420_618), Ok(()));
    }

    #[test]
    fn a_correctly_signed_fresh_request_passes() {
        let body = br#"{"type":"event_callback"}"#;
        let h = headers("1700000000", body, SECRET);
        assert_eq!(verify(SECRET, &h, body, 1_700_000_010), Ok(()));
    }

    #[test]
    fn a_changed_body_or_another_secret_fails() {
        let body = b"payload";
        let h = headers("1700000000", body, SECRET);
        assert_eq!(
            verify(SECRET, &h, b"payload!", 1_700_000_000),
            Err(BadSignature::Mismatch)
        );
        let h = headers("1700000000", body, "another-secret");
        assert_eq!(
            verify(SECRET, &h, body, 1_700_000_000),
            Err(BadSignature::Mismatch)
        );
    }

    #[test]
    fn a_timestamp_more_than_five_minutes_off_either_way_fails() {
        let body = b"x";
        let h = headers("1700000000", body, SECRET);
        assert_eq!(verify(SECRET, &h, body, 1_700_000_300), Ok(()));
        assert_eq!(
            verify(SECRET, &h, body, 1_700_000_301),
            Err(BadSignature::Stale { skew_secs: 301 })
        );
        assert_eq!(
            verify(SECRET, &h, body, 1_699_999_600),
            Err(BadSignature::Stale { skew_secs: 400 })
        );
    }

    #[test]
    fn missing_or_malformed_headers_fail() {
        let body = b"x";
        assert_eq!(
            verify(SECRET, &HeaderMap::new(), body, 0),
            Err(BadSignature::MissingHeaders)
        );
        let mut h = headers("1700000000", body, SECRET);
        h.insert("x-slack-request-timestamp", "soon".parse().unwrap());
        assert_eq!(verify(SECRET, &h, body, 0), Err(BadSignature::BadTimestamp));
        let mut h = headers("1700000000", body, SECRET);
        h.insert("x-slack-signature", "v1=abcd".parse().unwrap());
        assert_eq!(
            verify(SECRET, &h, body, 1_700_000_000),
            Err(BadSignature::Mismatch)
        );
        h.insert("x-slack-signature", "v0=not-hex".parse().unwrap());
        assert_eq!(
            verify(SECRET, &h, body, 1_700_000_000),
            Err(BadSignature::Mismatch)
        );
    }
}
