//! The shared HTTP server: health endpoints, and the mount point where channels put their
//! webhook routes. One body limit for all (413 beyond it).

use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Json};
use axum::routing::get;
use serde_json::json;
use switchboard_channel::Channel;
use tower_http::limit::RequestBodyLimitLayer;

use crate::conversation::Registry;
use crate::metrics::Metrics;
use crate::store::Store;

/// What the health routes look at.
#[derive(Clone)]
pub struct HealthState {
    /// The database.
    pub store: Arc<dyn Store>,
    /// Every running channel.
    pub channels: Vec<Arc<dyn Channel>>,
    /// Prometheus metrics.
    pub metrics: Arc<Metrics>,
    /// Live conversations, for the active gauge.
    pub registry: Arc<Registry>,
    /// The tool sandbox, whose posture `/readyz` shows (informational: never gates readiness).
    pub sandbox: Arc<crate::sandbox::Sandbox>,
}

/// The gateway's own paths; a channel claiming one of them is a config error.
pub const ROUTES: [&str; 3] = ["/healthz", "/readyz", "/metrics"];

/// The gateway's router: [`ROUTES`], plus `extra` (channel webhooks and pages).
pub fn router(state: HealthState, extra: Vec<Router>, max_body_bytes: usize) -> Router {
    let mut app = Router::new()
        .route(ROUTES[0], get(healthz))
        .route(ROUTES[1], get(readyz))
        .route(ROUTES[2], get(metrics))
        .with_state(state);
    for routes in extra {
        app = app.merge(routes);
    }
    app.layer(DefaultBodyLimit::max(max_body_bytes))
        .layer(RequestBodyLimitLayer::new(max_body_bytes))
}

/// The process is up.
async fn healthz() -> &'static str {
    "ok"
}

/// Prometheus text format; gauges read from the store at scrape time.
async fn metrics(State(state): State<HealthState>) -> impl IntoResponse {
    let m = &state.metrics;
    if let Ok(counts) = state.store.inbox_counts().await {
        m.inbox_pending.set(counts.pending + counts.processing);
    }
    if let Ok(counts) = state.store.approval_counts().await {
        m.approvals_pending.set(counts.pending);
    }
    m.active_conversations.set(state.registry.active() as i64);
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        m.render(),
    )
}

/// The database answers and every channel can receive.
async fn readyz(State(state): State<HealthState>) -> impl IntoResponse {
    let db = state.store.ping().await;
    let mut ready = db.is_ok();
    let mut checks = vec![json!({
        "name": "database",
        "ok": db.is_ok(),
        "detail": db.err().map(|e| e.to_string()).unwrap_or_else(|| "ok".into()),
    })];
    checks.push(crate::sandbox::readyz_check(&state.sandbox));
    for channel in &state.channels {
        let health = channel.health();
        ready &= health.ready;
        let last_ok = health
            .last_ok
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_secs());
        checks.push(json!({
            "name": format!("channel:{}", channel.name()),
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
