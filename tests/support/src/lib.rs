//! In-process stand-ins for what the tests cannot reach: chat platforms and LLM APIs.
//! Each is a small HTTP (or WebSocket) server on 127.0.0.1:0 speaking the real wire format,
//! including its failure modes, so the real clients are pointed at it by base URL.
//! [`TcpProxy`] sits between the gateway and its database, to take the database away.
//! [`eventually`] is how every test waits for something it cannot be told about. [`mail`]
//! is not a stand-in: it reaches the real mail servers `tests/mail/start` runs.

pub mod discord;
pub mod signal;
pub mod slack;
pub mod telegram;
pub mod whatsapp;

pub mod embeddings;
pub mod fake_channel;
pub mod files;
pub mod headers;
pub mod llm;
pub mod mail;
pub mod multipart;
pub mod proxy;
pub mod sink;
pub mod speech;
pub mod transcribe;
pub mod wait;

pub use fake_channel::{Call, FakeChannel, Op};
pub use llm::{FakeLlm, Protocol, Reply};
pub use proxy::TcpProxy;
pub use sink::RecordingSink;
pub use wait::{Later, eventually, eventually_blocking, eventually_every};

/// `listener` with Nagle's algorithm off on every accepted connection, as real API servers
/// run: otherwise each small write after the first waits for the client's delayed ACK
/// (about 40 ms), e.g. every SSE chunk after the response headers, and a stand-in adds that
/// to whatever is measured through it.
pub fn no_delay(
    listener: tokio::net::TcpListener,
) -> impl axum::serve::Listener<Addr = std::net::SocketAddr> {
    use axum::serve::ListenerExt;
    listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    })
}

/// Serve `app` on 127.0.0.1:0 in the background and return its address.
pub async fn serve(app: axum::Router) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a loopback port");
    let addr = listener.local_addr().expect("local addr");
    tokio::spawn(async move {
        let _ = axum::serve(no_delay(listener), app).await;
    });
    addr
}

/// Serve `app` on `listener` until the returned guard is dropped (the stand-in goes away
/// with the test that owns it).
pub fn serve_until_dropped(
    listener: tokio::net::TcpListener,
    app: axum::Router,
) -> tokio_util::sync::DropGuard {
    let stop = tokio_util::sync::CancellationToken::new();
    let stopped = stop.clone().cancelled_owned();
    tokio::spawn(async move {
        let _ = axum::serve(no_delay(listener), app)
            .with_graceful_shutdown(stopped)
            .await;
    });
    stop.drop_guard()
}
