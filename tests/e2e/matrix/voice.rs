//! A spoken answer on Matrix (a real Synapse, an encrypted direct room): the text as
//! always, then `m.audio` with the voice flag, its duration and waveform, uploaded
//! encrypted, whose bytes are the Ogg/Opus note.

use matrix_sdk::media::{MediaFormat, MediaRequestParameters};
use matrix_sdk::ruma::events::room::MediaSource;
use serde_json::Value;
use switchboard_standins::speech::{FakeSpeech, SpeechMode, tone_wav};
use switchboard_standins::{Reply, eventually};

use super::{dm, synapse, wait_bot};
use crate::helpers::WAIT;

#[tokio::test]
async fn with_voice_always_a_matrix_answer_is_its_text_then_a_voice_message() {
    let Some(hs) = synapse() else { return };
    let speech = FakeSpeech::start(SpeechMode::Wav(tone_wav(1_200))).await;
    let url = speech.base_url();
    let t = dm(&hs, true, |_| {
        format!("[voice]\nrule = \"always\"\n[voice.http]\nbase_url = \"{url}\"\n")
    })
    .await;
    let me = t.bot.account.id.clone();
    t.app.llm.push(Reply::text("Spoken and written."));
    t.alice.say(&t.room, "talk to me").await;
    wait_bot(&t.room, &me, |s| {
        s.iter().any(|m| m.text == "Spoken and written.")
    })
    .await;
    let audio: Value = eventually(WAIT, "the bot's voice message", async || {
        let mut options = matrix_sdk::room::MessagesOptions::backward();
        options.limit = 50u32.into();
        let page = t.room.messages(options).await.map_err(|e| e.to_string())?;
        page.chunk
            .iter()
            .filter_map(|e| e.raw().deserialize_as::<Value>().ok())
            .find(|e| e["sender"] == me.as_str() && e["content"]["msgtype"] == "m.audio")
            .ok_or_else(|| "no m.audio yet".to_owned())
    })
    .await;
    let content = &audio["content"];
    assert!(
        content.get("org.matrix.msc3245.voice").is_some(),
        "{content}"
    );
    assert_eq!(content["info"]["duration"], 1200, "{content}");
    assert_eq!(content["info"]["mimetype"], "audio/ogg", "{content}");
    let details = &content["org.matrix.msc1767.audio"];
    assert_eq!(details["duration"], 1200, "{content}");
    assert_eq!(
        details["waveform"].as_array().map(Vec::len),
        Some(12),
        "{content}"
    );
    let source = MediaSource::Encrypted(Box::new(
        serde_json::from_value(content["file"].clone()).expect("uploaded encrypted"),
    ));
    let request = MediaRequestParameters {
        source,
        format: MediaFormat::File,
    };
    let bytes = t
        .alice
        .client
        .media()
        .get_media_content(&request, false)
        .await
        .unwrap();
    assert!(bytes.starts_with(b"OggS"), "the note is Ogg/Opus");
}
