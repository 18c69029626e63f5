//! Files on the fake Discord: a CDN route serving attachment URLs, and multipart message
//! posts (`payload_json` + `files[n]`) whose files are kept byte for byte. A voice message
//! (flag `IS_VOICE_MESSAGE`) is held to Discord's rules: one audio file with its
//! `duration_secs` and `waveform`, and no content.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::world::Shared;
use crate::multipart;

/// A file the bot posted with a message.
#[derive(Clone, Debug, PartialEq)]
pub struct SentFile {
    /// The channel it was posted in.
    pub channel_id: String,
    /// Its file name.
    pub name: String,
    /// Its bytes, exactly as received.
    pub bytes: Vec<u8>,
    /// The message content posted with it.
    pub content: String,
    /// The voice message's duration in seconds and base64 waveform, when it was one.
    pub voice: Option<(f64, String)>,
}

/// The message flag that makes an attachment a voice message.
const IS_VOICE_MESSAGE: u64 = 1 << 13;

/// Discord's refusal of a voice message that breaks its rules (code and message), if it
/// does.
pub(crate) fn voice_refusal(payload: &Value, files: usize) -> Option<(i64, &'static str)> {
    if payload["flags"].as_u64().unwrap_or(0) & IS_VOICE_MESSAGE == 0 {
        return None;
    }
    let attachment = &payload["attachments"][0];
    if !payload["content"].as_str().unwrap_or_default().is_empty() {
        Some((50159, "Voice messages do not support additional content."))
    } else if files != 1 {
        Some((50160, "Voice messages must have a single audio attachment."))
    } else if attachment["duration_secs"].as_f64().is_none()
        || attachment["waveform"].as_str().is_none()
    {
        Some((50161, "Voice messages must have supporting metadata."))
    } else {
        None
    }
}

/// A request body as JSON: the JSON body itself, or a multipart form's `payload_json`; and
/// the multipart form's files.
pub(crate) fn body(headers: &HeaderMap, raw: &[u8]) -> (Value, Vec<multipart::Part>) {
    let Some(boundary) = multipart::boundary(headers) else {
        return (
            serde_json::from_slice(raw).unwrap_or(Value::Null),
            Vec::new(),
        );
    };
    let parts = multipart::parse(raw, &boundary);
    let payload = parts
        .iter()
        .find(|p| p.name == "payload_json")
        .and_then(|p| serde_json::from_slice(&p.bytes).ok())
        .unwrap_or(Value::Null);
    let files = parts.into_iter().filter(|p| p.filename.is_some()).collect();
    (payload, files)
}

/// Keep the files of a message post to `path` (`/channels/{id}/messages`).
pub(crate) fn record(shared: &Shared, path: &str, payload: &Value, files: Vec<multipart::Part>) {
    let Some(channel) = path
        .strip_prefix("/channels/")
        .and_then(|rest| rest.strip_suffix("/messages"))
    else {
        return;
    };
    let content = payload["content"].as_str().unwrap_or_default().to_owned();
    let voice = (payload["flags"].as_u64().unwrap_or(0) & IS_VOICE_MESSAGE != 0).then(|| {
        let attachment = &payload["attachments"][0];
        (
            attachment["duration_secs"].as_f64().unwrap_or_default(),
            attachment["waveform"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        )
    });
    let mut world = shared.world();
    for file in files {
        world.sent_files.push(SentFile {
            channel_id: channel.to_owned(),
            name: file.filename.unwrap_or_default(),
            bytes: file.bytes,
            content: content.clone(),
            voice: voice.clone(),
        });
    }
}

/// Store a file a user attaches; returns the attachment object for MESSAGE_CREATE.
pub(crate) fn add(
    shared: &Shared,
    base: &str,
    name: &str,
    content_type: &str,
    bytes: &[u8],
) -> Value {
    let mut world = shared.world();
    let id = world.next_snowflake().to_string();
    let url = format!("{base}/attachments/1/{id}/{name}");
    world.cdn.insert(id.clone(), bytes.to_vec());
    json!({
        "id": id, "filename": name, "size": bytes.len(), "url": url, "proxy_url": url,
        "content_type": content_type,
    })
}

/// `GET /attachments/{channel}/{id}/{name}`: the CDN (signed URLs; no token needed).
pub(crate) async fn cdn(
    State(shared): State<Arc<Shared>>,
    Path((_channel, id, _name)): Path<(String, String, String)>,
) -> Response {
    let mut world = shared.world();
    world.cdn_downloads += 1;
    match world.cdn.get(&id) {
        Some(bytes) => Bytes::from(bytes.clone()).into_response(),
        None => (StatusCode::NOT_FOUND, "Not Found").into_response(),
    }
}
