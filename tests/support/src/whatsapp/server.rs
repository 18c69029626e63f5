//! `FakeGraph`: the Graph API calls the WhatsApp channel makes (`POST /<number>/messages`
//! for messages, templates and read receipts with the typing indicator; `GET /<media-id>`
//! and the media URL it gives; `POST /<number>/media` uploads), answered with Meta's JSON
//! shapes and checks (Bearer token, 4,096-character text, three reply buttons of at most 20
//! characters, a 1,024-character interactive body, ten list rows), recording every call,
//! with scripted failures and the 24-hour window (a free-form message to someone whose
//! window is closed fails with `131047`).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tokio::time::Instant;
use tokio_util::sync::DropGuard;

use super::rules::check;
use super::{API_VERSION, FAKE_ACCESS_TOKEN};

/// A scripted answer for the next message sends (read receipts are never failed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// A WhatsApp error object with this `code` and HTTP status (`130429` and `131056` with
    /// 400, as Meta answers them).
    Code {
        /// The HTTP status.
        status: u16,
        /// WhatsApp's error code.
        code: i64,
    },
    /// HTTP 502 with an HTML body, as a broken proxy would answer.
    ServerError,
}

impl Failure {
    /// Meta's throughput limit.
    pub fn rate_limited() -> Self {
        Self::Code {
            status: 400,
            code: 130_429,
        }
    }

    /// Meta's per-person pair limit.
    pub fn pair_limited() -> Self {
        Self::Code {
            status: 400,
            code: 131_056,
        }
    }
}

/// One message the business sent, as the fake accepted it.
#[derive(Clone, Debug)]
pub struct Sent {
    /// Its `wamid`.
    pub id: String,
    /// The addressee (`to`, or `recipient` for a user id).
    pub to: String,
    /// `text`, `interactive`, `template`, `image` or `document`.
    pub kind: String,
    /// The whole request body.
    pub body: Value,
    /// When it arrived (tokio time).
    pub at: Instant,
}

impl Sent {
    /// The text a person sees: a text body, an interactive body, or the template's parameter.
    pub fn text(&self) -> String {
        let b = &self.body;
        let text = match self.kind.as_str() {
            "text" => &b["text"]["body"],
            "interactive" => &b["interactive"]["body"]["text"],
            "template" => &b["template"]["components"][0]["parameters"][0]["text"],
            "image" => &b["image"]["caption"],
            "document" => &b["document"]["caption"],
            _ => &Value::Null,
        };
        text.as_str().unwrap_or_default().to_owned()
    }

    /// The reply buttons' (id, title), in order.
    pub fn buttons(&self) -> Vec<(String, String)> {
        let buttons = self.body["interactive"]["action"]["buttons"]
            .as_array()
            .cloned();
        buttons
            .unwrap_or_default()
            .iter()
            .map(|b| {
                let r = &b["reply"];
                (
                    r["id"].as_str().unwrap_or_default().into(),
                    r["title"].as_str().unwrap_or_default().into(),
                )
            })
            .collect()
    }
}

#[derive(Default)]
struct World {
    sent: Vec<Sent>,
    /// Message ids named by read receipts with a typing indicator.
    typing: Vec<String>,
    refused: Vec<(i64, Value)>,
    /// Scripted answers for the next sends; `None` lets one through.
    failures: VecDeque<Option<Failure>>,
    closed: BTreeSet<String>,
    /// media id → (mime, bytes); uploads land here too.
    media: BTreeMap<String, (String, Vec<u8>)>,
    /// Live download URLs' nonces → media id.
    urls: BTreeMap<String, String>,
    expire_next_url: bool,
    next: u64,
}

struct Shared {
    addr: SocketAddr,
    world: Mutex<World>,
}

