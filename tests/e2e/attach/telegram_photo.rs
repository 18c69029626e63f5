//! `send_file` with an image on Telegram: posted with `sendPhoto` (shown inline), not
//! `sendDocument`, with its caption and every byte intact.

use serde_json::json;
use switchboard_standins::files::tiny_png;
use switchboard_standins::telegram::{FakeTelegram, UserMessage};
use switchboard_standins::{FakeLlm, Reply};

use super::telegram::{alice, channel_section, start, wait_messages, workspace};
use crate::helpers::test_config;

#[tokio::test]
async fn send_file_posts_an_image_with_send_photo_its_caption_and_the_bytes_intact() {
    let (tg, llm, dir) = (
        FakeTelegram::start().await,
        FakeLlm::start().await,
        tempfile::tempdir().unwrap(),
    );
    let extra = "[tools]\nenabled = [\"send_file\"]\n[policy]\nmode = \"autonomous\"\n";
    let config = test_config(
        &llm.openai_url(),
        dir.path(),
        &format!("{extra}{}", channel_section(&tg, "")),
    );
    let gateway = start(&config).await;
    std::fs::create_dir_all(workspace(&dir)).unwrap();
    std::fs::write(workspace(&dir).join("chart.png"), tiny_png()).unwrap();
    llm.push(Reply::tool_call(
        "send_file",
        json!({ "path": "chart.png", "caption": "Your chart" }),
    ))
    .push(Reply::text("Sent it."));
    tg.inject(&UserMessage::private(alice(), "send the chart"));
    wait_messages(&tg, |t| t.iter().any(|m| m == "Sent it.")).await;
    let sent = tg.sent_files();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].method, "sendPhoto", "an image is shown inline");
    assert_eq!(sent[0].bytes, tiny_png(), "every byte arrived");
    assert_eq!(sent[0].caption.as_deref(), Some("Your chart"));
    assert_eq!(sent[0].chat_id, super::telegram::ALICE);
    gateway.shutdown().await;
}
