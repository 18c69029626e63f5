//! The web chat's file routes, mounted outside the gateway's shared request-body limit
//! (`Channel::upload_routes`): `POST <path>/upload` takes one file as the raw body (its name
//! in `X-File-Name`, percent-encoded; its type from `Content-Type`) up to
//! `max_attachment_bytes` and answers its id, which a later message frame names in `files`;
//! `GET <path>/files/<id>` serves a file of the asking session as a download. Both pass the
//! same checks as the socket ([`routes::admit`]); an upload also counts against the
//! session's per-minute budget.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::header::{
    CACHE_CONTROL, CONTENT_DISPOSITION, CONTENT_LENGTH, CONTENT_SECURITY_POLICY, CONTENT_TYPE,
    X_CONTENT_TYPE_OPTIONS,
};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{get, post};
use futures::StreamExt;
use serde_json::json;
use switchboard_channel::human_size;
use tokio::time::Instant;

use crate::files::{clean_mime, content_disposition, percent_decode};
use crate::hub::Hub;
use crate::ids::valid_file_id;
use crate::routes::{self, TokenQuery, query_token};

/// The header carrying an upload's file name (percent-encoded UTF-8).
pub(crate) const FILE_NAME_HEADER: &str = "x-file-name";

/// A served file may never run as a page, even if a browser ignored the disposition.
const FILE_CSP: &str = "sandbox; default-src 'none'";

/// The upload and download routes, with full paths so the gateway can merge them at its root.
pub(crate) fn router(hub: Arc<Hub>) -> Router {
    let base = hub.config.base();
    Router::new()
        .route(&format!("{base}upload"), post(upload))
        .route(&format!("{base}files/{{id}}"), get(download))
        .with_state(hub)
}

fn refuse(status: StatusCode, text: impl Into<String>) -> Response {
    let mut line = text.into();
    line.push('\n');
    (status, [(CONTENT_TYPE, "text/plain; charset=utf-8")], line).into_response()
}

/// The one line a person sees for a file over the limit.
fn too_large(limit: u64) -> Response {
    refuse(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!(
            "File too large: the limit for files here is {}.",
            human_size(limit)
        ),
    )
}

async fn upload(
    State(hub): State<Arc<Hub>>,
    headers: HeaderMap,
    query: Result<Query<TokenQuery>, QueryRejection>,
    body: Body,
) -> Response {
    let session = match routes::admit(&hub, &headers, query_token(query).as_deref()) {
        Ok(session) => session,
        Err(refused) => return *refused,
    };
    let Some(files) = &hub.files else {
        return refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            "File uploads need the gateway's data directory.",
        );
    };
    let limit = hub.config.max_attachment_bytes;
    let announced = header(&headers, CONTENT_LENGTH.as_str()).and_then(|v| v.parse::<u64>().ok());
    if announced.is_some_and(|len| len > limit) {
        return too_large(limit);
    }
    let per_minute = hub.config.max_messages_per_minute;
    let admitted = hub
        .with(&session, |s| s.admit(Instant::now(), per_minute))
        .await;
    if let Err(wait) = admitted {
        let text = format!(
            "Slow down: at most {per_minute} messages a minute. Try again in {} s.",
            wait.as_secs().max(1)
        );
        return refuse(StatusCode::TOO_MANY_REQUESTS, text);
    }
    let bytes = match read_capped(body, limit).await {
        Ok(bytes) if bytes.is_empty() => {
            return refuse(StatusCode::BAD_REQUEST, "The file is empty.");
        }
        Ok(bytes) => bytes,
        Err(refused) => return refused,
    };
    let name = percent_decode(header(&headers, FILE_NAME_HEADER).unwrap_or("file"));
    let mime = header(&headers, CONTENT_TYPE.as_str()).and_then(clean_mime);
    match files.put(&session, &name, mime.as_deref(), &bytes).await {
        Ok(id) => {
            let meta = files.meta(&id).await;
            let name = meta.map_or(name, |m| m.name);
            let answer = json!({ "id": id, "name": name, "size": bytes.len() });
            (StatusCode::CREATED, Json(answer)).into_response()
        }
        Err(e) => {
            tracing::error!(channel = %hub.name, error = %e, "could not store a web chat upload");
            refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                "The file could not be stored; please try again.",
            )
        }
    }
}

/// The body, refused with 413 once it passes `limit` (a body without `Content-Length` is
/// counted as it arrives, so an oversized one is never held whole).
async fn read_capped(body: Body, limit: u64) -> Result<Vec<u8>, Response> {
    let mut stream = body.into_data_stream();
    let mut bytes = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk =
            chunk.map_err(|_| refuse(StatusCode::BAD_REQUEST, "The upload was cut midway."))?;
        if (bytes.len() + chunk.len()) as u64 > limit {
            return Err(too_large(limit));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

async fn download(
    State(hub): State<Arc<Hub>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    query: Result<Query<TokenQuery>, QueryRejection>,
) -> Response {
    let session = match routes::admit(&hub, &headers, query_token(query).as_deref()) {
        Ok(session) => session,
        Err(refused) => return *refused,
    };
    let not_found = || refuse(StatusCode::NOT_FOUND, "No such file.");
    let Some(files) = hub.files.as_ref().filter(|_| valid_file_id(&id)) else {
        return not_found();
    };
    // Another session's file is "not found" too: whether it exists is not this one's business.
    let (meta, bytes) = match files.read(&id, u64::MAX).await {
        Ok((meta, bytes)) if meta.session == session => (meta, bytes),
        _ => return not_found(),
    };
    let mime = meta.mime.as_deref().unwrap_or("application/octet-stream");
    let mut response = bytes.into_response();
    let h = response.headers_mut();
    let value = |v: &str| HeaderValue::from_str(v).ok();
    if let Some(v) = value(mime) {
        h.insert(CONTENT_TYPE, v);
    }
    if let Some(v) = value(&content_disposition(&meta.name)) {
        h.insert(CONTENT_DISPOSITION, v);
    }
    h.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(FILE_CSP));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("private, no-store"));
    response
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}
