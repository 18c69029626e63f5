//! The fake's WebSocket gateway at `/gateway`: HELLO on connect, IDENTIFY → READY, heartbeat
//! → ACK, RESUME → replay of missed dispatches + RESUMED (or INVALID_SESSION), and the
//! dispatches tests inject, numbered by one sequence per session. JSON text frames only: no
//! `compress` query is honoured and payload compression asked in IDENTIFY is not used, which
//! serenity 0.12 accepts (it reads text frames as they are).

use std::sync::Arc;

use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::payloads::ready_json;
use super::world::{Gateway, GatewayOp, Outgoing, Session, Shared};

/// Close code for a refused IDENTIFY token.
const AUTHENTICATION_FAILED: u16 = 4004;
/// Close code for a frame that is not JSON.
const DECODE_ERROR: u16 = 4002;

/// `GET /gateway`: upgrade, unless the gateway is down (503).
pub(crate) async fn upgrade(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    ws: WebSocketUpgrade,
) -> Response {
    {
        let mut world = shared.world();
        world
            .gateway
            .connects
            .push(uri.query().unwrap_or_default().to_owned());
        if world.gateway.down {
            return (StatusCode::SERVICE_UNAVAILABLE, "gateway down").into_response();
        }
    }
    ws.on_upgrade(move |socket| connection(shared, socket))
}

async fn connection(shared: Arc<Shared>, mut socket: WebSocket) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let conn = {
        let mut world = shared.world();
        world.gateway.next_conn += 1;
        world.gateway.next_conn
    };
    let interval = u64::try_from(shared.heartbeat_interval.as_millis()).unwrap_or(u64::MAX);
    let hello = json!({"op": 10, "s": null, "t": null, "d": {"heartbeat_interval": interval}});
    if socket
        .send(Message::Text(hello.to_string().into()))
        .await
        .is_err()
    {
        return;
    }
    loop {
        tokio::select! {
            incoming = socket.recv() => match incoming {
                Some(Ok(Message::Text(text))) => on_frame(&shared, conn, &tx, text.as_str()),
                Some(Ok(Message::Close(_))) => {
                    let _ = socket.send(Message::Close(None)).await;
                    break;
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => break,
            },
            out = rx.recv() => match out {
                Some(Outgoing::Frame(text)) => {
                    if socket.send(Message::Text(text.into())).await.is_err() {
                        break;
                    }
                }
                Some(Outgoing::Close(code)) => {
                    let frame = CloseFrame { code, reason: "".into() };
                    let _ = socket.send(Message::Close(Some(frame))).await;
                    break;
                }
                // Dropping the socket closes TCP with no close frame, as a network failure does.
                Some(Outgoing::Drop) | None => break,
            },
        }
    }
    let mut world = shared.world();
    if world
        .gateway
        .conn
        .as_ref()
        .is_some_and(|(id, _)| *id == conn)
    {
        world.gateway.conn = None;
    }
}

fn on_frame(shared: &Shared, conn: u64, tx: &mpsc::UnboundedSender<Outgoing>, text: &str) {
    let Ok(frame) = serde_json::from_str::<Value>(text) else {
        let _ = tx.send(Outgoing::Close(DECODE_ERROR));
        return;
    };
    let op = frame.get("op").and_then(Value::as_u64).unwrap_or(u64::MAX);
    let d = frame.get("d").cloned().unwrap_or(Value::Null);
    let mut world = shared.world();
    world.gateway.ops.push(GatewayOp {
        op,
        d: d.clone(),
        at: Instant::now(),
    });
    let token_ok = shared.authorized(
        d.get("token")
            .and_then(Value::as_str)
            .map(with_bot_prefix)
            .as_deref(),
    );
    let gateway = &mut world.gateway;
    match op {
        1 => send(tx, json!({"op": 11, "s": null, "t": null, "d": null})),
        2 if !token_ok => {
            let _ = tx.send(Outgoing::Close(AUTHENTICATION_FAILED));
        }
        2 => identify(gateway, conn, tx, &shared.ws_url),
        6 => resume(gateway, conn, tx, &d, token_ok),
        _ => {}
    }
}

/// serenity sends `Bot <token>` in IDENTIFY, Discord's docs the bare token; accept both.
fn with_bot_prefix(token: &str) -> String {
    if token.starts_with("Bot ") {
        token.to_owned()
    } else {
        format!("Bot {token}")
    }
}

fn send(tx: &mpsc::UnboundedSender<Outgoing>, frame: Value) {
    let _ = tx.send(Outgoing::Frame(frame.to_string()));
}

fn identify(gateway: &mut Gateway, conn: u64, tx: &mpsc::UnboundedSender<Outgoing>, ws_url: &str) {
    gateway.sessions_started += 1;
    let id = format!("fake-session-{}", gateway.sessions_started);
    let ready = ready_json(&id, ws_url);
    gateway.session = Some(Session {
        id,
        seq: 0,
        log: Vec::new(),
    });
    gateway.conn = Some((conn, tx.clone()));
    dispatch(gateway, "READY", ready);
    for (t, d) in std::mem::take(&mut gateway.pending) {
        dispatch(gateway, &t, d);
    }
}

fn resume(
    gateway: &mut Gateway,
    conn: u64,
    tx: &mpsc::UnboundedSender<Outgoing>,
    d: &Value,
    token_ok: bool,
) {
    let asked = d.get("session_id").and_then(Value::as_str);
    let seen = d.get("seq").and_then(Value::as_u64).unwrap_or(0);
    let resumable = token_ok
        && gateway
            .session
            .as_ref()
            .is_some_and(|s| Some(s.id.as_str()) == asked);
    if !resumable {
        send(tx, json!({"op": 9, "s": null, "t": null, "d": false}));
        return;
    }
    gateway.conn = Some((conn, tx.clone()));
    if let Some(session) = &gateway.session {
        for (_, frame) in session.log.iter().filter(|(s, _)| *s > seen) {
            let _ = tx.send(Outgoing::Frame(frame.clone()));
        }
    }
    dispatch(gateway, "RESUMED", json!({}));
}

/// Number and send a dispatch on the session (kept for replay); before the first READY it
/// waits in `pending`. Returns its sequence number once it has one.
pub(crate) fn dispatch(gateway: &mut Gateway, t: &str, d: Value) -> Option<u64> {
    let Some(session) = gateway.session.as_mut() else {
        gateway.pending.push((t.to_owned(), d));
        return None;
    };
    session.seq += 1;
    let seq = session.seq;
    let frame = json!({"op": 0, "s": seq, "t": t, "d": d}).to_string();
    session.log.push((seq, frame.clone()));
    if let Some((_, tx)) = &gateway.conn {
        let _ = tx.send(Outgoing::Frame(frame));
    }
    Some(seq)
}
