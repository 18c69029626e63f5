//! Transcription stand-in: an OpenAI-compatible `POST /v1/audio/transcriptions` that checks
//! the Bearer key, reads the multipart `file` and `model`, keeps them, and answers
//! `{"text": …}` with the transcript the test set.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::json;
use tokio_util::sync::DropGuard;

use crate::multipart;

/// One transcription request received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transcription {
    /// The `model` field.
    pub model: String,
    /// The uploaded file's name.
    pub file_name: String,
    /// The uploaded bytes, exactly.
    pub bytes: Vec<u8>,
}

#[derive(Default)]
struct World {
    transcript: String,
    received: Vec<Transcription>,
}

/// A fake speech-to-text API on 127.0.0.1; stops when dropped.
pub struct FakeTranscriber {
    addr: SocketAddr,
    world: Arc<Mutex<World>>,
    _stop: DropGuard,
}

/// The API key the fake accepts; obviously not a real key.
pub const FAKE_TRANSCRIPTION_KEY: &str = "test-transcription-key";

impl FakeTranscriber {
    /// Start a fake that answers every request with `transcript`.
    pub async fn start(transcript: &str) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let world = Arc::new(Mutex::new(World {
            transcript: transcript.to_owned(),
            received: Vec::new(),
        }));
        let app = Router::new()
            .route("/v1/audio/transcriptions", post(transcribe))
            .with_state(Arc::clone(&world));
        let stop = crate::serve_until_dropped(listener, app);
        Self {
            addr,
            world,
            _stop: stop,
        }
    }

    /// The base URL to configure (`http://127.0.0.1:<port>/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request so far.
    pub fn received(&self) -> Vec<Transcription> {
        self.world
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .received
            .clone()
    }
}

async fn transcribe(
    State(world): State<Arc<Mutex<World>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if bearer != Some(FAKE_TRANSCRIPTION_KEY) {
        let error = json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}});
        return (StatusCode::UNAUTHORIZED, axum::Json(error)).into_response();
    }
    let parts = multipart::boundary(&headers)
        .map(|b| multipart::parse(&body, &b))
        .unwrap_or_default();
    let model = parts
        .iter()
        .find(|p| p.name == "model")
        .map(|p| String::from_utf8_lossy(&p.bytes).into_owned());
    let file = parts.iter().find(|p| p.name == "file");
    let (Some(model), Some(file)) = (model, file) else {
        let error = json!({"error": {"message": "file and model are required", "type": "invalid_request_error"}});
        return (StatusCode::BAD_REQUEST, axum::Json(error)).into_response();
    };
    let mut world = world.lock().unwrap_or_else(PoisonError::into_inner);
    world.received.push(Transcription {
        model,
        file_name: file.filename.clone().unwrap_or_default(),
        bytes: file.bytes.clone(),
    });
    axum::Json(json!({ "text": world.transcript })).into_response()
}
