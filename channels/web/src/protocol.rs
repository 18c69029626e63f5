//! The JSON frames on the chat socket. Client → server: `message` (with the ids of any files
//! uploaded for it) and `button`, each with a client-made id so a resend after a reconnect is recognised. Server → client: `sync` (the
//! session's messages, on connect), `send`/`edit`/`delete`, `ack`, `refused` and `typing`.

use serde::{Deserialize, Serialize};
use switchboard_channel::Button;

use crate::ids::valid_file_id;

/// Close code for a frame that breaks the protocol or the rate limit.
pub const CLOSE_POLICY: u16 = 1008;
/// Close code for a frame or message over the size limit.
pub const CLOSE_TOO_BIG: u16 = 1009;
/// Close code when the server cannot store a message right now; the client resends.
pub const CLOSE_TRY_AGAIN: u16 = 1013;
/// Longest client id accepted.
const MAX_ID_LEN: usize = 64;
/// Most files one message may carry.
pub(crate) const MAX_FILES: usize = 10;

/// A frame from the browser.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum ClientFrame {
    /// The person sent a text message.
    Message {
        /// Client-made unique id (a uuid), reused when the message is resent.
        id: String,
        /// What they typed (may be empty when files come with it).
        text: String,
        /// Ids of files uploaded before (`POST <path>/upload`) that come with the message.
        #[serde(default)]
        files: Vec<String>,
    },
    /// The person pressed a button under a message.
    Button {
        /// Client-made unique id for this press.
        id: String,
        /// Id of the message carrying the button.
        message: String,
        /// The button's payload.
        payload: String,
    },
}

/// A frame that ends the connection, with the close code and the reason shown to the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Violation {
    pub(crate) code: u16,
    pub(crate) reason: String,
}

impl Violation {
    pub(crate) fn policy(reason: impl Into<String>) -> Self {
        Self {
            code: CLOSE_POLICY,
            reason: reason.into(),
        }
    }

    pub(crate) fn try_again(reason: impl Into<String>) -> Self {
        Self {
            code: CLOSE_TRY_AGAIN,
            reason: reason.into(),
        }
    }

    fn too_big(reason: impl Into<String>) -> Self {
        Self {
            code: CLOSE_TOO_BIG,
            reason: reason.into(),
        }
    }
}

/// Largest frame accepted before parsing: room for `max_chars` characters even when every
/// one of them is escaped in JSON (`\u0000` is six bytes), plus the envelope.
pub(crate) fn max_frame_bytes(max_chars: usize) -> usize {
    max_chars.saturating_mul(6).saturating_add(1024)
}

/// Parse one text frame, enforcing the size limits and the id format.
pub(crate) fn parse(frame: &str, max_chars: usize) -> Result<ClientFrame, Violation> {
    if frame.len() > max_frame_bytes(max_chars) {
        return Err(Violation::too_big(format!(
            "frame too big: {} bytes",
            frame.len()
        )));
    }
    let parsed: ClientFrame = serde_json::from_str(frame)
        .map_err(|e| Violation::policy(format!("bad frame: {}", truncate(&e.to_string(), 80))))?;
    let (id, text_len) = match &parsed {
        ClientFrame::Message { id, text, files } => {
            if files.len() > MAX_FILES || !files.iter().all(|f| valid_file_id(f)) {
                return Err(Violation::policy(format!(
                    "bad frame: at most {MAX_FILES} file ids, each 32 of 0-9 a-f"
                )));
            }
            (id, text.chars().count())
        }
        ClientFrame::Button { id, payload, .. } => (id, payload.chars().count()),
    };
    if !valid_id(id) {
        return Err(Violation::policy(
            "bad frame: id must be 1-64 of A-Z a-z 0-9 -",
        ));
    }
    if text_len > max_chars {
        return Err(Violation::too_big(format!(
            "message too long: {text_len} characters, the limit is {max_chars}"
        )));
    }
    Ok(parsed)
}

/// Whether `id` is a plausible client id (uuid-like): it ends up in event ids and DOM ids.
pub(crate) fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

/// Close reasons must fit a control frame (123 bytes); cut on a character boundary.
pub(crate) fn truncate(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_owned();
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// Who wrote a message in the transcript.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Role {
    /// The person in the browser.
    User,
    /// The agent (through the core).
    Bot,
}

