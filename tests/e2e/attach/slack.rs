//! Attachments through the Slack channel: `files` on a message event fetched from
//! `url_private` with the bot token, and `send_file` through the external upload flow.

use serde_json::json;
use switchboard_standins::files::{csv, pdf_with_text, tiny_png};
use switchboard_standins::slack::{SignedRequest, SlackMessage, dm_event};
use switchboard_standins::{Reply, eventually};

use super::{binary_bytes, image_url, png_data_url, request_text};
use crate::app::{Table, TestApp};
use crate::helpers::WAIT;

/// A gateway with a Slack channel open to everyone and a vision model.
async fn spawn(extra: &str) -> TestApp {
    let builder = TestApp::builder().slack(Table::open()).config(extra);
    builder.edit(|c| c.provider.vision = true).start().await
}

async fn post_dm(app: &TestApp, text: &str, files: Vec<serde_json::Value>) {
    let msg = SlackMessage {
        text,
        ..SlackMessage::default()
    };
    let mut event = dm_event(&msg);
    if !files.is_empty() {
        event["event"]["subtype"] = json!("file_share");
        event["event"]["files"] = json!(files);
    }
    let status = app.slack_post("events", SignedRequest::event(&event)).await;
    assert_eq!(status, 200);
}

async fn wait_texts(app: &TestApp, done: impl Fn(&[String]) -> bool) -> Vec<String> {
    eventually(WAIT, "the bot's messages in the DM", async || {
        let texts: Vec<String> = app
            .slack()
            .messages("D0TESTDM")
            .into_iter()
            .map(|m| m.text)
            .collect();
        if done(&texts) { Ok(texts) } else { Err(texts) }
    })
    .await
}

#[tokio::test]
async fn a_csv_shared_in_a_slack_dm_is_fetched_with_the_bot_token_and_read_by_the_model() {
    let app = spawn("").await;
    let file = app.slack().add_file("figures.csv", "text/csv", &csv());
    let path = "inbox/Ev0TEST0001-0-figures.csv";
    app.llm
        .push(Reply::tool_call("file_read", json!({ "path": path })))
        .push(Reply::text("Q2 was best."));
    post_dm(&app, "which quarter was best?", vec![file]).await;
    let texts = wait_texts(&app, |t| t == ["Q2 was best."]).await;
    assert_eq!(texts, ["Q2 was best."]);
    let requests = app.llm.requests();
    assert!(
        request_text(&requests, 0).contains(path),
        "described with its path"
    );
    assert!(
        request_text(&requests, 1).contains("Q2,112"),
        "the model read the CSV"
    );
    assert_eq!(app.slack().file_downloads(), 1);
    app.shutdown().await;
}

#[tokio::test]
async fn a_3_mb_pdf_shared_in_slack_is_saved_and_the_model_reads_its_extracted_text() {
    let app = spawn("").await;
    let pdf = pdf_with_text("Revenue grew twelve percent", 3 * 1024 * 1024);
    let file = app.slack().add_file("report.pdf", "application/pdf", &pdf);
    let text_path = "inbox/Ev0TEST0001-0-report.pdf.txt";
    app.llm
        .push(Reply::tool_call("file_read", json!({ "path": text_path })))
        .push(Reply::text("It says revenue grew."));
    post_dm(&app, "summarise this", vec![file]).await;
    wait_texts(&app, |t| t == ["It says revenue grew."]).await;
    let requests = app.llm.requests();
    let first = request_text(&requests, 0);
    assert!(
        first.contains("report.pdf") && first.contains("3.0 MB") && first.contains(text_path),
        "{first}"
    );
    assert!(
        request_text(&requests, 1).contains("Revenue grew twelve percent"),
        "the PDF's text was read"
    );
    let ws = app.dir().join("workspaces/slack/D0TESTDM");
    let saved = std::fs::read(ws.join(text_path.trim_end_matches(".txt"))).unwrap();
    assert_eq!(saved, pdf, "the PDF was saved byte for byte");
    app.shutdown().await;
}

#[tokio::test]
async fn send_file_uploads_through_the_external_upload_flow_with_the_bytes_intact() {
    let app = spawn("[tools]\nenabled = [\"send_file\"]\n[policy]\nmode = \"autonomous\"\n").await;
    let bytes = binary_bytes();
    let ws = app.dir().join("workspaces/slack/D0TESTDM");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("chart.png"), &bytes).unwrap();
    app.llm
        .push(Reply::tool_call(
            "send_file",
            json!({ "path": "chart.png", "caption": "Your chart" }),
        ))
        .push(Reply::text("Sent."));
    post_dm(&app, "send me the chart", Vec::new()).await;
    wait_texts(&app, |t| t.iter().any(|m| m == "Sent.")).await;
    let uploaded = app.slack().uploaded_files();
    assert_eq!(uploaded.len(), 1, "{uploaded:?}");
    assert_eq!(uploaded[0].bytes, bytes, "every byte arrived");
    assert_eq!(uploaded[0].name, "chart.png");
    assert_eq!(uploaded[0].channel, "D0TESTDM");
    assert_eq!(uploaded[0].initial_comment.as_deref(), Some("Your chart"));
    app.shutdown().await;
}

#[tokio::test]
async fn an_image_shared_in_slack_with_a_caption_reaches_a_vision_model_as_an_image_part() {
    let app = spawn("").await;
    let file = app
        .slack()
        .add_file("screenshot.png", "image/png", &tiny_png());
    app.llm.push(Reply::text("A red dot."));
    post_dm(&app, "what's wrong here?", vec![file]).await;
    wait_texts(&app, |t| t == ["A red dot."]).await;
    let requests = app.llm.requests();
    assert_eq!(image_url(&requests, 0), Some(png_data_url(&tiny_png())));
    assert!(request_text(&requests, 0).contains("what's wrong here?"));
    app.shutdown().await;
}

#[tokio::test]
async fn a_private_file_refused_with_403_gets_one_short_line_and_the_text_is_answered() {
    let app = spawn("").await;
    let file = app.slack().add_file("secret.txt", "text/plain", b"hidden");
    app.slack().forbid_file_downloads();
    app.llm.push(Reply::text("Answered."));
    post_dm(&app, "read it", vec![file]).await;
    let texts = wait_texts(&app, |t| t.len() == 2 && t[1] == "Answered.").await;
    assert!(
        texts[0].contains("secret.txt") && texts[0].contains("refused access"),
        "{texts:?}"
    );
    assert_eq!(texts[1], "Answered.");
    app.shutdown().await;
}
