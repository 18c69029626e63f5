//! Files on the fake Slack: private file URLs that answer only the bot token (403 otherwise,
//! as Slack does without `files:read`), and the external upload flow
//! (`files.getUploadURLExternal` → POST the bytes to the upload URL →
//! `files.completeUploadExternal`), keeping every uploaded byte.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

/// A file the bot shared with `files.completeUploadExternal`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UploadedFile {
    /// The file id from `files.getUploadURLExternal`.
    pub id: String,
    /// The file name given when the upload URL was asked for.
    pub name: String,
    /// The bytes posted to the upload URL, exactly.
    pub bytes: Vec<u8>,
    /// The channel it was shared in.
    pub channel: String,
    /// The thread, if any.
    pub thread_ts: Option<String>,
    /// The comment posted with it.
    pub initial_comment: Option<String>,
}

#[derive(Default)]
struct World {
    base: String,
    /// Files people shared: id → (name, bytes).
    stored: HashMap<String, (String, Vec<u8>)>,
    /// Upload tickets: id → (name, announced length, bytes once posted).
    tickets: HashMap<String, (String, usize, Option<Vec<u8>>)>,
    uploaded: Vec<UploadedFile>,
    downloads: usize,
    next: u32,
    /// Answer 403 to every private file URL (an app without `files:read`).
    forbidden: bool,
}

/// The fake's file store, shared by its routes and its Web API methods.
#[derive(Clone, Default)]
pub(super) struct Files {
    token: String,
    world: Arc<Mutex<World>>,
}

impl Files {
    pub(super) fn new(token: &str, base: String) -> Self {
        let files = Self {
            token: token.to_owned(),
            world: Arc::default(),
        };
        files.world().base = base;
        files
    }

    fn world(&self) -> std::sync::MutexGuard<'_, World> {
        self.world.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The routes a file's `url_private` and an upload URL point at.
    pub(super) fn routes(&self) -> Router {
        Router::new()
            .route("/files-pri/{id}/{name}", get(download))
            .route("/upload/{id}", post(upload))
            .with_state(self.clone())
    }

    /// Store a file a person shares; returns its Slack file object (for an event's `files`).
    pub(super) fn add(&self, name: &str, mimetype: &str, bytes: &[u8]) -> Value {
        let mut world = self.world();
        world.next += 1;
        let id = format!("F0FILE{:04}", world.next);
        let url = format!("{}/files-pri/{id}/{name}", world.base);
        world
            .stored
            .insert(id.clone(), (name.to_owned(), bytes.to_vec()));
        json!({
            "id": id, "name": name, "title": name, "mimetype": mimetype,
            "filetype": name.rsplit('.').next().unwrap_or("binary"), "size": bytes.len(),
            "url_private": url, "url_private_download": format!("{url}?download=1"),
        })
    }

    pub(super) fn set_forbidden(&self, on: bool) {
        self.world().forbidden = on;
    }

    pub(super) fn uploaded(&self) -> Vec<UploadedFile> {
        self.world().uploaded.clone()
    }

    pub(super) fn downloads(&self) -> usize {
        self.world().downloads
    }

    /// The `files.*` Web API methods, or `None` for another method.
    pub(super) fn method(&self, method: &str, body: &Value) -> Option<Result<Value, String>> {
        Some(match method {
            "files.getUploadURLExternal" => self.ticket(body),
            "files.completeUploadExternal" => self.complete(body),
            _ => return None,
        })
    }

    fn ticket(&self, body: &Value) -> Result<Value, String> {
        let name = body["filename"]
            .as_str()
            .ok_or("invalid_arguments: filename")?;
        let length = body["length"]
            .as_str()
            .and_then(|l| l.parse::<usize>().ok())
            .or_else(|| body["length"].as_u64().map(|l| l as usize))
            .ok_or("invalid_arguments: length")?;
        let mut world = self.world();
        world.next += 1;
        let id = format!("F0UP{:04}", world.next);
        world
            .tickets
            .insert(id.clone(), (name.to_owned(), length, None));
        let upload_url = format!("{}/upload/{id}", world.base);
        Ok(json!({ "ok": true, "upload_url": upload_url, "file_id": id }))
    }

    fn complete(&self, body: &Value) -> Result<Value, String> {
        let channel = body["channel_id"].as_str().unwrap_or_default().to_owned();
        let list = body["files"].as_array().cloned().unwrap_or_default();
        let mut world = self.world();
        let mut shared = Vec::new();
        for file in &list {
            let id = file["id"].as_str().unwrap_or_default();
            let Some((name, length, Some(bytes))) = world.tickets.remove(id) else {
                return Err("file_not_found".into());
            };
            if bytes.len() != length {
                return Err("file_upload_size_mismatch".into());
            }
            shared.push(json!({ "id": id, "title": file["title"] }));
            world.uploaded.push(UploadedFile {
                id: id.to_owned(),
                name,
                bytes,
                channel: channel.clone(),
                thread_ts: body["thread_ts"].as_str().map(str::to_owned),
                initial_comment: body["initial_comment"].as_str().map(str::to_owned),
            });
        }
        Ok(json!({ "ok": true, "files": shared }))
    }
}

async fn download(
    State(files): State<Files>,
    Path((id, _name)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let mut world = files.world();
    world.downloads += 1;
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if bearer != Some(files.token.as_str()) || world.forbidden {
        return (StatusCode::FORBIDDEN, "forbidden").into_response();
    }
    match world.stored.get(&id) {
        Some((_, bytes)) => Bytes::from(bytes.clone()).into_response(),
        None => (StatusCode::NOT_FOUND, "file_not_found").into_response(),
    }
}

async fn upload(
    State(files): State<Files>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    // Slack takes the raw bytes or a multipart form with the file in it.
    let bytes = crate::multipart::boundary(&headers)
        .and_then(|b| {
            crate::multipart::parse(&body, &b)
                .into_iter()
                .find(|p| p.filename.is_some())
        })
        .map_or_else(|| body.to_vec(), |part| part.bytes);
    let mut world = files.world();
    match world.tickets.get_mut(&id) {
        Some(ticket) => {
            ticket.2 = Some(bytes);
            (StatusCode::OK, "OK - uploaded").into_response()
        }
        None => (StatusCode::NOT_FOUND, "unknown upload").into_response(),
    }
}

impl super::FakeSlack {
    /// Store a file a person shares; returns the Slack file object for an event's `files`.
    pub fn add_file(&self, name: &str, mimetype: &str, bytes: &[u8]) -> Value {
        self.shared.files.add(name, mimetype, bytes)
    }

    /// Files the bot shared through the external upload flow.
    pub fn uploaded_files(&self) -> Vec<UploadedFile> {
        self.shared.files.uploaded()
    }

    /// Answer 403 to private file URLs from now on (as for an app without `files:read`).
    pub fn forbid_file_downloads(&self) {
        self.shared.files.set_forbidden(true);
    }

    /// Requests to private file URLs so far.
    pub fn file_downloads(&self) -> usize {
        self.shared.files.downloads()
    }
}
