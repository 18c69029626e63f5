//! Files on the fake Bot API: `getFile` (a `file_path` for a stored file, `400 Bad Request:
//! invalid file_id` for an unknown or expired one), the download route
//! `/file/bot<token>/<file_path>` (which a test can hold, to stop a gateway mid-download, or
//! cut midway) and `sendDocument` / `sendPhoto` / `sendVoice` (multipart uploads kept byte for
//! byte; `sendVoice` with its `duration`).

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::params::{int, text};
use super::reply::Reply;
use super::server::{FakeTelegram, Shared, next_message_id};
use crate::multipart;

/// A file the bot uploaded with `sendDocument` or `sendPhoto`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SentFile {
    /// `sendDocument`, `sendPhoto` or `sendVoice`.
    pub method: String,
    /// The chat it was posted in.
    pub chat_id: i64,
    /// The file name of the upload.
    pub name: String,
    /// Its bytes, exactly as received.
    pub bytes: Vec<u8>,
    /// The caption, if any.
    pub caption: Option<String>,
    /// The duration in seconds the bot gave, if any (`sendVoice`).
    pub duration: Option<i64>,
}

/// A file users "sent" that the bot can fetch.
#[derive(Clone, Debug, Default)]
pub(super) struct StoredFile {
    pub(super) path: String,
    pub(super) bytes: Vec<u8>,
}

/// How the download route behaves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DownloadMode {
    /// Serve files.
    #[default]
    Serve,
    /// Accept the request and never answer (a gateway stopped now has not downloaded).
    Hold,
    /// Announce the full length, send half, close (a transfer cut midway).
    Cut,
}

/// The file methods, or `None` for any other method.
pub(super) fn call(
    shared: &Shared,
    method: &str,
    params: &Value,
    headers: &HeaderMap,
    body: &[u8],
) -> Option<Reply> {
    Some(match method {
        "getFile" => get_file(shared, params),
        "sendDocument" => upload(shared, method, "document", params, headers, body),
        "sendPhoto" => upload(shared, method, "photo", params, headers, body),
        "sendVoice" => upload(shared, method, "voice", params, headers, body),
        _ => return None,
    })
}

fn get_file(shared: &Shared, params: &Value) -> Reply {
    let id = text(params, "file_id").unwrap_or_default();
    let world = shared.world();
    match world.files.get(&id) {
        Some(file) => Reply::Ok(json!({
            "file_id": id, "file_unique_id": format!("u-{id}"),
            "file_size": file.bytes.len(), "file_path": file.path,
        })),
        None => Reply::bad_request("invalid file_id"),
    }
}

fn upload(
    shared: &Shared,
    method: &str,
    field: &str,
    params: &Value,
    headers: &HeaderMap,
    body: &[u8],
) -> Reply {
    let parts = multipart::boundary(headers)
        .map(|b| multipart::parse(body, &b))
        .unwrap_or_default();
    // teloxide names the file part after the field, or attaches it as `attach://…`.
    let Some(file) = parts
        .iter()
        .find(|p| p.filename.is_some() && (p.name == field || p.name.starts_with("file")))
        .or_else(|| parts.iter().find(|p| p.filename.is_some()))
    else {
        return Reply::bad_request(&format!("there is no {field} in the request"));
    };
    let mut world = shared.world();
    let Some(chat_id) = int(params, "chat_id").filter(|c| world.chats.contains(c)) else {
        return Reply::bad_request("chat not found");
    };
    world.sent_files.push(SentFile {
        method: method.to_owned(),
        chat_id,
        name: file.filename.clone().unwrap_or_default(),
        bytes: file.bytes.clone(),
        caption: text(params, "caption"),
        duration: int(params, "duration"),
    });
    let message_id = next_message_id(&mut world);
    let mut msg = json!({
        "message_id": message_id, "date": super::unix_now(),
        "chat": { "id": chat_id, "type": if chat_id > 0 { "private" } else { "supergroup" }, "title": "chat", "first_name": "chat" },
        "from": super::FakeUser::the_bot().to_json(),
    });
    let meta = json!({ "file_id": format!("sent-{message_id}"), "file_unique_id": format!("su-{message_id}"), "file_size": file.bytes.len() });
    if field == "photo" {
        let mut size = meta;
        size["width"] = json!(100);
        size["height"] = json!(100);
        msg["photo"] = json!([size]);
    } else if field == "voice" {
        let mut voice = meta;
        voice["duration"] = json!(int(params, "duration").unwrap_or(0));
        voice["mime_type"] = json!("audio/ogg");
        msg["voice"] = voice;
    } else {
        msg["document"] = meta;
    }
    Reply::Ok(msg)
}

/// `GET /file/bot<token>/<file_path>`.
pub(super) async fn download(
    State(shared): State<Arc<Shared>>,
    Path((bot, path)): Path<(String, String)>,
) -> Response {
    let (mode, file) = {
        let mut world = shared.world();
        world.downloads += 1;
        let file = world.files.values().find(|f| f.path == path).cloned();
        (world.download_mode, file)
    };
    if bot.strip_prefix("bot") != Some(shared.token.as_str()) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let Some(file) = file else {
        return (StatusCode::NOT_FOUND, "Not Found").into_response();
    };
    match mode {
        DownloadMode::Serve => (
            [(header::CONTENT_TYPE, "application/octet-stream")],
            Bytes::from(file.bytes),
        )
            .into_response(),
        DownloadMode::Hold => std::future::pending().await,
        DownloadMode::Cut => cut(file.bytes),
    }
}

/// A response that announces all of `bytes` and ends after half of them.
fn cut(bytes: Vec<u8>) -> Response {
    let total = bytes.len();
    let half = Bytes::from(bytes[..total / 2].to_vec());
    let stream = futures::stream::iter(vec![
        Ok::<Bytes, std::io::Error>(half),
        Err(std::io::Error::other("connection reset")),
    ]);
    Response::builder()
        .header(header::CONTENT_LENGTH, total)
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

impl FakeTelegram {
    /// Store a file a user sends, as Telegram would; returns its `file_id` (for
    /// [`UserMessage::with_document`](super::UserMessage::with_document) and friends).
    pub fn add_file(&self, name: &str, bytes: &[u8]) -> String {
        let mut world = self.shared.world();
        let id = format!("file-{}", world.files.len() + 1);
        let path = format!("documents/{id}-{name}");
        let stored = StoredFile {
            path,
            bytes: bytes.to_vec(),
        };
        world.files.insert(id.clone(), stored);
        id
    }

    /// Forget a stored file, as Telegram does once a file id expires.
    pub fn expire_file(&self, file_id: &str) {
        self.shared.world().files.remove(file_id);
    }

    /// Make the download route serve, hold or cut files from now on.
    pub fn set_download_mode(&self, mode: DownloadMode) {
        self.shared.world().download_mode = mode;
    }

    /// How many requests reached the download route.
    pub fn downloads(&self) -> usize {
        self.shared.world().downloads
    }

    /// Files the bot uploaded (`sendDocument`, `sendPhoto`), oldest first.
    pub fn sent_files(&self) -> Vec<SentFile> {
        self.shared.world().sent_files.clone()
    }
}
