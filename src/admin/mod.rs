//! The operator's dashboard at `/admin` (`[admin] path`) on the gateway's own listener:
//! server-rendered pages (health, approvals, access, conversations, usage, audit,
//! schedules) with a small script and style of its own (no external assets, a strict CSP),
//! the actions an operator takes (approve or deny a call, allow or refuse a pairing, revoke
//! a grant, stop a turn), and a live stream of what waits. Every page reads the database,
//! so any replica shows every replica's items. Every string shown passes the scrubber; an
//! approval's raw call is never read.
//!
//! An action enters the gateway as an event from [`OPERATOR_USER`] through the same sink
//! as a platform's, so it is stored, deduplicated, decided by the conversation's own turn and
//! audited with the operator as who decided.
//!
//! Layout:
//! - this file: [`Admin`] (what the pages read), the router and its paths, the page frame.
//! - `auth`: who may open it (the token, whatever the peer), the CSRF check on actions.
//! - `token`: the generated token file and `switchboard admin-token`.
//! - `html`: escaping (after the scrubber) and the page frame.
//! - `pages/`: one file per page.
//! - `actions`: the POST handlers.
//! - `live`: the server-sent events stream of pending approvals and pairing requests.

mod actions;
mod auth;
mod html;
mod live;
mod pages;
pub mod token;

use std::sync::Arc;

use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, LOCATION, REFERRER_POLICY, SET_COOKIE,
    X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use switchboard_channel::{EventSink, TokenFile};
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

pub use crate::config::admin::{AdminConfig, PAGES, paths};
pub use auth::Admitted;

use crate::clock::Clock;
use crate::config::Config;
use crate::conversation::Registry;
use crate::doctor::Finding;
use crate::http::HealthState;
pub use crate::ids::OPERATOR_USER;
use crate::scrub::Scrubber;
use crate::store::Store;

/// Scripts, styles and images only from the gateway, events only back to it, forms only
/// to it, and never inside another site's frame.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const ADMIN_JS: &str = include_str!("assets/admin.js");
const ADMIN_CSS: &str = include_str!("assets/admin.css");

/// What the dashboard reads and acts through.
pub struct Admin {
    /// The database every page reads (all replicas' items).
    pub(crate) store: Arc<dyn Store>,
    /// Where actions enter, as events from the operator.
    pub(crate) sink: Arc<dyn EventSink>,
    /// Channels, metrics, sandbox and MCP, as `/readyz` sees them.
    pub(crate) health: HealthState,
    /// The live conversations of this replica, and the scheduling service.
    pub(crate) registry: Arc<Registry>,
    /// Every text shown passes it.
    pub(crate) scrubber: Arc<Scrubber>,
    /// "Now", for ages, expiries and the usage chart's days.
    pub(crate) clock: Clock,
    /// `[admin]`.
    pub(crate) settings: AdminConfig,
    /// `<data_dir>/admin.token`, read per request.
    pub(crate) token_file: TokenFile,
    /// The config, for the doctor's findings.
    config: Config,
    /// Cancelled when the gateway stops: live streams end then.
    pub(crate) closing: CancellationToken,
    /// The doctor's findings, made at the first view of the health page (they probe the
    /// sandbox, which takes an exec).
    findings: OnceCell<Vec<Finding>>,
}

impl Admin {
    /// The dashboard of a gateway whose parts these are.
    pub fn new(
        config: &Config,
        health: HealthState,
        registry: Arc<Registry>,
        sink: Arc<dyn EventSink>,
        clock: Clock,
        closing: CancellationToken,
    ) -> Arc<Self> {
        Arc::new(Self {
            store: Arc::clone(&health.store),
            sink,
            registry,
            scrubber: Arc::new(config.scrubber()),
            clock,
            settings: config.admin.clone(),
            token_file: token::token_file(&config.gateway.data_dir),
            config: config.clone(),
            findings: OnceCell::new(),
            closing,
            health,
        })
    }

    /// `/admin` (the base path).
    pub(crate) fn base(&self) -> String {
        self.settings.base()
    }

    /// The doctor's findings for this deployment (computed once).
    pub(crate) async fn findings(&self) -> &[Finding] {
        self.findings
            .get_or_init(|| async {
                let config = self.config.clone();
                tokio::task::spawn_blocking(move || crate::doctor::config_findings(&config))
                    .await
                    .unwrap_or_default()
            })
            .await
    }

