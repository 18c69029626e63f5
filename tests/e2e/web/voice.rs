//! A spoken answer in the web chat: the text as always, then a message with a player for
//! the Ogg/Opus voice note, served from the session's files to that session.

use switchboard::config::VoiceRule;
use switchboard_standins::Reply;
use switchboard_standins::speech::{FakeSpeech, SpeechMode, tone_wav};

use super::{Door, builder, connect, json_where, new_session, say};
use crate::voice::http_voice;

#[tokio::test]
async fn with_voice_always_the_web_chat_shows_the_text_and_a_player_for_the_voice_note() {
    let speech = FakeSpeech::start(SpeechMode::Wav(tone_wav(900))).await;
    let voice = http_voice(&speech.base_url(), VoiceRule::Always, 5);
    let app = builder("")
        .edit(move |c| c.voice = Some(voice))
        .start()
        .await;
    app.llm.push(Reply::text("Listen to this."));
    let session = new_session();
    let door = Door::of(&app);
    let (mut ws, _) = connect(&door, &session).await;
    say(&mut ws, "m1", "speak to me").await;
    let bot_html = |frame: &serde_json::Value, text: &str| {
        frame["message"]["role"] == "bot"
            && frame["message"]["html"]
                .as_str()
                .is_some_and(|h| h.contains(text))
    };
    json_where(&mut ws, |f| bot_html(f, "Listen to this.")).await;
    let player = json_where(&mut ws, |f| bot_html(f, "<audio class=\"voice\"")).await;
    let html = player["message"]["html"].as_str().unwrap().to_owned();
    let start = html.find("src=\"files/").unwrap() + "src=\"files/".len();
    let id = &html[start..start + 32];
    let response = reqwest::Client::new()
        .get(format!("http://{}/files/{id}", door.addr))
        .header("cookie", door.cookie(Some(&session)))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let bytes = response.bytes().await.unwrap();
    assert!(
        bytes.starts_with(b"OggS"),
        "the player plays the Ogg/Opus note"
    );
    app.shutdown().await;
}
