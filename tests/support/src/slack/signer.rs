//! What Slack sends the gateway: Events API JSON (a DM, a mention, the URL check) and
//! interactivity forms (a button click), signed as Slack signs them, with
//! `X-Slack-Retry-Num` for redeliveries. Usable with reqwest or as a plain header list.

use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

/// `v0=` + hex HMAC-SHA256 of `v0:{timestamp}:{body}` with `signing_secret`.
pub fn sign(signing_secret: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(signing_secret.as_bytes()).expect("any key length");
    mac.update(format!("v0:{timestamp}:").as_bytes());
    mac.update(body);
    format!("v0={}", hex::encode(mac.finalize().into_bytes()))
}

/// The current Unix time in seconds, as `X-Slack-Request-Timestamp` carries it.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// A request body as Slack would post it, ready to be signed.
#[derive(Clone, Debug)]
pub struct SignedRequest {
    /// The raw body.
    pub body: Vec<u8>,
    /// Its content type.
    pub content_type: &'static str,
    /// The signing time (defaults to now).
    pub timestamp: i64,
    /// `X-Slack-Retry-Num`, for a redelivery.
    pub retry_num: Option<u32>,
}

impl SignedRequest {
    /// An Events API request (JSON body).
    pub fn event(json: &Value) -> Self {
        Self::raw(serde_json::to_vec(json).expect("JSON"), "application/json")
    }

    /// An interactivity request: `payload=<json>` form-encoded.
    pub fn interaction(payload: &Value) -> Self {
        let form = serde_urlencoded::to_string([("payload", payload.to_string())]).expect("form");
        Self::raw(form.into_bytes(), "application/x-www-form-urlencoded")
    }

    /// Any body (for malformed-input tests), signed like the others.
    pub fn raw(body: impl Into<Vec<u8>>, content_type: &'static str) -> Self {
        Self {
            body: body.into(),
            content_type,
            timestamp: unix_now(),
            retry_num: None,
        }
    }

    /// Sign as of `timestamp` (e.g. six minutes ago, for a replay test).
    pub fn at(mut self, timestamp: i64) -> Self {
        self.timestamp = timestamp;
        self
    }

    /// Mark as Slack's `n`th redelivery.
    pub fn retry(mut self, n: u32) -> Self {
        self.retry_num = Some(n);
        self
    }

    /// The headers Slack would send, signed with `signing_secret`.
    pub fn headers(&self, signing_secret: &str) -> Vec<(&'static str, String)> {
        let mut headers = vec![
            ("content-type", self.content_type.to_owned()),
            ("x-slack-request-timestamp", self.timestamp.to_string()),
            (
                "x-slack-signature",
                sign(signing_secret, self.timestamp, &self.body),
            ),
        ];
        if let Some(n) = self.retry_num {
            headers.push(("x-slack-retry-num", n.to_string()));
            headers.push(("x-slack-retry-reason", "http_timeout".to_owned()));
        }
        headers
    }

    /// A reqwest POST of this request to `url`, signed with `signing_secret`.
    pub fn build(
        &self,
        client: &reqwest::Client,
        url: &str,
        signing_secret: &str,
    ) -> reqwest::RequestBuilder {
        let mut request = client.post(url).body(self.body.clone());
        for (name, value) in self.headers(signing_secret) {
            request = request.header(name, value);
        }
        request
    }
}

/// A user message as Slack describes it in an event.
#[derive(Clone, Debug)]
pub struct SlackMessage<'a> {
    /// Slack's `event_id` for the delivery.
    pub event_id: &'a str,
    /// Author's user id.
    pub user: &'a str,
    /// Channel id (`D…` for a DM, `C…` for a channel).
    pub channel: &'a str,
    /// Text as Slack sends it (mentions as `<@U…>`).
    pub text: &'a str,
    /// The message's ts.
    pub ts: &'a str,
    /// The thread it was posted in, if any.
    pub thread_ts: Option<&'a str>,
}

impl Default for SlackMessage<'_> {
    fn default() -> Self {
        Self {
            event_id: "Ev0TEST0001",
            user: "U0TESTUSER",
            channel: "D0TESTDM",
            text: "hello",
            ts: "1700000100.000100",
            thread_ts: None,
        }
    }
}

fn envelope(event_id: &str, event: Value) -> Value {
    json!({
        "token": "test-verification-token", "team_id": "T0FAKETEAM", "api_app_id": "A0FAKEAPP",
        "event": event, "type": "event_callback", "event_id": event_id,
        "event_time": 1_700_000_100, "authorizations": [{"team_id": "T0FAKETEAM",
        "user_id": super::FAKE_BOT_USER_ID, "is_bot": true}],
    })
}

fn message_fields(kind: &str, m: &SlackMessage<'_>) -> Value {
    let mut event = json!({
        "type": kind, "user": m.user, "text": m.text, "ts": m.ts, "channel": m.channel,
        "event_ts": m.ts, "team": "T0FAKETEAM",
    });
    if let Some(thread) = m.thread_ts {
        event["thread_ts"] = json!(thread);
    }
    event
}

/// An `event_callback` for a direct message to the bot (`message.im`).
pub fn dm_event(m: &SlackMessage<'_>) -> Value {
    let mut event = message_fields("message", m);
    event["channel_type"] = json!("im");
    envelope(m.event_id, event)
}