impl Shared {
    fn world(&self) -> std::sync::MutexGuard<'_, World> {
        self.world.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A fake Graph API on 127.0.0.1; stops when dropped.
pub struct FakeGraph {
    shared: Arc<Shared>,
    _stop: DropGuard,
}

impl FakeGraph {
    /// Start a fake accepting [`FAKE_ACCESS_TOKEN`].
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let shared = Arc::new(Shared {
            addr,
            world: Mutex::new(World::default()),
        });
        let app = Router::new()
            .route(
                &format!("/{API_VERSION}/{{number}}/messages"),
                post(messages),
            )
            .route(&format!("/{API_VERSION}/{{number}}/media"), post(upload))
            .route(&format!("/{API_VERSION}/{{media}}"), get(media_info))
            .route("/media/{nonce}", get(media_bytes))
            .with_state(Arc::clone(&shared));
        let stop = crate::serve_until_dropped(listener, app);
        Self {
            shared,
            _stop: stop,
        }
    }

    /// The base URL to configure as `api_url` (`http://127.0.0.1:<port>/v23.0`).
    pub fn api_url(&self) -> String {
        format!("http://{}/{API_VERSION}", self.shared.addr)
    }

    /// Every message accepted so far, in order.
    pub fn sent(&self) -> Vec<Sent> {
        self.shared.world().sent.clone()
    }

    /// The messages accepted for `to`.
    pub fn sent_to(&self, to: &str) -> Vec<Sent> {
        self.sent().into_iter().filter(|s| s.to == to).collect()
    }

    /// Wait until at least `n` messages to `to` were accepted, or panic after `timeout`.
    pub async fn wait_for(&self, to: &str, n: usize, timeout: Duration) -> Vec<Sent> {
        crate::eventually(timeout, &format!("{n} messages to {to}"), async || {
            let sent = self.sent_to(to);
            if sent.len() >= n {
                Ok(sent)
            } else {
                Err(sent.len())
            }
        })
        .await
    }

    /// Error codes of refused sends (scripted failures and failed checks), with their bodies.
    pub fn refused(&self) -> Vec<(i64, Value)> {
        self.shared.world().refused.clone()
    }

    /// Message ids a typing indicator was shown on.
    pub fn typing(&self) -> Vec<String> {
        self.shared.world().typing.clone()
    }

    /// Answer the next `n` message sends with `failure`.
    pub fn fail_next(&self, n: usize, failure: Failure) {
        self.shared
            .world()
            .failures
            .extend(std::iter::repeat_n(Some(failure), n));
    }

    /// Let the next `n` message sends through before scripted failures apply.
    pub fn pass_next(&self, n: usize) {
        self.shared
            .world()
            .failures
            .extend(std::iter::repeat_n(None, n));
    }

    /// Close `to`'s 24-hour window: free-form messages to them fail with `131047`.
    pub fn close_window(&self, to: &str) {
        self.shared.world().closed.insert(to.to_owned());
    }

    /// Media a person sent, to be fetched by id.
    pub fn add_media(&self, id: &str, mime: &str, bytes: &[u8]) {
        self.shared
            .world()
            .media
            .insert(id.to_owned(), (mime.to_owned(), bytes.to_vec()));
    }

    /// The next media URL handed out is already expired (404 when fetched).
    pub fn expire_next_media_url(&self) {
        self.shared.world().expire_next_url = true;
    }

    /// An uploaded file's (mime, bytes).
    pub fn media(&self, id: &str) -> Option<(String, Vec<u8>)> {
        self.shared.world().media.get(id).cloned()
    }
}

fn authorized(headers: &HeaderMap) -> bool {
    let expected = format!("Bearer {FAKE_ACCESS_TOKEN}");
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        == Some(expected.as_str())
}

/// Meta's error object.
fn error(status: u16, code: i64, details: &str) -> Response {
    let body = json!({"error": {"message": format!("(#{code}) {details}"), "type": "OAuthException",
        "code": code, "error_data": {"messaging_product": "whatsapp", "details": details},
        "fbtrace_id": "AfakeTraceId"}});
    (
        StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST),
        axum::Json(body),
    )
        .into_response()
}

fn unauthorized() -> Response {
    error(401, 190, "Error validating access token")
}

