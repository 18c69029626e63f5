//! The built-in web chat through the whole gateway: the real channel built from config,
//! the real inbox and drafts, the fake LLM. `socket` drives the WebSocket protocol directly;
//! `browser` drives the page in headless Chromium.

mod browser;
mod browser_files;
mod files;
mod first_hour;
mod first_hour_closed;
mod first_run;
mod first_run_private;
mod host;
mod operator;
mod socket;
mod transcript;
mod voice;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use switchboard::agent::Tool;
use switchboard::config::Config;
use switchboard_channel::ConversationKey;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::app::{Builder, TestApp};
use crate::helpers::WAIT;

/// A client socket.
pub(crate) type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// The web chat's settings for a test: extra `[channels.web]` lines `keys`, and progress
/// lines no more often than every 100 ms.
fn builder(keys: &str) -> Builder {
    let progress = |c: &mut Config| c.streaming.edit_min_interval_ms = 100;
    TestApp::builder().web(keys).edit(progress)
}

/// A gateway with one web channel named `web`, the fake LLM and its own data directory.
async fn spawn(keys: &str) -> TestApp {
    builder(keys).start().await
}

/// Start with extra `[channels.web]` keys and tools offered to the model.
async fn spawn_with(keys: &str, tools: Vec<Arc<dyn Tool>>) -> TestApp {
    tools
        .into_iter()
        .fold(builder(keys), Builder::tool)
        .start()
        .await
}

/// The conversation workspace of browser session `session`.
fn workspace(app: &TestApp, session: &str) -> std::path::PathBuf {
    app.dir().join("workspaces/web").join(session)
}

/// The conversation of browser session `session`.
fn web_key(session: &str) -> ConversationKey {
    ConversationKey::new("web", session)
}

/// A fresh browser session id, as the page's cookie would hold.
pub(crate) fn new_session() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// Where a test's browser reaches the web chat `web`, and the token its cookie holds once
/// the token link was opened (none for a test that passes a token itself, or none at all).
#[derive(Clone, Debug)]
pub(crate) struct Door {
    /// Where the gateway serves HTTP.
    pub addr: SocketAddr,
    token: Option<String>,
}

impl Door {
    /// The web chat of `app`, with the token generated into its data directory.
    pub fn of(app: &TestApp) -> Self {
        Self::at(app.addr(), &app.config.gateway.data_dir)
    }

    /// The web chat at `addr` of a gateway that keeps its data in `data_dir`.
    pub fn at(addr: SocketAddr, data_dir: &Path) -> Self {
        let file = data_dir.join("web/web.token");
        let token =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        Self {
            addr,
            token: Some(token.trim().to_owned()),
        }
    }

    /// At `addr`, with no token in the cookie jar.
    pub fn bare(addr: SocketAddr) -> Self {
        Self { addr, token: None }
    }

    /// The token the link opens the chat with.
    pub fn token(&self) -> &str {
        self.token.as_deref().expect("a door with a token")
    }

    /// The link `switchboard web-token` prints: the page with its token.
    pub fn link(&self) -> String {
        format!("http://{}/?token={}", self.addr, self.token())
    }

    /// The `Cookie` header of a browser that opened the token link, in session `session`
    /// (when it has one).
    pub fn cookie(&self, session: Option<&str>) -> String {
        let token = self.token.as_ref().map(|t| format!("sb_web_token={t}"));
        let session = session.map(|s| format!("sb_web_session={s}"));
        let pairs: Vec<String> = token.into_iter().chain(session).collect();
        pairs.join("; ")
    }
}

/// Open `/ws` as browser session `session`, with `query` (e.g. `?token=…`) appended.
pub(crate) async fn try_connect(
    door: &Door,
    session: &str,
    query: &str,
) -> Result<Ws, tungstenite::Error> {
    let mut request = format!("ws://{}/ws{query}", door.addr)
        .into_client_request()
        .unwrap();
    let cookie = door.cookie(Some(session)).parse().unwrap();
    request.headers_mut().insert("cookie", cookie);
    tokio_tungstenite::connect_async(request)
        .await
        .map(|(ws, _)| ws)
}

/// Connect and read the `sync` frame every socket starts with.
pub(crate) async fn connect(door: &Door, session: &str) -> (Ws, Value) {
    let mut ws = try_connect(door, session, "").await.expect("socket opens");
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
pub(crate) async fn close_frame(ws: &mut Ws) -> (u16, String) {
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
/// Wait for the next message with buttons (an approval prompt) and press its first one.
pub(crate) async fn press_first_button(ws: &mut Ws) {
    let prompt = json_where(ws, |f| {
        f["message"]["buttons"]
            .as_array()
            .is_some_and(|b| !b.is_empty())
    })
    .await;
    let message = &prompt["message"];
    let press = json!({
        "type": "button", "id": "press-1", "message": message["id"],
        "payload": message["buttons"][0]["payload"],
    });
    ws.send(Message::Text(press.to_string().into()))
        .await
        .unwrap();
}

pub(crate) async fn say(ws: &mut Ws, id: &str, text: &str) {
    let frame = json!({"type": "message", "id": id, "text": text});
    ws.send(Message::Text(frame.to_string().into()))
        .await
        .unwrap();
}
