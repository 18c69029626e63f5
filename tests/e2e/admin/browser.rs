//! The dashboard in headless Chromium against the real gateway: a tool call that asks
//! appears on the open approvals page without a reload (the live stream under the page's
//! strict CSP), every page renders, and Approve pressed in the browser runs the call. A
//! screenshot of every page goes to `target/artifacts/admin-<page>.png`.

use fantoccini::{Client, Locator};
use serde_json::{Value, json};
use switchboard::store::PairingRequest;
use switchboard_standins::{Reply, eventually};

use crate::approvals::{POLICY, buttons_channel, prompt};
use crate::helpers::{TestApp, WAIT, key, wait_transcript, wall_ms};

/// What the page shows, read in one round trip.
const STATE_JS: &str = r#"
return {
  title: (document.querySelector('main h1') || {}).textContent || '',
  approvals: document.querySelectorAll('article.approval').length,
  badge: (document.querySelector('[data-count="approvals"]') || {}).textContent || '',
  live: !!document.querySelector('#live.on'),
  note: (document.querySelector('.note') || {}).textContent || '',
  rows: document.querySelectorAll('main tbody tr').length,
  bars: document.querySelectorAll('svg.chart rect.bar').length,
};
"#;

async fn state(client: &Client) -> Value {
    crate::browser::page_state(client, STATE_JS).await
}

/// Poll the page until `done` holds; returns the state that satisfied it.
async fn wait_for(client: &Client, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    crate::browser::wait_for(client, STATE_JS, what, done).await
}

fn artifact(name: &str) -> std::path::PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/target").into());
    target.join("artifacts").join(format!("admin-{name}.png"))
}

async fn screenshot(client: &Client, name: &str) {
    let png = client.screenshot().await.unwrap();
    let path = artifact(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, png).unwrap();
}

#[tokio::test]
async fn the_dashboard_walks_every_page_shows_a_new_approval_live_and_approves_it() {
    let Some(browser) = crate::browser::launch().await else {
        return;
    };
    let app = TestApp::spawn_on(buttons_channel(), POLICY).await;
    // Something for every page: a finished turn (usage, a conversation), a pairing request.
    app.llm.push(Reply::text("Hello! How can I help?"));
    let chat = key("ops");
    app.channel.say(&chat, "alice", "hello").await.unwrap();
    wait_transcript(&app.channel, &chat, |t| t.len() == 1).await;
    let now = wall_ms();
    let request = PairingRequest {
        channel: "fake".into(),
        user_id: "4711".into(),
        user_name: Some("bob".into()),
        code: "K7PQ2MXA".into(),
        created_at: now,
        expires_at: now + 3_600_000,
    };
    app.store().request_pairing(&request, 10).await.unwrap();

    let client = &browser.client;
    // The token link, as `switchboard admin-token` prints it: traded for a cookie at once.
    let token = super::token(&app.config.gateway.data_dir);
    let link = app.url(&format!("/admin/approvals?token={token}"));
    client.goto(&link).await.unwrap();
    let shown = client.current_url().await.unwrap();
    assert_eq!(
        shown.query(),
        None,
        "the token leaves the address bar: {shown}"
    );
    wait_for(client, "the live stream", |s| s["live"] == json!(true)).await;
    assert_eq!(state(client).await["approvals"], 0);

    app.llm
        .push(Reply::tool_call("shell", json!({"command": "df -h /"})))
        .push(Reply::text("The disk is fine."));
    app.channel
        .say(&chat, "alice", "how full is the disk?")
        .await
        .unwrap();
    prompt(&app.channel, &chat).await;
    let shown = wait_for(client, "the approval without a reload", |s| {
        s["approvals"] == 1
    })
    .await;
    assert_eq!(shown["badge"], "1", "{shown:#}");
    screenshot(client, "approvals").await;

    for (path, title) in switchboard::admin::PAGES {
        client
            .goto(&app.url(&format!("/admin{path}")))
            .await
            .unwrap();
        let s = wait_for(client, title, |s| s["title"] == title).await;
        match path {
            "/usage" => assert!(s["bars"].as_u64() >= Some(14), "{s:#}"),
            "/access" | "/conversations" => assert!(s["rows"].as_u64() >= Some(1), "{s:#}"),
            _ => {}
        }
        let name = if path == "/" { "health" } else { &path[1..] };
        screenshot(client, name).await;
    }

    client.goto(&app.url("/admin/approvals")).await.unwrap();
    // The stream's first event reloads the list, which can replace a button found before it
    // (a stale element): press the button the page shows, once a press lands.
    eventually(
        WAIT,
        "a press on the approval's Approve button",
        async || {
            let approve = client
                .find(Locator::Css("article.approval button.approve"))
                .await
                .map_err(|e| e.to_string())?;
            approve.click().await.map_err(|e| e.to_string())
        },
    )
    .await;
    let after = wait_for(client, "the note", |s| {
        s["note"]
            .as_str()
            .is_some_and(|n| n.starts_with("Approved"))
    })
    .await;
    assert!(
        after["note"].as_str().unwrap().contains("df -h")
            || after["note"].as_str().unwrap().contains("shell")
    );
    wait_transcript(&app.channel, &chat, |t| {
        t.last().is_some_and(|m| m == "The disk is fine.")
    })
    .await;
    wait_for(client, "the approval to leave the page", |s| {
        s["approvals"] == 0
    })
    .await;
    browser.close().await;
    app.shutdown().await;
}
