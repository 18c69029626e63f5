//! Voice answers on Discord (stand-in): a voice message (flag `IS_VOICE_MESSAGE`, its
//! duration and waveform, no content, as Discord requires) after the text, which goes as a
//! message of its own.

use base64::Engine as _;
use switchboard::config::VoiceRule;
use switchboard_standins::discord::{FakeUser, IncomingMessage};
use switchboard_standins::speech::{FakeSpeech, SpeechMode, tone_wav};
use switchboard_standins::{Reply, eventually};

use super::http_voice;
use crate::app::{Table, TestApp};
use crate::helpers::{WAIT, wait_inbox_idle};

const DM: &str = "1200000000000000001";

#[tokio::test]
async fn with_voice_always_a_discord_answer_is_its_text_then_a_voice_message_with_a_waveform() {
    let speech = FakeSpeech::start(SpeechMode::Wav(tone_wav(1_700))).await;
    let voice = http_voice(&speech.base_url(), VoiceRule::Always, 5);
    let app = TestApp::builder()
        .discord(Table::open())
        .edit(move |c| c.voice = Some(voice))
        .start()
        .await;
    let bob = FakeUser::new("1000000000000000042", "bob");
    app.llm.push(Reply::text("Here is the *plan*."));
    app.discord()
        .send_message(&IncomingMessage::dm(DM, &bob, "what is the plan?"));
    let voice_message = eventually(WAIT, "a voice message in the DM", async || {
        let files = app.discord().sent_files();
        files
            .iter()
            .find(|f| f.channel_id == DM && f.voice.is_some())
            .cloned()
            .ok_or(files)
    })
    .await;
    wait_inbox_idle(&app.store()).await;
    let texts: Vec<String> = (app.discord().messages(DM).into_iter())
        .map(|m| m.content)
        .collect();
    assert!(
        texts.iter().any(|t| t == "Here is the *plan*."),
        "{texts:#?}"
    );
    assert_eq!(voice_message.content, "", "a voice message carries no text");
    assert!(voice_message.bytes.starts_with(b"OggS"));
    let (duration, waveform) = voice_message.voice.expect("voice metadata");
    assert!((duration - 1.7).abs() < 0.01, "{duration}");
    let waveform = base64::engine::general_purpose::STANDARD
        .decode(waveform)
        .expect("base64 waveform");
    assert_eq!(waveform.len(), 17, "one value per 100 ms");
    assert!(waveform.contains(&255));
    app.shutdown().await;
}
