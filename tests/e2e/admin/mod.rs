//! The operator's dashboard (`/admin`) end to end against the real gateway: who may open it
//! (a foreign `Host`, a proxied request, the token), CSRF on actions, an approval pressed on
//! the page, a pairing allowed on the page, every page served, the live stream, and a walk
//! through every page in headless Chromium with screenshots.

mod approvals;
mod browser;
mod gate;
mod live;
mod pairing;

use reqwest::header::{HOST, ORIGIN};

use crate::app::TestApp;

/// A client for the dashboard as a browser on the gateway's host uses it (loopback peer,
/// loopback `Host`, no token), never following redirects so a test sees them.
pub(crate) fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// The page at `path` below `/admin` (status and body), as a local browser.
pub(crate) async fn get(app: &TestApp, path: &str) -> (u16, String) {
    let response = client()
        .get(app.url(&format!("/admin{path}")))
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

/// POST `form` to the action at `path` below `/admin` from the dashboard's own origin;
/// the status and where it redirects.
pub(crate) async fn act(app: &TestApp, path: &str, form: &[(&str, &str)]) -> (u16, String) {
    let origin = format!("http://{}", app.addr());
    let response = client()
        .post(app.url(&format!("/admin{path}")))
        .header(HOST, app.addr().to_string())
        .header(ORIGIN, origin)
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
