//! Attachments through the Discord channel: message attachments fetched from their CDN URL,
//! and `send_file` as a multipart message post.

use serde_json::json;
use switchboard_standins::discord::{FakeUser, IncomingMessage};
use switchboard_standins::files::{csv, pdf_with_text, tiny_png};
use switchboard_standins::{Reply, eventually};

use super::{binary_bytes, image_url, png_data_url, request_text};
use crate::app::{Table, TestApp};
use crate::helpers::WAIT;

const DM: &str = "1200000000000000001";

/// A gateway with a Discord channel open to everyone and a vision model.
async fn spawn(extra: &str) -> TestApp {
    let builder = TestApp::builder().discord(Table::open()).config(extra);
    builder.edit(|c| c.provider.vision = true).start().await
}

fn bob() -> FakeUser {
    FakeUser::new("1000000000000000042", "bob")
}

async fn wait_texts(app: &TestApp, done: impl Fn(&[String]) -> bool) -> Vec<String> {
    eventually(WAIT, "the bot's messages in the DM", async || {
        let texts: Vec<String> = app
            .discord()
            .messages(DM)
            .into_iter()
            .map(|m| m.content)
            .collect();
        if done(&texts) { Ok(texts) } else { Err(texts) }
    })
    .await
}

#[tokio::test]
async fn a_csv_attached_in_a_discord_dm_is_fetched_from_its_url_and_read_by_the_model() {
    let app = spawn("").await;
    let file = app.discord().add_file("figures.csv", "text/csv", &csv());
    let id = app
        .discord()
        .send_message(&IncomingMessage::dm(DM, &bob(), "which quarter?").with_attachment(file));
    let path = format!("inbox/m{id}-0-figures.csv");
    app.llm
        .push(Reply::tool_call("file_read", json!({ "path": path })))
        .push(Reply::text("Q2."));
    wait_texts(&app, |t| t == ["Q2."]).await;
    let requests = app.llm.requests();
    let (first, second) = (request_text(&requests, 0), request_text(&requests, 1));
    assert!(first.contains(&path), "described with its path: {first}");
    assert!(
        second.contains("Q2,112"),
        "the model read the CSV: {second}"
    );
    assert_eq!(app.discord().cdn_downloads(), 1, "downloads from the CDN");
    app.shutdown().await;
}

#[tokio::test]
async fn a_3_mb_pdf_attached_on_discord_is_saved_and_the_model_reads_its_extracted_text() {
    let app = spawn("").await;
    let pdf = pdf_with_text("Revenue grew twelve percent", 3 * 1024 * 1024);
    let file = app
        .discord()
        .add_file("report.pdf", "application/pdf", &pdf);
    let id = app
        .discord()
        .send_message(&IncomingMessage::dm(DM, &bob(), "summarise this").with_attachment(file));
    let text_path = format!("inbox/m{id}-0-report.pdf.txt");
    app.llm
        .push(Reply::tool_call("file_read", json!({ "path": text_path })))
        .push(Reply::text("It says revenue grew."));
    wait_texts(&app, |t| t == ["It says revenue grew."]).await;
    let requests = app.llm.requests();
    let first = request_text(&requests, 0);
    assert!(
        first.contains("report.pdf") && first.contains("3.0 MB") && first.contains(&text_path),
        "{first}"
    );
    assert!(
        request_text(&requests, 1).contains("Revenue grew twelve percent"),
        "the PDF's text was read"
    );
    let ws = app.dir().join(format!("workspaces/discord/{DM}"));
    let saved = std::fs::read(ws.join(text_path.trim_end_matches(".txt"))).unwrap();
    assert_eq!(saved, pdf, "the PDF was saved byte for byte");
    app.shutdown().await;
}

#[tokio::test]
async fn send_file_posts_a_multipart_attachment_with_the_bytes_intact() {
    let app = spawn("[tools]\nenabled = [\"send_file\"]\n[policy]\nmode = \"autonomous\"\n").await;
    let bytes = binary_bytes();
    let ws = app.dir().join(format!("workspaces/discord/{DM}"));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("report.bin"), &bytes).unwrap();
    app.llm
        .push(Reply::tool_call(
            "send_file",
            json!({ "path": "report.bin", "caption": "Here it is" }),
        ))
        .push(Reply::text("Sent."));
    app.discord()
        .send_message(&IncomingMessage::dm(DM, &bob(), "send the report"));
    let sent = eventually(WAIT, "a file posted", async || {
        let sent = app.discord().sent_files();
        if sent.is_empty() { Err(()) } else { Ok(sent) }
    })
    .await;
    assert_eq!(sent[0].bytes, bytes, "every byte arrived");
    assert_eq!(
        (sent[0].name.as_str(), sent[0].content.as_str()),
        ("report.bin", "Here it is")
    );
    assert_eq!(sent[0].channel_id, DM);
    app.shutdown().await;
}

#[tokio::test]
async fn an_image_attached_on_discord_with_a_caption_reaches_a_vision_model_as_an_image_part() {
    let app = spawn("").await;
    let file = app
        .discord()
        .add_file("screenshot.png", "image/png", &tiny_png());
    app.llm.push(Reply::text("A red dot."));
    app.discord()
        .send_message(&IncomingMessage::dm(DM, &bob(), "what is this?").with_attachment(file));
    wait_texts(&app, |t| t == ["A red dot."]).await;
    let requests = app.llm.requests();
    assert_eq!(image_url(&requests, 0), Some(png_data_url(&tiny_png())));
    assert!(request_text(&requests, 0).contains("what is this?"));
    app.shutdown().await;
}
