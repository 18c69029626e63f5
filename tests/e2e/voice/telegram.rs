//! Voice answers on Telegram (stand-in) through the speech stand-in: `sendVoice` with a valid
//! Ogg/Opus file and its duration beside the text, only when the person spoke under
//! `when_spoken_to`; an engine that fails leaves the text and logs one WARN; `/voice`
//! switches a conversation; `/usage` counts the characters spoken.

use std::io::Cursor;
use std::time::Duration;

use switchboard::config::{EnvString, Secret, TranscriptionConfig, VoiceConfig, VoiceRule};
use switchboard_standins::speech::{FakeSpeech, SpeechMode, tone_wav};
use switchboard_standins::telegram::{FakeTelegram, FakeUser, SentFile, UserMessage};
use switchboard_standins::transcribe::{FAKE_TRANSCRIPTION_KEY, FakeTranscriber};
use switchboard_standins::{Reply, eventually};

use super::{Logs, http_voice};
use crate::app::{Table, TestApp};
use crate::helpers::{WAIT, wait_inbox_idle};

pub(super) const ALICE: i64 = 1001;

pub(super) fn alice() -> FakeUser {
    FakeUser::human(1001, "alice")
}

/// Wait until the bot's visible messages to Alice satisfy `done`.
pub(super) async fn wait_messages(
    tg: &FakeTelegram,
    done: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    eventually(WAIT, "the bot's messages to Alice", async || {
        let texts: Vec<String> = (tg.messages(ALICE).into_iter())
            .filter(|m| !m.deleted)
            .map(|m| m.text)
            .collect();
        if done(&texts) { Ok(texts) } else { Err(texts) }
    })
    .await
}

/// A gateway on Telegram transcribing through `stt` and speaking as `voice` says.
pub(super) async fn spawn(stt_url: &str, stt_key: &str, voice: VoiceConfig) -> TestApp {
    let transcription = TranscriptionConfig {
        base_url: EnvString(stt_url.to_owned()),
        model: EnvString("whisper-1".into()),
        api_key: Secret::new(stt_key),
        timeout_secs: 5,
    };
    TestApp::builder()
        .telegram(Table::open())
        .edit(move |c| {
            c.transcription = Some(transcription);
            c.voice = Some(voice);
        })
        .start()
        .await
}

/// Alice sends a voice note (its bytes do not matter: the transcriber is a stand-in).
fn send_voice_note(tg: &FakeTelegram) {
    let audio = b"OggS-a-voice-note".to_vec();
    let id = tg.add_file("voice.ogg", &audio);
    tg.inject(&UserMessage::private(alice(), "").with_voice(&id, audio.len()));
}

/// The voice notes the bot sent Alice.
pub(super) fn voice_notes(tg: &FakeTelegram) -> Vec<SentFile> {
    tg.sent_files()
        .into_iter()
        .filter(|f| f.method == "sendVoice" && f.chat_id == ALICE)
        .collect()
}

/// The Ogg/Opus pages' last granule position less the pre-skip: the samples at 48 kHz.
fn opus_samples(ogg: &[u8]) -> u64 {
    let mut reader = ogg::PacketReader::new(Cursor::new(ogg));
    let head = reader
        .read_packet()
        .expect("valid Ogg")
        .expect("a first packet");
    assert!(head.data.starts_with(b"OpusHead"), "an Opus stream");
    let pre_skip = u64::from(u16::from_le_bytes([head.data[10], head.data[11]]));
    let mut last = 0;
    while let Some(packet) = reader.read_packet().expect("valid Ogg") {
        last = packet.absgp_page();
    }
    last - pre_skip
}

#[tokio::test]
async fn a_voice_note_is_answered_by_send_voice_and_the_text_and_a_typed_message_by_text_only() {
    let stt = FakeTranscriber::start("What is the weather like?").await;
    let speech = FakeSpeech::start(SpeechMode::Wav(tone_wav(2_300))).await;
    let voice = http_voice(&speech.base_url(), VoiceRule::WhenSpokenTo, 5);
    let app = spawn(&stt.base_url(), FAKE_TRANSCRIPTION_KEY, voice).await;
    let (tg, llm) = (app.telegram(), &app.llm);

    llm.push(Reply::text(
        "It is **sunny**. See [the forecast](https://example.com).",
    ));
    send_voice_note(tg);
    wait_messages(tg, |t| t.iter().any(|m| m.ends_with("forecast."))).await;
    wait_inbox_idle(&app.store()).await;
    let notes = voice_notes(tg);
    assert_eq!(notes.len(), 1, "one voice note beside the text");
    let note = &notes[0];
    assert_eq!((note.name.as_str(), note.duration), ("voice.ogg", Some(3)));
    // 2.3 s at 48 kHz; resampling from 22 050 Hz may round by a sample.
    assert!(opus_samples(&note.bytes).abs_diff(110_400) <= 2);
    let asked = speech.requests();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["input"], "It is sunny. See the forecast.");
    assert_eq!(asked[0]["response_format"], "wav");

    llm.push(Reply::text("Typed answers stay typed."));
    tg.inject(&UserMessage::private(alice(), "and tomorrow?"));
    wait_messages(tg, |t| t.iter().any(|m| m == "Typed answers stay typed.")).await;
    wait_inbox_idle(&app.store()).await;
    assert_eq!(
        voice_notes(tg).len(),
        1,
        "a typed message is answered by text only"
    );
    assert_eq!(speech.requests().len(), 1);

    tg.inject(&UserMessage::private(alice(), "/usage"));
    let usage = wait_messages(tg, |t| t.iter().any(|m| m.contains("Usage today"))).await;
    let line = format!(
        "spoken here as voice notes: {} characters",
        "It is sunny. See the forecast.".len()
    );
    assert!(usage.iter().any(|m| m.contains(&line)), "{usage:#?}");
    app.shutdown().await;
}