/// An `event_callback` for a mention of the bot in a channel (`app_mention`); put the
/// `<@BOT>` mention in `text` yourself.
pub fn mention_event(m: &SlackMessage<'_>) -> Value {
    envelope(m.event_id, message_fields("app_mention", m))
}

/// An `event_callback` for a message in a channel the bot is in (`message.channels`, or
/// `message.groups` for a private channel): what Slack sends for every message there, with or
/// without a mention. A message that mentions the bot arrives a second time as
/// [`mention_event`], under another `event_id`; [`mention_deliveries`] gives both.
pub fn channel_message_event(m: &SlackMessage<'_>) -> Value {
    let mut event = message_fields("message", m);
    let private = m.channel.starts_with('G');
    event["channel_type"] = json!(if private { "group" } else { "channel" });
    envelope(m.event_id, event)
}

/// Both events Slack sends for a message mentioning the bot in a channel: `app_mention`
/// under `m.event_id`, then `message.channels` under `m.event_id` + `-msg`.
pub fn mention_deliveries(m: &SlackMessage<'_>) -> [Value; 2] {
    let second = format!("{}-msg", m.event_id);
    let copy = SlackMessage {
        event_id: &second,
        ..m.clone()
    };
    [mention_event(m), channel_message_event(&copy)]
}

/// The `url_verification` request Slack sends when the events URL is saved.
pub fn url_verification(challenge: &str) -> Value {
    json!({"token": "test-verification-token", "challenge": challenge, "type": "url_verification"})
}

/// A press of one button on a message the bot posted.
#[derive(Clone, Debug)]
pub struct ButtonClick<'a> {
    /// Who pressed.
    pub user: &'a str,
    /// Channel id of the message.
    pub channel: &'a str,
    /// ts of the message carrying the button.
    pub message_ts: &'a str,
    /// Thread of that message, if any.
    pub thread_ts: Option<&'a str>,
    /// The button's value (the payload the bot attached).
    pub value: &'a str,
    /// Slack's per-interaction trigger id.
    pub trigger_id: &'a str,
}

impl Default for ButtonClick<'_> {
    fn default() -> Self {
        Self {
            user: "U0TESTUSER",
            channel: "C0TESTCHAN",
            message_ts: "1700000000.000001",
            thread_ts: None,
            value: "approve",
            trigger_id: "1111.2222.test",
        }
    }
}

/// The `block_actions` payload of a button press (send with [`SignedRequest::interaction`]).
pub fn block_actions(click: &ButtonClick<'_>) -> Value {
    let mut message = json!({
        "type": "message", "subtype": "bot_message", "bot_id": super::FAKE_BOT_ID,
        "user": super::FAKE_BOT_USER_ID, "ts": click.message_ts, "text": "fallback",
        "blocks": [
            {"type": "section", "block_id": "s1", "text": {"type": "mrkdwn", "text": "Run the command?"}},
            {"type": "actions", "block_id": "a1", "elements": [{"type": "button",
                "action_id": "switchboard-0", "text": {"type": "plain_text", "text": "Approve"},
                "value": click.value}]},
        ],
    });
    if let Some(thread) = click.thread_ts {
        message["thread_ts"] = json!(thread);
    }
    json!({
        "type": "block_actions",
        "user": {"id": click.user, "username": "tester", "name": "tester", "team_id": "T0FAKETEAM"},
        "api_app_id": "A0FAKEAPP", "token": "test-verification-token",
        "container": {"type": "message", "message_ts": click.message_ts, "channel_id": click.channel, "is_ephemeral": false},
        "trigger_id": click.trigger_id,
        "team": {"id": "T0FAKETEAM", "domain": "fake-workspace"},
        "channel": {"id": click.channel, "name": "general"},
        "message": message,
        "response_url": format!("https://hooks.slack.test/actions/T0FAKETEAM/{}", click.trigger_id),
        "actions": [{"action_id": "switchboard-0", "block_id": "a1",
            "text": {"type": "plain_text", "text": "Approve"}, "value": click.value,
            "type": "button", "action_ts": "1700000200.000001"}],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_reproduces_slacks_documented_example() {
        let body = b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
        assert_eq!(
            sign("8f742231b10e8888abcd99yyyzzz85a5", 1_531_420_618, body),
            "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
        );
    }

    #[test]
    fn a_redelivery_carries_the_retry_headers_and_a_fresh_signature() {
        let request = SignedRequest::event(&dm_event(&SlackMessage::default())).retry(2);
        let headers = request.headers("test-signing-secret");
        let get = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("x-slack-retry-num"), Some("2"));
        assert_eq!(get("content-type"), Some("application/json"));
        let expected = sign("test-signing-secret", request.timestamp, &request.body);
        assert_eq!(get("x-slack-signature"), Some(expected.as_str()));
    }

    #[test]
    fn an_interaction_is_a_form_with_the_payload_as_json() {
        let request = SignedRequest::interaction(&block_actions(&ButtonClick::default()));
        let form: Vec<(String, String)> = serde_urlencoded::from_bytes(&request.body).unwrap();
        assert_eq!(form[0].0, "payload");
        let payload: Value = serde_json::from_str(&form[0].1).unwrap();
        assert_eq!(payload["type"], "block_actions");
        assert_eq!(payload["actions"][0]["value"], "approve");
    }
}
