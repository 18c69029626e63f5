//! A spoken answer on WhatsApp (stand-in): the text as always, then the Ogg/Opus note
//! uploaded to the media endpoint and sent as audio with `voice: true`.

use switchboard::config::VoiceRule;
use switchboard_standins::Reply;
use switchboard_standins::speech::{FakeSpeech, SpeechMode, tone_wav};
use switchboard_standins::whatsapp::{Notification, WebhookMessage};

use super::http_voice;
use crate::app::{Table, TestApp};
use crate::helpers::wait_inbox_idle;

const PERSON: &str = "16505551234";

#[tokio::test]
async fn with_voice_always_a_whatsapp_answer_is_its_text_then_a_voice_message() {
    let speech = FakeSpeech::start(SpeechMode::Wav(tone_wav(700))).await;
    let voice = http_voice(&speech.base_url(), VoiceRule::Always, 5);
    let app = TestApp::builder()
        .whatsapp(Table::open())
        .edit(move |c| c.voice = Some(voice))
        .start()
        .await;
    app.llm.push(Reply::text("Here you go."));
    let ask = WebhookMessage::text(PERSON, "wamid.VOICE", "say it");
    assert_eq!(app.whatsapp_post(&Notification::message(&ask)).await, 200);
    wait_inbox_idle(&app.store()).await;
    let sent = app.whatsapp().sent_to(PERSON);
    let text = sent.iter().position(|s| s.text() == "Here you go.");
    let audio = sent.iter().position(|s| s.kind == "audio");
    let (Some(text), Some(audio)) = (text, audio) else {
        panic!("{sent:#?}")
    };
    assert!(text < audio, "the text first, then the voice");
    let body = &sent[audio].body["audio"];
    assert_eq!(body["voice"], true, "{body}");
    let id = body["id"].as_str().unwrap();
    let (mime, bytes) = app.whatsapp().media(id).expect("uploaded first");
    assert_eq!(mime, "audio/ogg");
    assert!(bytes.starts_with(b"OggS"));
    app.shutdown().await;
}
