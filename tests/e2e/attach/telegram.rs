//! Attachments through the real Telegram client against the fake Bot API (`getFile` and the
//! `/file/bot<token>/<path>` download route).

use serde_json::json;
use switchboard::config::{EnvString, Secret, TranscriptionConfig};
use switchboard_standins::files::{csv, pdf_with_text, tiny_png};
use switchboard_standins::telegram::{DownloadMode, FakeTelegram, FakeUser, SentFile, UserMessage};
use switchboard_standins::transcribe::{FAKE_TRANSCRIPTION_KEY, FakeTranscriber};
use switchboard_standins::{Reply, eventually};

use super::{binary_bytes, image_url, inbox_files, png_data_url, request_text};
use crate::app::{Table, TestApp};
use crate::helpers::{WAIT, wait_inbox_idle};

pub(super) const ALICE: i64 = 1001;

pub(super) fn alice() -> FakeUser {
    FakeUser::human(1001, "alice")
}

/// A gateway with a Telegram channel open to Alice's DMs.
async fn spawn() -> TestApp {
    TestApp::builder().telegram(Table::open()).start().await
}

/// Alice's conversation workspace.
pub(super) fn workspace(app: &TestApp) -> std::path::PathBuf {
    app.dir().join("workspaces/telegram/1001")
}

/// Wait until the bot's visible messages to Alice satisfy `done`.
pub(super) async fn wait_messages(
    tg: &FakeTelegram,
    done: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    eventually(WAIT, "the bot's messages to Alice", async || {
        let texts: Vec<String> = tg
            .messages(ALICE)
            .into_iter()
            .filter(|m| !m.deleted)
            .map(|m| m.text)
            .collect();
        if done(&texts) { Ok(texts) } else { Err(texts) }
    })
    .await
}

#[tokio::test]
async fn a_csv_and_a_3_mb_pdf_land_in_the_workspace_and_the_model_reads_both() {
    let app = spawn().await;
    let (tg, llm) = (app.telegram(), &app.llm);
    let pdf = pdf_with_text("Revenue grew twelve percent", 3 * 1024 * 1024);
    assert!(pdf.len() >= 3 * 1024 * 1024);

    let csv_id = tg.add_file("figures.csv", &csv());
    let sent = tg.inject(&UserMessage::private(alice(), "sum these").with_document(
        &csv_id,
        "figures.csv",
        "text/csv",
        csv().len(),
    ));
    let csv_path = format!("inbox/u{}-0-figures.csv", sent.update_id);
    llm.push(Reply::tool_call("file_read", json!({ "path": csv_path })))
        .push(Reply::text("The total is 309."));
    wait_messages(tg, |t| t.iter().any(|m| m.contains("309"))).await;

    let pdf_id = tg.add_file("report.pdf", &pdf);
    let sent = tg.inject(&UserMessage::private(alice(), "").with_document(
        &pdf_id,
        "report.pdf",
        "application/pdf",
        pdf.len(),
    ));
    let text_path = format!("inbox/u{}-0-report.pdf.txt", sent.update_id);
    llm.push(Reply::tool_call("file_read", json!({ "path": text_path })))
        .push(Reply::text("It says revenue grew."));
    wait_messages(tg, |t| t.iter().any(|m| m.contains("revenue grew"))).await;

    let requests = llm.requests();
    let first = request_text(&requests, 0);
    assert!(
        first.contains("sum these") && first.contains(&csv_path) && first.contains("text/csv"),
        "{first}"
    );
    assert!(
        request_text(&requests, 1).contains("Q2,112"),
        "the CSV was read"
    );
    let third = request_text(&requests, 2);
    assert!(
        third.contains("report.pdf") && third.contains("3.0 MB") && third.contains(&text_path),
        "{third}"
    );
    assert!(
        request_text(&requests, 3).contains("Revenue grew twelve percent"),
        "the PDF's text was read"
    );
    let saved = std::fs::read(workspace(&app).join(text_path.trim_end_matches(".txt"))).unwrap();
    assert_eq!(saved, pdf, "the PDF was saved byte for byte");
    app.shutdown().await;
}

