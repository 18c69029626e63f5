//! Attaching files on the page in headless Chromium: a file chosen with the file picker is
//! uploaded, shown as a chip, sent with the next message and reaches the model as a saved
//! workspace file; a file over `max_attachment_bytes` gets the server's refusal line on its
//! chip and in the banner, and is never sent.

use fantoccini::{Client, Locator};
use serde_json::{Value, json};
use switchboard_standins::Reply;
use switchboard_standins::files::csv;

use super::browser::type_and_send;
use super::{Door, spawn};
use crate::attach::request_text;

/// The chips, the banner and the messages, read in one round trip.
const FILES_JS: &str = r#"
const texts = sel => Array.from(document.querySelectorAll(sel), e => e.textContent);
return {
  status: document.getElementById('status').textContent,
  chips: texts('#chips .chip span'),
  uploading: document.querySelectorAll('#chips .chip.uploading').length,
  failed: texts('#chips .chip.failed span'),
  banner: document.getElementById('banner').hidden ? '' : document.getElementById('banner').textContent,
  links: Array.from(document.querySelectorAll('#log .msg.user a.file'), a => a.getAttribute('href')),
  bots: texts('#log .msg.bot .body'),
};
"#;

async fn wait_for(client: &Client, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    crate::browser::wait_for(client, FILES_JS, what, done).await
}

/// Choose `path` in the page's (hidden) file picker.
pub(super) async fn pick(client: &Client, path: &std::path::Path) {
    let picker = client.find(Locator::Css("#file")).await.unwrap();
    picker.send_keys(&path.display().to_string()).await.unwrap();
}

#[tokio::test]
async fn a_file_chosen_with_the_picker_is_uploaded_sent_and_saved_and_one_too_large_is_refused() {
    let app = spawn("max_attachment_bytes = 1000").await;
    let Some(browser) = crate::browser::launch().await else {
        app.shutdown().await;
        return;
    };
    let client = &browser.client;
    let files = tempfile::tempdir().unwrap();
    let (small, big) = (
        files.path().join("figures.csv"),
        files.path().join("big.bin"),
    );
    std::fs::write(&small, csv()).unwrap();
    std::fs::write(&big, vec![7u8; 2000]).unwrap();
    client.goto(&Door::of(&app).link()).await.unwrap();
    wait_for(client, "the socket", |s| s["status"] == "connected").await;

    pick(client, &big).await;
    let refused = wait_for(client, "the refusal", |s| s["failed"] != json!([])).await;
    let line = "File too large: the limit for files here is 1000 B.";
    assert_eq!(refused["failed"], json!([format!("📎 big.bin: {line}")]));
    assert_eq!(refused["banner"], format!("big.bin: {line}"));
    client
        .find(Locator::Css("#chips .chip.failed button"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();

    pick(client, &small).await;
    wait_for(client, "the upload", |s| {
        s["uploading"] == 0 && s["chips"] == json!(["📎 figures.csv"])
    })
    .await;
    app.llm.push(Reply::text("Got the figures."));
    type_and_send(client, "sum these").await;
    let sent = wait_for(client, "the answer", |s| {
        s["bots"] == json!(["Got the figures."])
    })
    .await;
    assert_eq!(sent["chips"], json!([]), "the chips are cleared once sent");
    let links = sent["links"].as_array().unwrap();
    assert_eq!(links.len(), 1, "{sent:#}");
    assert!(links[0].as_str().unwrap().starts_with("files/"));
    let request = request_text(&app.llm.requests(), 0);
    assert!(
        request.contains("sum these")
            && request.contains("figures.csv")
            && request.contains("inbox/"),
        "{request}"
    );
    assert!(
        !request.contains("big.bin"),
        "the refused file was never sent"
    );

    browser.close().await;
    app.shutdown().await;
}