/// Alice's voice note answered while the engine behaves as `mode`: the text arrives whole,
/// no voice note, and the log holds exactly one WARN about it.
async fn engine_failure_leaves_the_text(mode: SpeechMode, timeout_secs: u64) {
    let stt = FakeTranscriber::start("Tell me a story").await;
    let speech = FakeSpeech::start(mode).await;
    let voice = http_voice(&speech.base_url(), VoiceRule::WhenSpokenTo, timeout_secs);
    let app = spawn(&stt.base_url(), FAKE_TRANSCRIPTION_KEY, voice).await;
    // From here on: what the turn logs, not the start-up's own notices.
    let logs = Logs::default();
    let _capture = logs.capture();
    let (tg, llm) = (app.telegram(), &app.llm);
    llm.push(Reply::text("Once upon a time, a gateway answered."));
    send_voice_note(tg);
    let texts = wait_messages(tg, |t| t.iter().any(|m| m.ends_with("answered."))).await;
    wait_inbox_idle(&app.store()).await;
    assert_eq!(
        texts,
        ["🎤 “Tell me a story”\n\nOnce upon a time, a gateway answered."]
    );
    assert!(voice_notes(tg).is_empty(), "never a half-made voice note");
    assert_eq!(speech.requests().len(), 1, "the engine was asked once");
    let warns: Vec<String> = (logs.lines().into_iter())
        .filter(|l| l.contains("WARN"))
        .collect();
    assert_eq!(warns.len(), 1, "{warns:#?}");
    assert!(warns[0].contains("not spoken"), "{warns:#?}");
    app.shutdown().await;
}

#[tokio::test]
async fn a_speech_engine_answering_503_leaves_the_text_answer_and_logs_one_warning() {
    engine_failure_leaves_the_text(SpeechMode::Status(503), 5).await;
}

#[tokio::test]
async fn a_speech_engine_sending_json_instead_of_audio_leaves_the_text_answer_and_logs_one_warning()
{
    engine_failure_leaves_the_text(SpeechMode::NotAudio, 5).await;
}

#[tokio::test]
async fn a_speech_engine_slower_than_its_timeout_leaves_the_text_answer_and_logs_one_warning() {
    let late = SpeechMode::Slow(Duration::from_secs(10), tone_wav(500));
    engine_failure_leaves_the_text(late, 1).await;
}

#[tokio::test]
async fn voice_on_speaks_every_answer_and_voice_off_none_even_for_a_voice_note() {
    let stt = FakeTranscriber::start("Hello there").await;
    let speech = FakeSpeech::start(SpeechMode::Wav(tone_wav(800))).await;
    let voice = http_voice(&speech.base_url(), VoiceRule::WhenSpokenTo, 5);
    let app = spawn(&stt.base_url(), FAKE_TRANSCRIPTION_KEY, voice).await;
    let (tg, llm) = (app.telegram(), &app.llm);

    tg.inject(&UserMessage::private(alice(), "/voice on"));
    wait_messages(tg, |t| {
        t.iter().any(|m| m.contains("I answer with a voice note"))
    })
    .await;
    llm.push(Reply::text("Spoken though typed to."));
    tg.inject(&UserMessage::private(alice(), "hi"));
    wait_messages(tg, |t| t.iter().any(|m| m == "Spoken though typed to.")).await;
    wait_inbox_idle(&app.store()).await;
    assert_eq!(voice_notes(tg).len(), 1);

    tg.inject(&UserMessage::private(alice(), "/voice off"));
    wait_messages(tg, |t| {
        t.iter().any(|m| m.contains("Voice answers are off"))
    })
    .await;
    llm.push(Reply::text("Not spoken though spoken to."));
    send_voice_note(tg);
    wait_messages(tg, |t| {
        t.iter()
            .any(|m| m.ends_with("Not spoken though spoken to."))
    })
    .await;
    wait_inbox_idle(&app.store()).await;
    assert_eq!(voice_notes(tg).len(), 1, "off stays off");

    tg.inject(&UserMessage::private(alice(), "/voice auto"));
    wait_messages(tg, |t| {
        t.iter()
            .any(|m| m.contains("I answer voice notes with a voice note"))
    })
    .await;
    app.shutdown().await;
}