#[tokio::test]
async fn a_file_over_the_channel_limit_gets_the_refusal_line_and_the_caption_is_still_answered() {
    let table = Table::open().set("max_attachment_bytes", "1000");
    let app = TestApp::builder().telegram(table).start().await;
    let (tg, llm) = (app.telegram(), &app.llm);
    let id = tg.add_file("big.bin", &[7u8; 5000]);
    tg.inject(
        &UserMessage::private(alice(), "what is this?").with_document(
            &id,
            "big.bin",
            "application/octet-stream",
            5000,
        ),
    );
    llm.push(Reply::text("I could not get the file."));
    let texts = wait_messages(tg, |t| t.len() == 2 && t[1] == "I could not get the file.").await;
    assert!(
        texts[0].contains("big.bin") && texts[0].contains("larger than the 1000 B limit"),
        "{texts:?}"
    );
    assert_eq!(texts[1], "I could not get the file.");
    let request = request_text(&llm.requests(), 0);
    assert!(
        request.contains("what is this?") && request.contains("not received"),
        "{request}"
    );
    assert_eq!(tg.downloads(), 0, "nothing over the limit is downloaded");
    assert!(inbox_files(&workspace(&app)).is_empty());
    app.shutdown().await;
}

#[tokio::test]
async fn an_expired_file_and_a_download_cut_midway_each_give_one_short_line_and_the_text_is_answered()
 {
    let app = spawn().await;
    let (tg, llm) = (app.telegram(), &app.llm);
    let gone = tg.add_file("old.txt", b"old");
    tg.expire_file(&gone);
    tg.inject(&UserMessage::private(alice(), "read this").with_document(
        &gone,
        "old.txt",
        "text/plain",
        3,
    ));
    llm.push(Reply::text("Answered anyway."));
    let texts = wait_messages(tg, |t| t.len() == 2 && t[1] == "Answered anyway.").await;
    assert!(
        texts[0].contains("old.txt") && texts[0].contains("no longer has it"),
        "{texts:?}"
    );
    assert_eq!(texts[1], "Answered anyway.");

    tg.set_download_mode(DownloadMode::Cut);
    let cut = tg.add_file("half.txt", &[b'x'; 4096]);
    tg.inject(&UserMessage::private(alice(), "and this").with_document(
        &cut,
        "half.txt",
        "text/plain",
        4096,
    ));
    llm.push(Reply::text("Answered again."));
    let texts = wait_messages(tg, |t| t.len() == 4 && t[3] == "Answered again.").await;
    assert!(
        texts[2].contains("half.txt") && texts[2].contains("midway"),
        "{texts:?}"
    );
    assert_eq!(texts[3], "Answered again.");
    assert!(
        inbox_files(&workspace(&app)).is_empty(),
        "no partial file is left"
    );
    app.shutdown().await;
}

#[tokio::test]
async fn a_restart_between_storing_the_event_and_downloading_the_file_processes_it_once() {
    let held = FakeTelegram::start().await;
    held.set_download_mode(DownloadMode::Hold);
    let builder = TestApp::builder().telegram_standin(held);
    let mut app = builder.telegram(Table::open()).killable().start().await;
    let tg = app.telegram();
    let id = tg.add_file("notes.txt", b"remember the milk");
    tg.inject(&UserMessage::private(alice(), "keep this").with_document(
        &id,
        "notes.txt",
        "text/plain",
        17,
    ));
    eventually(WAIT, "the download to start", async || {
        if tg.downloads() == 0 { Err(()) } else { Ok(()) }
    })
    .await;
    app.kill();
    let (tg, llm) = (app.telegram(), &app.llm);
    assert!(
        llm.requests().is_empty(),
        "the model was not called before the file arrived"
    );
    tg.set_download_mode(DownloadMode::Serve);
    llm.push(Reply::text("Kept."));
    app.start().await;
    let (tg, llm) = (app.telegram(), &app.llm);
    wait_messages(tg, |t| t == ["Kept."]).await;
    wait_inbox_idle(&app.store()).await;
    assert_eq!(llm.requests().len(), 1, "one turn");
    let files = inbox_files(&workspace(&app));
    assert_eq!(files.len(), 1, "{files:?}");
    let saved = std::fs::read(workspace(&app).join("inbox").join(&files[0])).unwrap();
    assert_eq!(saved, b"remember the milk");
    app.shutdown().await;
}

/// The model calls `send_file` for `name` (written to the workspace with `bytes`) with
/// `caption`, in a chat with Alice; what the Telegram stand-in received as files.
pub(super) async fn send_file_through_telegram(
    name: &str,
    bytes: &[u8],
    caption: &str,
) -> Vec<SentFile> {
    let extra = "[tools]\nenabled = [\"send_file\"]\n[policy]\nmode = \"autonomous\"\n";
    let mut app = TestApp::builder()
        .telegram(Table::open())
        .config(extra)
        .start()
        .await;
    let (tg, llm) = (app.telegram(), &app.llm);
    std::fs::create_dir_all(workspace(&app)).unwrap();
    std::fs::write(workspace(&app).join(name), bytes).unwrap();
    llm.push(Reply::tool_call(
        "send_file",
        json!({ "path": name, "caption": caption }),
    ))
    .push(Reply::text("Sent it."));
    tg.inject(&UserMessage::private(alice(), "send the file"));
    wait_messages(tg, |t| t.iter().any(|m| m == "Sent it.")).await;
    app.stop().await;
    app.telegram().sent_files()
}

