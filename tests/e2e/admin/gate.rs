//! Who may open the dashboard and who may act on it: only the token opens it, and an action
//! needs the page's CSRF field and origin besides.

use reqwest::header::{COOKIE, HOST, ORIGIN, SET_COOKIE};
use switchboard::store::PairingRequest;

use super::{act, client, cookie, csrf, get};
use crate::app::TestApp;
use crate::helpers::wall_ms;

fn token(app: &TestApp) -> String {
    super::token(&app.config.gateway.data_dir)
}

#[tokio::test]
async fn a_foreign_host_or_a_proxied_request_is_refused_without_the_token_and_let_in_with_it() {
    let app = TestApp::builder().web("").start().await;
    let url = app.url("/admin/");
    let http = client();
    let rebound = http
        .get(&url)
        .header(HOST, "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(
        rebound.status().as_u16(),
        401,
        "a DNS-rebinding page's Host"
    );
    let proxied = http
        .get(&url)
        .header("x-forwarded-for", "203.0.113.9")
        .send()
        .await
        .unwrap();
    assert_eq!(
        proxied.status().as_u16(),
        401,
        "a request that came through a proxy"
    );
    let page = proxied.text().await.unwrap();
    assert!(page.contains("switchboard admin-token"), "{page}");

    let token = token(&app);
    let web_token = app.config.gateway.data_dir.join("web/web.token");
    assert_ne!(
        std::fs::read_to_string(&web_token).unwrap().trim(),
        token,
        "the web chat's token is another one"
    );
    let with_token = http
        .get(format!("{url}audit?token={token}"))
        .header(HOST, "ops.example.com")
        .header("x-forwarded-for", "203.0.113.9")
        .send()
        .await
        .unwrap();
    assert_eq!(
        with_token.status().as_u16(),
        303,
        "the token is traded for a cookie"
    );
    assert_eq!(
        with_token.headers()["location"],
        "/admin/audit",
        "and leaves the address bar"
    );
    let cookie = with_token.headers()[SET_COOKIE]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap().to_owned();
    let page = http
        .get(format!("{url}audit"))
        .header(HOST, "ops.example.com")
        .header("x-forwarded-for", "203.0.113.9")
        .header("cookie", &pair)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status().as_u16(), 200);
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(csp.contains("default-src 'none'") && csp.contains("frame-ancestors 'none'"));
    let body = page.text().await.unwrap();
    assert!(body.contains("<h1>Audit log</h1>"), "{body}");
    assert!(!body.contains(&token), "the page never shows its token");
    let wrong = http
        .get(format!("{url}?token=not-the-token-0000000000"))
        .header(HOST, "ops.example.com")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status().as_u16(), 401);
    app.shutdown().await;
}

#[tokio::test]
async fn a_csrf_attempt_from_another_origin_is_refused_and_the_pages_own_form_acts() {
    let app = TestApp::spawn().await;
    let now = wall_ms();
    let request = PairingRequest {
        channel: "fake".into(),
        user_id: "u-stranger".into(),
        user_name: None,
        code: "ABCD2345".into(),
        created_at: now,
        expires_at: now + 3_600_000,
    };
    app.store().request_pairing(&request, 10).await.unwrap();
    let csrf = csrf(&app).await;
    let form = [
        ("csrf", csrf.as_str()),
        ("channel", "fake"),
        ("code", "ABCD2345"),
    ];
    let forged = client()
        .post(app.url("/admin/access/allow"))
        .header(COOKIE, cookie(&app.config.gateway.data_dir))
        .header(ORIGIN, "https://evil.example")
        .form(&form)
        .send()
        .await
        .unwrap();
    assert_eq!(
        forged.status().as_u16(),
        403,
        "another origin, even with the field"
    );
    let without = [("csrf", "0000"), ("channel", "fake"), ("code", "ABCD2345")];
    assert_eq!(
        act(&app, "/access/allow", &without).await.0,
        403,
        "without the field"
    );
    let store = app.store();
    assert_eq!(
        store.pairing_requests(wall_ms()).await.unwrap().len(),
        1,
        "still waiting"
    );
    let (status, location) = act(&app, "/access/allow", &form).await;
    assert_eq!(
        (status, location.starts_with("/admin/access?note=")),
        (303, true)
    );
    assert!(store.pairing_requests(wall_ms()).await.unwrap().is_empty());
    let grants = store.grants().await.unwrap();
    assert_eq!(grants[0].user_id, "u-stranger");
    let (_, page) = get(&app, &location["/admin".len()..]).await;
    assert!(page.contains("Allowed u-stranger on fake."), "{page}");
    app.shutdown().await;
}

#[tokio::test]
async fn every_page_is_served_and_a_page_the_admin_path_lacks_is_not() {
    let app = TestApp::spawn().await;
    for (path, title) in switchboard::admin::PAGES {
        let (status, body) = get(&app, path).await;
        assert_eq!(status, 200, "{path}: {body}");
        assert!(
            body.contains(&format!("<h1>{title}</h1>")),
            "{path}: {body}"
        );
    }
    let bare = client().get(app.url("/admin")).send().await.unwrap();
    assert_eq!(bare.status().as_u16(), 308);
    assert_eq!(get(&app, "/nothing-here").await.0, 404);
    app.shutdown().await;
}
