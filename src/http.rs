//! The shared HTTP server: health endpoints, and the mount point where channels put their
//! webhook routes. One body limit for all (413 beyond it), except a channel's upload routes,
//! which keep their own. `/metrics` answers only loopback
//! peers, or anyone with `gateway.metrics_token` when it is set: the counters name
//! channels, tools and traffic, which is nobody else's business.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{ConnectInfo, DefaultBodyLimit, State};
use axum::http::header::AUTHORIZATION;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Json};
use axum::routing::get;
use serde_json::json;
use switchboard_channel::secrets_match;
use tower_http::limit::RequestBodyLimitLayer;

use crate::conversation::{ChannelRoutes, Channels, Registry};
use crate::metrics::Metrics;
use crate::store::Store;

/// What the health routes look at.
#[derive(Clone)]
pub struct HealthState {
    /// The database.
    pub store: Arc<dyn Store>,
    /// Every running channel, as the outbox's handle (health only; no writes).
    pub channels: Channels,
    /// Prometheus metrics.
    pub metrics: Arc<Metrics>,
    /// Live conversations, for the active gauge.
    pub registry: Arc<Registry>,
    /// The tool sandbox, whose posture `/readyz` shows (informational: never gates readiness).
    pub sandbox: Arc<crate::sandbox::Sandbox>,
    /// MCP servers, whose states `/readyz` shows (informational, like the sandbox).
    pub mcp: Option<Arc<crate::mcp::Mcp>>,
    /// `gateway.metrics_token`: when set, every scrape must send it as a bearer token.
    pub metrics_token: Option<String>,
}

/// How long `/readyz` waits for the database to answer before reporting it down, so a
/// probe answers within a second while the database is unreachable.
const DB_PROBE: Duration = Duration::from_millis(800);

pub use crate::config::ROUTES;

/// The gateway's router: [`ROUTES`], plus the channels' webhooks and pages, all under
/// `max_body_bytes`; the channels' upload routes are merged after that limit is layered, so
/// only their own (larger) limit applies to them.
pub fn router(state: HealthState, channels: ChannelRoutes, max_body_bytes: usize) -> Router {
    let mut app = Router::new()
        .route(ROUTES[0], get(healthz))
        .route(ROUTES[1], get(readyz))
        .route(ROUTES[2], get(metrics))
        .with_state(state);
    for routes in channels.limited {
        app = app.merge(routes);
    }
    let mut app = app
        .layer(DefaultBodyLimit::max(max_body_bytes))
        .layer(RequestBodyLimitLayer::new(max_body_bytes));
    for routes in channels.uploads {
        app = app.merge(routes);
    }
    app
}

/// The process is up.
async fn healthz() -> &'static str {
    "ok"
}

/// Whether a scrape from `peer` with `authorization` may read the metrics: with a token
/// configured, only `Bearer <token>` (compared in constant time); without one, only a
/// loopback peer (an IPv4-mapped loopback address counts).
pub fn metrics_allowed(peer: SocketAddr, token: Option<&str>, authorization: Option<&str>) -> bool {
    match token {
        Some(expected) => authorization
            .and_then(|a| a.strip_prefix("Bearer "))
            .is_some_and(|given| secrets_match(expected, given.trim())),
        None => peer.ip().to_canonical().is_loopback(),
    }
}

/// Prometheus text format; gauges read from the store at scrape time.
async fn metrics(
    State(state): State<HealthState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> axum::response::Response {
    let authorization = headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok());
    if !metrics_allowed(peer, state.metrics_token.as_deref(), authorization) {
        let text = "metrics are served to loopback only, or with gateway.metrics_token\n";
        return (StatusCode::FORBIDDEN, text).into_response();
    }
    let m = &state.metrics;
    if let Ok(counts) = state.store.inbox_counts().await {
        m.inbox_pending.set(counts.pending + counts.processing);
    }
    if let Ok(counts) = state.store.approval_counts().await {
        m.approvals_pending.set(counts.pending);
    }
    m.active_conversations.set(state.registry.active() as i64);
    for (provider, bound) in state.registry.deps().agents.profiles().in_flight() {
        let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        m.llm_in_flight
            .with_label_values(&[provider])
            .set(count(bound.in_flight()));
        m.llm_waiting
            .with_label_values(&[provider])
            .set(count(bound.waiting()));
    }
    for (channel, reason, n) in state.channels.undelivered() {
        m.channel_undelivered
            .with_label_values(&[channel.as_str(), reason])
            .set(i64::try_from(n).unwrap_or(i64::MAX));
    }
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        m.render(),
    )
        .into_response()
}

/// The database answers (within [`DB_PROBE`]) and every channel can receive. Nothing is
/// remembered between probes, so readiness returns by itself when the database does.
async fn readyz(State(state): State<HealthState>) -> impl IntoResponse {
    let db = match tokio::time::timeout(DB_PROBE, state.store.ping()).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(err)) => Err(err.to_string()),
        Err(_) => Err(format!("no answer within {} ms", DB_PROBE.as_millis())),
    };
    let mut ready = db.is_ok();
    let mut checks = vec![json!({
        "name": "database",
        "ok": db.is_ok(),
        "detail": db.err().unwrap_or_else(|| "ok".into()),
    })];
    // The start-up probe may still be running: wait for it off the runtime's threads.
    let sandbox = Arc::clone(&state.sandbox);
    let posture = tokio::task::spawn_blocking(move || crate::sandbox::readyz_check(&sandbox));
    checks.push(posture.await.unwrap_or_else(
        |_| json!({"name": "sandbox", "ok": false, "detail": "the posture probe failed"}),
    ));
    checks.extend(state.mcp.iter().flat_map(|m| m.readyz_checks()));
    for (name, health) in state.channels.health() {
        ready &= health.ready;
        let last_ok = health
            .last_ok
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_secs());
        checks.push(json!({
            "name": format!("channel:{name}"),
            "ok": health.ready,
            "detail": health.detail,
            "last_ok_unix": last_ok,
        }));
    }
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(json!({ "ready": ready, "checks": checks })))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(addr: &str) -> SocketAddr {
        addr.parse().unwrap()
    }

    #[test]
    fn without_a_token_only_loopback_peers_may_scrape() {
        assert!(metrics_allowed(peer("127.0.0.1:5000"), None, None));
        assert!(metrics_allowed(peer("127.8.9.10:5000"), None, None));
        assert!(metrics_allowed(peer("[::1]:5000"), None, None));
        assert!(metrics_allowed(peer("[::ffff:127.0.0.1]:5000"), None, None));
        assert!(!metrics_allowed(peer("10.0.0.7:5000"), None, None));
        assert!(!metrics_allowed(
            peer("[2001:db8::1]:5000"),
            None,
            Some("Bearer x")
        ));
    }

    #[test]
    fn with_a_token_every_peer_needs_the_bearer_token() {
        let token = Some("s3cret");
        assert!(metrics_allowed(
            peer("10.0.0.7:5000"),
            token,
            Some("Bearer s3cret")
        ));
        assert!(!metrics_allowed(peer("10.0.0.7:5000"), token, None));
        assert!(!metrics_allowed(
            peer("10.0.0.7:5000"),
            token,
            Some("Bearer s3cres")
        ));
        assert!(!metrics_allowed(
            peer("127.0.0.1:5000"),
            token,
            Some("s3cret")
        ));
    }
}
