//! The built-in web chat through the whole gateway: the real channel built from config,
//! the real inbox and drafts, the fake LLM. `socket` drives the WebSocket protocol directly;
//! `browser` drives the page in headless Chromium.

mod browser;
mod browser_files;
mod files;
mod first_hour;
mod first_run;
mod host;
mod socket;
mod transcript;

use std::net::SocketAddr;
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