#[tokio::test]
async fn send_file_posts_a_generated_file_as_a_document_with_the_bytes_intact() {
    let bytes = binary_bytes();
    let sent = send_file_through_telegram("patch.bin", &bytes, "The patch").await;
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].method, "sendDocument");
    assert_eq!(sent[0].bytes, bytes, "every byte arrived");
    assert_eq!(
        (sent[0].name.as_str(), sent[0].caption.as_deref()),
        ("patch.bin", Some("The patch"))
    );
}

#[tokio::test]
async fn a_photo_with_a_caption_reaches_a_vision_model_as_an_image_part_and_history_keeps_only_the_reference()
 {
    let builder = TestApp::builder().telegram(Table::open());
    let app = builder.edit(|c| c.provider.vision = true).start().await;
    let (tg, llm) = (app.telegram(), &app.llm);
    let id = tg.add_file("photo.jpg", &tiny_png());
    tg.inject(
        &UserMessage::private(alice(), "what is this?").with_photo_file(&id, tiny_png().len()),
    );
    llm.push(Reply::text("A red dot."));
    wait_messages(tg, |t| t == ["A red dot."]).await;
    tg.inject(&UserMessage::private(alice(), "and now?"));
    llm.push(Reply::text("Still a red dot."));
    wait_messages(tg, |t| t.len() == 2 && t[1] == "Still a red dot.").await;
    let requests = llm.requests();
    assert_eq!(
        image_url(&requests, 0),
        Some(png_data_url(&tiny_png())),
        "sent as an image part"
    );
    assert!(request_text(&requests, 0).contains("what is this?"));
    assert_eq!(
        image_url(&requests, 1),
        None,
        "history keeps the reference, not the bytes"
    );
    assert!(
        request_text(&requests, 1).contains("inbox/"),
        "the stored message names the file"
    );
    app.shutdown().await;
}

#[tokio::test]
async fn a_voice_note_is_transcribed_and_answered_with_its_transcript_heading_the_reply() {
    let stt = FakeTranscriber::start("What is the capital of France?").await;
    let transcription = TranscriptionConfig {
        base_url: EnvString(stt.base_url()),
        model: EnvString("whisper-1".into()),
        api_key: Secret::new(FAKE_TRANSCRIPTION_KEY),
        timeout_secs: 5,
    };
    let builder = TestApp::builder().telegram(Table::open());
    let app = builder
        .edit(|c| c.transcription = Some(transcription))
        .start()
        .await;
    let (tg, llm) = (app.telegram(), &app.llm);
    let audio: Vec<u8> = b"OggS"
        .iter()
        .copied()
        .chain((0..=255u8).cycle().take(3000))
        .collect();
    let id = tg.add_file("voice.ogg", &audio);
    tg.inject(&UserMessage::private(alice(), "").with_voice(&id, audio.len()));
    llm.push(Reply::text("Paris."));
    let texts = wait_messages(tg, |t| t.iter().any(|m| m.ends_with("Paris."))).await;
    assert_eq!(
        texts,
        ["🎤 “What is the capital of France?”\n\nParis."],
        "the transcript heads the reply: one message, not two"
    );
    let heard = stt.received();
    assert_eq!(heard.len(), 1);
    assert_eq!(
        (heard[0].model.as_str(), heard[0].bytes == audio),
        ("whisper-1", true)
    );
    let request = request_text(&llm.requests(), 0);
    assert!(
        request.contains("What is the capital of France?\n\n[Attached voice"),
        "{request}"
    );
    assert!(
        request.contains("voice") && request.contains("inbox/"),
        "{request}"
    );
    app.shutdown().await;
}

#[tokio::test]
async fn without_transcription_a_voice_note_is_saved_and_described() {
    let app = spawn().await;
    let (tg, llm) = (app.telegram(), &app.llm);
    let id = tg.add_file("voice.ogg", b"OggS-not-really");
    tg.inject(&UserMessage::private(alice(), "").with_voice(&id, 15));
    llm.push(Reply::text("I got a voice note."));
    wait_messages(tg, |t| t == ["I got a voice note."]).await;
    let request = request_text(&llm.requests(), 0);
    assert!(
        request.contains("Attached voice") && request.contains("audio/ogg"),
        "{request}"
    );
    assert_eq!(inbox_files(&workspace(&app)).len(), 1);
    app.shutdown().await;
}