/// One message as the page shows it: HTML rendered on the server, never raw input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct MessageView<'a> {
    pub(crate) id: &'a str,
    pub(crate) role: Role,
    pub(crate) html: &'a str,
    pub(crate) buttons: &'a [Button],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) notice: Option<&'a str>,
}

/// A frame to the browser.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ServerFrame<'a> {
    /// Every message of the session, in order; sent first on every connection.
    Sync {
        messages: Vec<MessageView<'a>>,
        max_message_chars: usize,
    },
    /// A new message.
    Send { message: MessageView<'a> },
    /// A message replaced in place.
    Edit { message: MessageView<'a> },
    /// A message removed.
    Delete { id: &'a str },
    /// A client frame was stored (or was a resend of one already stored).
    Ack { id: &'a str },
    /// A client frame was not accepted; the person sees why.
    Refused { id: &'a str, reason: &'a str },
    /// The agent is working on an answer.
    Typing,
}

impl ServerFrame<'_> {
    /// The frame as JSON text.
    pub(crate) fn to_json(&self) -> String {
        serde_json::to_string(self).expect("server frames always serialize")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_and_button_frames_parse() {
        assert_eq!(
            parse(r#"{"type":"message","id":"a-1","text":"hi"}"#, 10),
            Ok(ClientFrame::Message {
                id: "a-1".into(),
                text: "hi".into(),
                files: Vec::new(),
            })
        );
        assert_eq!(
            parse(
                r#"{"type":"button","id":"b1","message":"m1","payload":"ok"}"#,
                10
            ),
            Ok(ClientFrame::Button {
                id: "b1".into(),
                message: "m1".into(),
                payload: "ok".into()
            })
        );
    }

    #[test]
    fn malformed_frames_are_policy_violations() {
        for frame in [
            "not json",
            r#"{"type":"shout","id":"a"}"#,
            r#"{"type":"message","id":"a"}"#,
            r#"{"type":"message","id":"a","text":"x","extra":1}"#,
            r#"{"type":"message","id":"","text":"x"}"#,
            r#"{"type":"message","id":"<img>","text":"x"}"#,
            r#"{"type":"message","id":"a","text":"x","files":["../x"]}"#,
        ] {
            let err = parse(frame, 100).unwrap_err();
            assert_eq!(err.code, CLOSE_POLICY, "{frame}");
            assert!(
                err.reason.starts_with("bad frame"),
                "{frame}: {}",
                err.reason
            );
        }
    }

    #[test]
    fn a_message_over_the_character_limit_is_too_big() {
        let frame = format!(
            r#"{{"type":"message","id":"a","text":"{}"}}"#,
            "é".repeat(11)
        );
        let err = parse(&frame, 10).unwrap_err();
        assert_eq!(err.code, CLOSE_TOO_BIG);
        assert_eq!(
            err.reason,
            "message too long: 11 characters, the limit is 10"
        );
        assert!(
            parse(&frame, 11).is_ok(),
            "characters are counted, not bytes"
        );
    }

    #[test]
    fn a_huge_frame_is_refused_before_parsing() {
        let frame = "x".repeat(max_frame_bytes(10) + 1);
        assert_eq!(parse(&frame, 10).unwrap_err().code, CLOSE_TOO_BIG);
    }

    #[test]
    fn close_reasons_are_cut_on_character_boundaries() {
        assert_eq!(truncate("héllo", 2), "h");
        assert_eq!(truncate("short", 80), "short");
    }

    #[test]
    fn server_frames_carry_a_type_tag() {
        let frame = ServerFrame::Send {
            message: MessageView {
                id: "m1",
                role: Role::Bot,
                html: "<p>x</p>",
                buttons: &[],
                notice: None,
            },
        };
        let json: serde_json::Value = serde_json::from_str(&frame.to_json()).unwrap();
        assert_eq!(json["type"], "send");
        assert_eq!(json["message"]["role"], "bot");
        assert!(json["message"].get("notice").is_none());
        assert_eq!(ServerFrame::Typing.to_json(), r#"{"type":"typing"}"#);
    }
}
