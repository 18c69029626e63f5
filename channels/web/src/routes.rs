//! The channel's HTTP surface under its `path`: the page (`<path>/`), its script and style
//! (embedded in the binary, no build step, no CDN), and the socket (`<path>/ws`). The page
//! sets the session cookie; the socket checks origin, token and session before upgrading
//! ([`admit`], which the upload and download routes in `upload` use too).

use std::sync::Arc;

use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::{Query, State};
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, LOCATION, REFERRER_POLICY, SET_COOKIE,
    X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use switchboard_channel::EventSink;
use tokio_util::sync::CancellationToken;

use crate::auth::{self, COOKIE_MAX_AGE_SECS};
use crate::gate::Expected;
use crate::hub::Hub;
use crate::ids;
use crate::protocol::max_frame_bytes;
use crate::socket;

const INDEX_HTML: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
/// The page's icons, drawn as SVG so the page needs no emoji font on the host.
const ICONS_JS: &str = include_str!("assets/icons.js");
const APP_CSS: &str = include_str!("assets/app.css");
/// The tab's icon, drawn as SVG so it needs no image file; served so the browser's icon
/// request never ends in a 404.
const FAVICON_SVG: &str = include_str!("assets/favicon.svg");

/// Scripts and styles only from the page's own origin, sockets only back to it: even if
/// markup slipped through the renderer, no inline script or foreign resource would run.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   media-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; \
                   frame-ancestors 'none'";

#[derive(Clone)]
struct RouteState {
    hub: Arc<Hub>,
    sink: Arc<dyn EventSink>,
    closing: CancellationToken,
}

/// `?token=` on the page or socket URL.
#[derive(Deserialize)]
pub(crate) struct TokenQuery {
    token: Option<String>,
}

pub(crate) fn query_token(query: Result<Query<TokenQuery>, QueryRejection>) -> Option<String> {
    query.ok().and_then(|Query(q)| q.token)
}

/// Every path the channel mounts under `base`: the page, its script, its style, the socket,
/// the upload and file download routes (mounted by `files_routes`, outside the gateway's
/// body limit), the tab's icon, the icons' script, and (below the root) the path without its slash, which redirects to the page.
pub(crate) fn paths(base: &str) -> Vec<String> {
    let mut paths = vec![
        base.to_owned(),
        format!("{base}app.js"),
        format!("{base}app.css"),
        format!("{base}ws"),
        format!("{base}upload"),
        format!("{base}files/{{id}}"),
        format!("{base}favicon.svg"),
        format!("{base}icons.js"),
    ];
    if base != "/" {
        paths.push(base.trim_end_matches('/').to_owned());
    }
    paths
}

/// The channel's routes, with full paths so the gateway can merge them at its root.
pub(crate) fn router(
    hub: Arc<Hub>,
    sink: Arc<dyn EventSink>,
    closing: CancellationToken,
) -> Router {
    let paths = paths(&hub.config.base());
    let mut router = Router::new()
        .route(&paths[0], get(page))
        .route(&paths[1], get(script))
        .route(&paths[2], get(style))
        .route(&paths[3], get(upgrade))
        .route(&paths[6], get(favicon))
        .route(&paths[7], get(icons));
    if let Some(bare) = paths.get(8) {
        router = router.route(bare, get(to_base));
    }
    router.with_state(RouteState { hub, sink, closing })
}

async fn page(
    State(state): State<RouteState>,
    headers: HeaderMap,
    query: Result<Query<TokenQuery>, QueryRejection>,
) -> Response {
    let hub = &state.hub;
    if let Some(refused) = foreign_host(hub, &headers) {
        return refused;
    }
    let base = hub.config.base();
    let token = query_token(query);
    let expected = hub.gate.expected();
    if !auth::has_token(&expected, token.as_deref(), &headers, &hub.name) {
        return unauthorized_page();
    }
    let secure = is_https(&headers);
    let session = auth::session_from(&headers, &hub.name).unwrap_or_else(ids::new_session_id);
    let mut cookies = vec![cookie(
        &auth::session_cookie(&hub.name),
        &session,
        &base,
        secure,
    )];
    if let (Expected::Token(expected), Some(_)) = (expected, token) {
        // Trade the token in the URL for a cookie, and drop it from the address bar (and
        // from history and Referer headers).
        let value = auth::cookie_safe(&expected);
        cookies.push(cookie(
            &auth::token_cookie(&hub.name),
            &value,
            &base,
            secure,
        ));
        let mut response = (StatusCode::SEE_OTHER, [(LOCATION, base)]).into_response();
        set_cookies(&mut response, cookies);
        return response;
    }
    let mut response = asset(INDEX_HTML, "text/html; charset=utf-8");
    let h = response.headers_mut();
    h.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    set_cookies(&mut response, cookies);
    response
}

