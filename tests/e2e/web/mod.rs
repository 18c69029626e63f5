//! The built-in web chat through the whole gateway: the real channel built from config,
//! the real inbox and drafts, the fake LLM. `socket` drives the WebSocket protocol directly;
//! `browser` drives the page in headless Chromium.

mod browser;
mod browser_files;
mod files;
mod first_run;
mod host;
mod socket;
mod transcript;

use std::net::SocketAddr;
use std::sync::Arc;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use switchboard::agent::Tool;
use switchboard::config::{self, Config};
use switchboard::{Gateway, RunningGateway, channels};
use switchboard_channel::{Channel, ConversationKey};
use switchboard_standins::FakeLlm;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::helpers::WAIT;

/// A client socket.
pub(crate) type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// A gateway with one web channel named `web`, a fake LLM and its own data directory.
struct WebApp {
    gateway: Option<RunningGateway>,
    /// Kept across restarts: a restarted gateway listens where the page expects it.
    addr: SocketAddr,
    channel: Arc<dyn Channel>,
    llm: FakeLlm,
    config: Config,
    _dir: tempfile::TempDir,
}

/// Config for a web chat gateway; `keys` are extra `[channels.web]` lines.
fn web_config(llm_url: &str, dir: &std::path::Path, keys: &str) -> Config {
    let dir = dir.display();
    let text = format!(
        r#"
[gateway]
listen = "127.0.0.1:0"
database_url = "sqlite://{dir}/web.db"
data_dir = "{dir}/data"
shutdown_grace_secs = 1
[provider]
kind = "openai"
base_url = "{llm_url}"
model = "fake-model"
api_key = "test-key-not-real"
timeout_secs = 5
max_retries = 2
[streaming]
chunk_min_chars = 20
progress_min_interval_ms = 100
[channels.web]
kind = "web"
{keys}
"#
    );
    let mut config = config::parse(&text, "web-test.toml", &[]).expect("web test config is valid");
    // As in helpers.rs: the supervisor is the real binary, not this test binary (which,
    // re-executed with `supervise`, would run the test harness and report no posture).
    (config.sandbox.supervisor).get_or_insert_with(|| env!("CARGO_BIN_EXE_switchboard").into());
    config
}

impl WebApp {
    async fn spawn(keys: &str) -> Self {
        Self::spawn_with(keys, Vec::new()).await
    }

    /// Start with extra `[channels.web]` keys and tools offered to the model.
    async fn spawn_with(keys: &str, tools: Vec<Arc<dyn Tool>>) -> Self {
        let llm = FakeLlm::start().await;
        let dir = tempfile::tempdir().unwrap();
        let config = web_config(&llm.openai_url(), dir.path(), keys);
        let (gateway, channel) = start(&config, tools, "127.0.0.1:0".parse().unwrap()).await;
        Self {
            addr: gateway.addr(),
            gateway: Some(gateway),
            channel,
            llm,
            config,
            _dir: dir,
        }
    }

    fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The conversation workspace of browser session `session`.
    fn workspace(&self, session: &str) -> std::path::PathBuf {
        self._dir.path().join("data/workspaces/web").join(session)
    }

    /// Stop the gateway gracefully (open sockets are closed with 1001).
    async fn shut_down(&mut self) {
        if let Some(gateway) = self.gateway.take() {
            gateway.shutdown().await;
        }
    }

    /// Start a fresh gateway (fresh channel) on the same data and address.
    async fn start_again(&mut self) {
        let (gateway, channel) = start(&self.config, Vec::new(), self.addr).await;
        self.gateway = Some(gateway);
        self.channel = channel;
    }

    /// Stop gracefully and start again.
    async fn restart(&mut self) {
        self.shut_down().await;
        self.start_again().await;
    }

    /// The conversation of browser session `session`.
    fn key(&self, session: &str) -> ConversationKey {
        ConversationKey::new("web", session)
    }

    async fn stop(mut self) {
        if let Some(gateway) = self.gateway.take() {
            gateway.shutdown().await;
        }
    }
}

/// Start a gateway with the channels `config` describes; returns it and the web channel.
async fn start(
    config: &Config,
    tools: Vec<Arc<dyn Tool>>,
    addr: SocketAddr,
) -> (RunningGateway, Arc<dyn Channel>) {
    let built = channels::from_config(config).expect("channels build");
    let web = built
        .iter()
        .find(|c| c.name() == "web")
        .cloned()
        .expect("the web channel is built without any credential");
    let mut gateway = Gateway::new(config.clone());
    for channel in built {
        gateway = gateway.channel(channel);
    }
    for tool in tools {
        gateway = gateway.tool(tool);
    }
    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    (gateway.start(listener).await.expect("gateway starts"), web)
}

/// A fresh browser session id, as the page's cookie would hold.
pub(crate) fn new_session() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// Open `/ws` as browser session `session`, with `query` (e.g. `?token=…`) appended.
pub(crate) async fn try_connect(
    addr: SocketAddr,
    session: &str,
    query: &str,
) -> Result<Ws, tungstenite::Error> {
    let mut request = format!("ws://{addr}/ws{query}")
        .into_client_request()
        .unwrap();
    let cookie = format!("sb_web_session={session}").parse().unwrap();
    request.headers_mut().insert("cookie", cookie);
    tokio_tungstenite::connect_async(request)
        .await
        .map(|(ws, _)| ws)
}

/// Connect and read the `sync` frame every socket starts with.
pub(crate) async fn connect(addr: SocketAddr, session: &str) -> (Ws, Value) {
    let mut ws = try_connect(addr, session, "").await.expect("socket opens");
    let sync = next_json(&mut ws).await;
    assert_eq!(sync["type"], "sync", "{sync}");
    (ws, sync)
}

/// The next message on the socket, within [`WAIT`].
pub(crate) async fn next_message(ws: &mut Ws) -> Message {
    tokio::time::timeout(WAIT, ws.next())
        .await
        .expect("a frame within the wait")
        .expect("the socket is open")
        .expect("a readable frame")
}

/// The next text frame as JSON (pings and pongs skipped).
pub(crate) async fn next_json(ws: &mut Ws) -> Value {
    loop {
        match next_message(ws).await {
            Message::Text(text) => return serde_json::from_str(&text).unwrap(),
            Message::Close(frame) => panic!("socket closed: {frame:?}"),
            _ => {}
        }
    }
}

/// Read frames until one satisfies `wanted`; returns it.
pub(crate) async fn json_where(ws: &mut Ws, wanted: impl Fn(&Value) -> bool) -> Value {
    loop {
        let frame = next_json(ws).await;
        if wanted(&frame) {
            return frame;
        }
    }
}

/// Read until the server closes the socket; returns the close code and reason.
async fn close_frame(ws: &mut Ws) -> (u16, String) {
    loop {
        match next_message(ws).await {
            Message::Close(Some(CloseFrame { code, reason })) => {
                return (u16::from(code), reason.to_string());
            }
            Message::Close(None) => panic!("closed without a code"),
            _ => {}
        }
    }
}

/// Send a `message` frame.
pub(crate) async fn say(ws: &mut Ws, id: &str, text: &str) {
    let frame = json!({"type": "message", "id": id, "text": text});
    ws.send(Message::Text(frame.to_string().into()))
        .await
        .unwrap();
}
