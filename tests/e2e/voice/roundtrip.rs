//! Both directions through real engines (`tests/speech/server.py`): a person's voice note,
//! spoken by espeak-ng and encoded by Debian's `opusenc`, reaches the model as text through
//! `[transcription]` pointed at pocketsphinx; the bot's answer, spoken by espeak-ng (as the
//! sandboxed local command, and again behind `/audio/speech`) and sent as a Telegram voice
//! note, is valid Ogg/Opus to `opusinfo`, lasts what `sendVoice` was told, and is heard by
//! the same recogniser with at least two of its three key words. Both engines are pinned
//! (Debian's espeak-ng, `tests/speech/requirements.txt`): their transcripts are deterministic.
//! Without the engines each test says SKIPPED; `SWITCHBOARD_REQUIRE_SPEECH=1` makes that a
//! failure.

use switchboard::config::VoiceRule;
use switchboard_standins::Reply;
use switchboard_standins::speech::{RealSpeech, opusinfo, opusinfo_duration_ms, spoken_voice_note};
use switchboard_standins::telegram::UserMessage;

use super::telegram::{alice, spawn, voice_notes, wait_messages};
use super::{command_voice, http_voice};
use crate::attach::request_text;
use crate::helpers::wait_inbox_idle;

/// What the person says, and the words the recogniser must hear of it.
const QUESTION: &str = "please remind me to buy milk tomorrow morning";
/// The bot's answer, and its three key words.
const ANSWER: &str = "The meeting starts at **seven** in the evening.";
const KEY_WORDS: [&str; 3] = ["meeting", "seven", "evening"];

/// The round trip with `voice` as the engine (`speech` is the real server).
async fn round_trip(speech: &RealSpeech, voice: switchboard::config::VoiceConfig) {
    let app = spawn(&speech.base_url(), "", voice).await;
    let (tg, llm) = (app.telegram(), &app.llm);
    let note = spoken_voice_note(QUESTION);
    let id = tg.add_file("voice.ogg", &note);
    llm.push(Reply::text(ANSWER));
    tg.inject(&UserMessage::private(alice(), "").with_voice(&id, note.len()));
    wait_messages(tg, |t| t.iter().any(|m| m.ends_with("evening."))).await;
    wait_inbox_idle(&app.store()).await;

    let asked = request_text(&app.llm.requests(), 0);
    for word in ["remind", "milk", "tomorrow"] {
        assert!(asked.contains(word), "the model read {asked:?}");
    }
    let notes = voice_notes(tg);
    assert_eq!(notes.len(), 1, "one voice note beside the text");
    let report = opusinfo(&notes[0].bytes).unwrap_or_else(|e| panic!("not valid Ogg/Opus: {e}"));
    let played = opusinfo_duration_ms(&report).expect("opusinfo reports a playback length");
    let told = notes[0].duration.expect("sendVoice carries a duration");
    assert_eq!(
        i64::try_from(played.div_ceil(1000)).unwrap(),
        told,
        "Telegram was told the length it plays: {report}"
    );
    let heard = speech.transcribe(&notes[0].bytes).await;
    let caught = KEY_WORDS.iter().filter(|w| heard.contains(*w)).count();
    assert!(caught >= 2, "the recogniser heard {heard:?}");
    app.shutdown().await;
}

#[tokio::test]
async fn a_spoken_question_reaches_the_model_and_the_local_engines_spoken_answer_is_heard_again() {
    let Some(speech) = RealSpeech::start() else {
        return;
    };
    let espeak = "espeak-ng -v en-us -s 150 --stdout";
    round_trip(&speech, command_voice(espeak, VoiceRule::WhenSpokenTo)).await;
}

#[tokio::test]
async fn a_spoken_question_reaches_the_model_and_the_http_engines_spoken_answer_is_heard_again() {
    let Some(speech) = RealSpeech::start() else {
        return;
    };
    let voice = http_voice(&speech.base_url(), VoiceRule::WhenSpokenTo, 30);
    round_trip(&speech, voice).await;
}
