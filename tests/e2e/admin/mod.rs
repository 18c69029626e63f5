//! The operator's dashboard (`/admin`) end to end against the real gateway: who may open it
//! (only the token: not a loopback peer, a sandboxed tool or a same-host proxy), CSRF on
//! actions, an approval pressed on the page, a pairing allowed on the page, every page
//! served, the live stream, and a walk through every page in headless Chromium with
//! screenshots.

mod approvals;
mod browser;
mod gate;
mod live;
mod loopback;
mod pairing;

use reqwest::header::{COOKIE, HOST, ORIGIN};

use crate::app::TestApp;

/// A client that never follows redirects, so a test sees them; it carries no token.
pub(crate) fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// The dashboard's token, as `<data_dir>/admin.token` holds it.
pub(crate) fn token(data_dir: &std::path::Path) -> String {
    let path = data_dir.join("admin.token");
    std::fs::read_to_string(path).unwrap().trim().to_owned()
}

/// The cookie a browser holds after opening the dashboard's token link.
pub(crate) fn cookie(data_dir: &std::path::Path) -> String {
    format!("sb_admin_token={}", token(data_dir))
}

/// The page at `path` below `/admin` (status and body), as the operator's browser (with
/// the token's cookie) on the gateway's own address.
pub(crate) async fn get(app: &TestApp, path: &str) -> (u16, String) {
    let response = client()
        .get(app.url(&format!("/admin{path}")))
        .header(COOKIE, cookie(&app.config.gateway.data_dir))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// The CSRF field the dashboard's forms carry.
pub(crate) async fn csrf(app: &TestApp) -> String {
    let (status, page) = get(app, "/").await;
    assert_eq!(status, 200, "{page}");
    let marker = "<meta name=\"csrf\" content=\"";
    let at = page.find(marker).expect("every page names its CSRF field") + marker.len();
    page[at..][..page[at..].find('"').unwrap()].to_owned()
}

/// POST `form` to the action at `path` below `/admin` from the dashboard's own origin, as
/// the operator's browser; the status and where it redirects.
pub(crate) async fn act(app: &TestApp, path: &str, form: &[(&str, &str)]) -> (u16, String) {
    let origin = format!("http://{}", app.addr());
    let response = client()
        .post(app.url(&format!("/admin{path}")))
        .header(HOST, app.addr().to_string())
        .header(ORIGIN, origin)
        .header(COOKIE, cookie(&app.config.gateway.data_dir))
        .form(form)
        .send()
        .await
        .unwrap();
    let location = response
        .headers()
        .get("location")
        .map(|l| l.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (response.status().as_u16(), location)
}