    /// Let the request in (see `auth`), or the refusal.
    #[expect(
        clippy::result_large_err,
        reason = "the refusal is built only for a refused request and sent at once"
    )]
    fn gate(&self, headers: &HeaderMap, query_token: Option<&str>) -> Result<Admitted, Response> {
        let knock = auth::Knock {
            headers,
            query_token,
        };
        auth::admit(&knock, &self.token_file)
    }
}

/// The dashboard's routes, with full paths so the gateway merges them at its root.
pub fn router(admin: Arc<Admin>) -> Router {
    let base = admin.base();
    let mut router = Router::new().route(&base, get(to_base));
    for (path, _) in PAGES {
        router = router.route(&format!("{base}{path}"), get(page));
    }
    router
        .route(&format!("{base}/admin.js"), get(script))
        .route(&format!("{base}/admin.css"), get(style))
        .route(&format!("{base}/events"), get(live::events))
        .route(&format!("{base}/approvals/decide"), post(actions::decide))
        .route(&format!("{base}/access/allow"), post(actions::allow))
        .route(&format!("{base}/access/refuse"), post(actions::refuse))
        .route(&format!("{base}/access/revoke"), post(actions::revoke))
        .route(&format!("{base}/conversations/stop"), post(actions::stop))
        .with_state(admin)
}

/// Query parameters any page may carry: the token once, a note after an action, the audit
/// log's filters and page, the chart's span.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct PageQuery {
    pub token: Option<String>,
    pub note: Option<String>,
    pub tool: Option<String>,
    pub decision: Option<String>,
    pub who: Option<String>,
    pub page: Option<usize>,
    pub days: Option<i64>,
}

async fn page(
    State(admin): State<Arc<Admin>>,
    headers: HeaderMap,
    uri: Uri,
    query: Result<Query<PageQuery>, QueryRejection>,
) -> Response {
    let query = query.map(|Query(q)| q).unwrap_or_default();
    let admitted = match admin.gate(&headers, query.token.as_deref()) {
        Ok(admitted) => admitted,
        Err(refused) => return refused,
    };
    if admitted == Admitted::TokenInQuery {
        // Trade the token in the address bar (history, Referer) for a cookie.
        let token = query.token.as_deref().unwrap_or_default().trim();
        let cookie = auth::token_cookie(token, &admin.base(), &headers);
        let mut response =
            (StatusCode::SEE_OTHER, [(LOCATION, uri.path().to_owned())]).into_response();
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            response.headers_mut().insert(SET_COOKIE, value);
        }
        return response;
    }
    let Some(csrf) = auth::csrf_token(&admin.token_file) else {
        let text = "the dashboard's token file cannot be read; see the gateway's log";
        return (StatusCode::SERVICE_UNAVAILABLE, text).into_response();
    };
    let sub = uri.path().strip_prefix(&admin.base()).unwrap_or("/");
    let Some(&(path, title)) = PAGES.iter().find(|(p, _)| *p == sub) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let body = match pages::render(&admin, path, &query, &csrf).await {
        Ok(body) => body,
        Err(err) => {
            let trace = uuid::Uuid::new_v4().simple().to_string();
            tracing::error!(trace = &trace[..8], error = %format!("{err:#}"), "dashboard page failed");
            let text = format!(
                "This page could not be read (trace {}); see the gateway's log.",
                &trace[..8]
            );
            html::text_only(&admin.scrubber, &text)
        }
    };
    let frame = html::frame(&admin, (title, path), &csrf, query.note.as_deref(), &body);
    html_response(frame)
}

/// A page with the dashboard's security headers.
fn html_response(body: String) -> Response {
    let mut response = ([(CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response();
    let h = response.headers_mut();
    h.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // `same-origin`, not `no-referrer`: under the latter a browser sends `Origin: null` with
    // the page's own forms, which the CSRF check could not tell from a sandboxed frame's.
    h.insert(REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

async fn to_base(State(admin): State<Arc<Admin>>, uri: Uri) -> Response {
    let query = uri.query().map(|q| format!("?{q}")).unwrap_or_default();
    let to = format!("{}/{query}", admin.base());
    (StatusCode::PERMANENT_REDIRECT, [(LOCATION, to)]).into_response()
}

async fn script() -> Response {
    asset(ADMIN_JS, "text/javascript; charset=utf-8")
}

async fn style() -> Response {
    asset(ADMIN_CSS, "text/css; charset=utf-8")
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    (
        [
            (CONTENT_TYPE, content_type),
            (X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}
