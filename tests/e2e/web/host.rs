//! DNS rebinding: a page on another site that points its own name at 127.0.0.1 sends that
//! name in `Host`; a public chat (no token) answers only to loopback names and its
//! configured public names.

use tokio_tungstenite::tungstenite::{self, client::IntoClientRequest};

use super::{Door, new_session, spawn};
use crate::app::TestApp;

/// Open the socket naming `host` in `Host` (and the page's origin on that name, as a
/// rebinding page's browser would); the HTTP status of a refusal, or 101 when it connects.
async fn upgrade_with_host(app: &TestApp, host: &str) -> u16 {
    let mut request = format!("ws://{}/ws", app.addr())
        .into_client_request()
        .unwrap();
    let headers = request.headers_mut();
    headers.insert("host", host.parse().unwrap());
    headers.insert("origin", format!("http://{host}").parse().unwrap());
    let cookie = format!("sb_web_session={}", new_session());
    headers.insert("cookie", cookie.parse().unwrap());
    match tokio_tungstenite::connect_async(request).await {
        Ok(_) => 101,
        Err(tungstenite::Error::Http(response)) => response.status().as_u16(),
        Err(other) => panic!("{host}: {other}"),
    }
}

#[tokio::test]
async fn a_websocket_upgrade_naming_a_foreign_host_is_refused_and_loopback_names_connect() {
    let app = spawn("public_hosts = [\"chat.example.com\"]").await;
    let port = app.addr().port();
    assert_eq!(
        upgrade_with_host(&app, &format!("evil.example:{port}")).await,
        403
    );
    assert_eq!(
        upgrade_with_host(&app, &format!("localhost:{port}")).await,
        101
    );
    assert_eq!(
        upgrade_with_host(&app, &format!("127.0.0.1:{port}")).await,
        101
    );
    assert_eq!(upgrade_with_host(&app, "chat.example.com").await, 101);
    let page = reqwest::Client::new()
        .get(format!("http://{}/", app.addr()))
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(page.status().as_u16(), 403, "the page is refused too");
    app.shutdown().await;
}

#[tokio::test]
async fn with_an_access_token_the_token_is_the_gate_whatever_the_host() {
    let app = spawn("access_token = \"s3cret\"").await;
    let mut request = format!("ws://{}/ws?token=s3cret", app.addr())
        .into_client_request()
        .unwrap();
    let headers = request.headers_mut();
    headers.insert("host", "chat.example.net".parse().unwrap());
    let cookie = format!("sb_web_session={}", new_session());
    headers.insert("cookie", cookie.parse().unwrap());
    assert!(tokio_tungstenite::connect_async(request).await.is_ok());
    app.shutdown().await;
}

#[tokio::test]
async fn the_page_names_its_icon_and_the_gateway_serves_it() {
    let app = spawn("").await;
    let http = reqwest::Client::new();
    let cookie = Door::of(&app).cookie(None);
    let page = http.get(app.url("/")).header("cookie", cookie).send().await;
    let page = page.unwrap().text().await.unwrap();
    assert!(page.contains("rel=\"icon\" href=\"favicon.svg\""), "{page}");
    let icon = http
        .get(format!("http://{}/favicon.svg", app.addr()))
        .send()
        .await
        .unwrap();
    assert_eq!(icon.status().as_u16(), 200);
    assert_eq!(icon.headers()["content-type"], "image/svg+xml");
    assert!(icon.text().await.unwrap().starts_with("<svg"));
    app.shutdown().await;
}