async fn messages(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    if !authorized(&headers) {
        return unauthorized();
    }
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return error(400, 100, "body is not JSON");
    };
    let mut world = shared.world();
    if body["status"] == "read" {
        if body["typing_indicator"]["type"] == "text" {
            world
                .typing
                .push(body["message_id"].as_str().unwrap_or_default().to_owned());
        }
        return axum::Json(json!({"success": true})).into_response();
    }
    let to = body["to"]
        .as_str()
        .or(body["recipient"].as_str())
        .unwrap_or_default()
        .to_owned();
    let kind = body["type"].as_str().unwrap_or("text").to_owned();
    let refusal = match world.failures.pop_front().flatten() {
        Some(Failure::ServerError) => {
            return (StatusCode::BAD_GATEWAY, "<html>502 Bad Gateway</html>").into_response();
        }
        Some(Failure::Code { status, code }) => Some((status, code, "stand-in failure")),
        None if kind != "template" && world.closed.contains(&to) => Some((
            400,
            131_047,
            "Message failed to send because more than 24 hours have passed since the customer last replied",
        )),
        None => check(&body).map(|(code, details)| (400, code, details)),
    };
    if let Some((status, code, details)) = refusal {
        world.refused.push((code, body));
        return error(status, code, details);
    }
    world.next += 1;
    let id = format!("wamid.FAKE{:06}", world.next);
    world.sent.push(Sent {
        id: id.clone(),
        to: to.clone(),
        kind,
        body,
        at: Instant::now(),
    });
    axum::Json(json!({"messaging_product": "whatsapp",
        "contacts": [{"input": to, "wa_id": to}], "messages": [{"id": id}]}))
    .into_response()
}

async fn media_info(
    State(shared): State<Arc<Shared>>,
    Path(media): Path<String>,
    headers: HeaderMap,
) -> Response {
    if !authorized(&headers) {
        return unauthorized();
    }
    let mut world = shared.world();
    let Some((mime, bytes)) = world.media.get(&media).cloned() else {
        return error(404, 100, "Unsupported get request: unknown media id");
    };
    world.next += 1;
    let nonce = format!("n{}", world.next);
    if !std::mem::take(&mut world.expire_next_url) {
        world.urls.insert(nonce.clone(), media.clone());
    }
    axum::Json(json!({"messaging_product": "whatsapp", "url": format!("http://{}/media/{nonce}", shared.addr),
        "mime_type": mime, "sha256": "x", "file_size": bytes.len(), "id": media}))
    .into_response()
}

async fn media_bytes(
    State(shared): State<Arc<Shared>>,
    Path(nonce): Path<String>,
    headers: HeaderMap,
) -> Response {
    if !authorized(&headers) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let world = shared.world();
    let found = world
        .urls
        .get(&nonce)
        .and_then(|id| world.media.get(id))
        .cloned();
    match found {
        Some((mime, bytes)) => ([(header::CONTENT_TYPE, mime)], bytes).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn upload(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    if !authorized(&headers) {
        return unauthorized();
    }
    let Some(boundary) = crate::multipart::boundary(&headers) else {
        return error(400, 100, "upload must be multipart/form-data");
    };
    let parts = crate::multipart::parse(&body, &boundary);
    let field = |name: &str| parts.iter().find(|p| p.name == name);
    let (Some(file), Some(product)) = (field("file"), field("messaging_product")) else {
        return error(400, 100, "file and messaging_product are required");
    };
    if product.bytes != b"whatsapp" {
        return error(400, 100, "messaging_product must be whatsapp");
    }
    let mime = field("type")
        .map(|p| String::from_utf8_lossy(&p.bytes).into_owned())
        .unwrap_or_default();
    let mut world = shared.world();
    world.next += 1;
    let id = format!("UPLOAD{}", world.next);
    world.media.insert(id.clone(), (mime, file.bytes.clone()));
    axum::Json(json!({"id": id})).into_response()
}
