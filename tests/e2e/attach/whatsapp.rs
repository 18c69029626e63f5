//! Attachments through the WhatsApp channel: media ids in the webhook resolved through the
//! Graph API (`GET /<media-id>`, then the short-lived URL with the token) after the event
//! is stored, and `send_file` as an upload followed by a media message.

use serde_json::json;
use switchboard_standins::Reply;
use switchboard_standins::files::tiny_png;
use switchboard_standins::whatsapp::{Notification, WebhookMessage};

use super::{binary_bytes, inbox_files};
use crate::app::{Table, TestApp};
use crate::helpers::wait_inbox_idle;

const PERSON: &str = "16505551234";

#[tokio::test]
async fn a_voice_note_and_an_image_arrive_as_attachments_saved_in_the_workspace() {
    let builder = TestApp::builder().whatsapp(Table::open());
    let app = builder.edit(|c| c.provider.vision = true).start().await;
    app.whatsapp()
        .add_media("MEDIA.VOICE", "audio/ogg", b"OggS not really opus");
    app.whatsapp()
        .add_media("MEDIA.IMAGE", "image/png", &tiny_png());
    app.llm
        .push(Reply::text("Heard you."))
        .push(Reply::text("Nice picture."));
    let voice = WebhookMessage::voice(PERSON, "wamid.VOICE", "MEDIA.VOICE");
    assert_eq!(app.whatsapp_post(&Notification::message(&voice)).await, 200);
    wait_inbox_idle(&app.store()).await;
    let image = WebhookMessage::image(PERSON, "wamid.IMAGE", "MEDIA.IMAGE", "what is this?");
    assert_eq!(app.whatsapp_post(&Notification::message(&image)).await, 200);
    wait_inbox_idle(&app.store()).await;
    let ws = app.dir().join("workspaces/whatsapp").join(PERSON);
    let files = inbox_files(&ws);
    assert_eq!(files.len(), 2, "{files:?}");
    let saved = |suffix: &str| {
        let name = files
            .iter()
            .find(|f| f.ends_with(suffix))
            .unwrap_or_else(|| panic!("{suffix} in {files:?}"));
        std::fs::read(ws.join("inbox").join(name)).unwrap()
    };
    assert_eq!(saved("voice.ogg"), b"OggS not really opus");
    assert_eq!(saved("image.jpg"), tiny_png());
    app.shutdown().await;
}

#[tokio::test]
async fn send_file_uploads_the_file_then_sends_it_with_the_bytes_intact() {
    let extra = "[tools]\nenabled = [\"send_file\"]\n[policy]\nmode = \"autonomous\"\n";
    let app = TestApp::builder()
        .whatsapp(Table::open())
        .config(extra)
        .start()
        .await;
    let bytes = binary_bytes();
    let ws = app.dir().join("workspaces/whatsapp").join(PERSON);
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("data.bin"), &bytes).unwrap();
    app.llm
        .push(Reply::tool_call(
            "send_file",
            json!({"path": "data.bin", "caption": "Your data"}),
        ))
        .push(Reply::text("Sent."));
    let ask = WebhookMessage::text(PERSON, "wamid.FILE", "send me the data");
    assert_eq!(app.whatsapp_post(&Notification::message(&ask)).await, 200);
    wait_inbox_idle(&app.store()).await;
    let sent = app.whatsapp().sent_to(PERSON);
    let doc = sent
        .iter()
        .find(|s| s.kind == "document")
        .unwrap_or_else(|| panic!("{sent:#?}"));
    assert_eq!(doc.body["document"]["filename"], "data.bin");
    assert_eq!(doc.text(), "Your data");
    let id = doc.body["document"]["id"].as_str().unwrap();
    assert_eq!(
        app.whatsapp().media(id).unwrap().1,
        bytes,
        "every byte arrived"
    );
    assert!(sent.iter().any(|s| s.text() == "Sent."));
    app.shutdown().await;
}