/// Without an access token, the refusal for a request whose `Host` is neither loopback nor
/// a configured public name (a DNS-rebinding page); with one, the token is the gate.
fn foreign_host(hub: &Hub, headers: &HeaderMap) -> Option<Response> {
    if !hub.gate.is_open() || auth::host_allowed(headers, &hub.config.public_hosts) {
        return None;
    }
    let text = "This chat has no access token, so it answers only to localhost (or a name in \
                public_hosts).\n";
    Some((StatusCode::FORBIDDEN, text).into_response())
}

fn unauthorized_page() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(CONTENT_TYPE, "text/plain; charset=utf-8")],
        "This chat needs its access token: open the link `switchboard web-token` prints (the \
         gateway's first start printed it on its terminal), or <address>?token=<access_token> \
         when one is configured.\n",
    )
        .into_response()
}

async fn script() -> Response {
    asset(APP_JS, "text/javascript; charset=utf-8")
}

async fn icons() -> Response {
    asset(ICONS_JS, "text/javascript; charset=utf-8")
}

async fn favicon() -> Response {
    asset(FAVICON_SVG, "image/svg+xml")
}

async fn style() -> Response {
    asset(APP_CSS, "text/css; charset=utf-8")
}

async fn to_base(State(state): State<RouteState>) -> Response {
    (
        StatusCode::PERMANENT_REDIRECT,
        [(LOCATION, state.hub.config.base())],
    )
        .into_response()
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

fn cookie(name: &str, value: &str, path: &str, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!(
        "{name}={value}; Path={path}; Max-Age={COOKIE_MAX_AGE_SECS}; HttpOnly; SameSite=Strict{secure}"
    )
}

fn set_cookies(response: &mut Response, cookies: Vec<String>) {
    for value in cookies {
        if let Ok(value) = HeaderValue::from_str(&value) {
            response.headers_mut().append(SET_COOKIE, value);
        }
    }
}

/// Whether a proxy in front says the browser used HTTPS (then cookies are marked Secure).
fn is_https(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("https"))
}

/// The checks every request of a session passes (the socket, an upload, a file download):
/// the `Host` (without a token), the access token, the `Origin`, and the session cookie.
/// `Ok` holds the session id; `Err` the refusal to send.
pub(crate) fn admit(
    hub: &Hub,
    headers: &HeaderMap,
    token: Option<&str>,
) -> Result<String, Box<Response>> {
    if let Some(refused) = foreign_host(hub, headers) {
        return Err(Box::new(refused));
    }
    if !auth::has_token(&hub.gate.expected(), token, headers, &hub.name) {
        let refused = (StatusCode::UNAUTHORIZED, "missing or wrong access token");
        return Err(Box::new(refused.into_response()));
    }
    if !auth::origin_allowed(headers, &hub.config.allowed_origins) {
        return Err(Box::new(
            (StatusCode::FORBIDDEN, "origin not allowed").into_response(),
        ));
    }
    auth::session_from(headers, &hub.name).ok_or_else(|| {
        let refused = (
            StatusCode::BAD_REQUEST,
            "no session cookie: load the chat page first",
        );
        Box::new(refused.into_response())
    })
}

async fn upgrade(
    State(state): State<RouteState>,
    headers: HeaderMap,
    query: Result<Query<TokenQuery>, QueryRejection>,
    ws: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    let hub = &state.hub;
    let session = match admit(hub, &headers, query_token(query).as_deref()) {
        Ok(session) => session,
        Err(refused) => return *refused,
    };
    let ws = match ws {
        Ok(ws) => ws,
        Err(rejection) => return rejection.into_response(),
    };
    // Frames up to twice our own limit reach our check (and get a 1009 with a reason);
    // anything bigger is cut off by the library before it is buffered.
    let hard_limit = max_frame_bytes(hub.config.max_message_chars).saturating_mul(2);
    let (hub, sink, closing) = (Arc::clone(hub), state.sink, state.closing);
    ws.max_message_size(hard_limit)
        .max_frame_size(hard_limit)
        .on_upgrade(move |socket| socket::run(hub, sink, session, closing, socket))
}
