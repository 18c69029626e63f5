//! Streaming holdback end to end: the LLM stand-in streams credentials two characters at a
//! time, pausing longer than the edit interval so every cut point gets its own edit; no
//! draft edit, first send, final message or stored row shows more than a credential's first
//! 6 characters.

use std::time::Duration;

use switchboard::config::Config;
use switchboard_standins::Reply;

use crate::helpers::{TestApp, key, wait_inbox_idle, wait_transcript};

/// The provider key `test_config` configures: an exact value the scrubber knows.
const CONFIGURED: &str = "test-key-not-real";
/// Token shapes the config does not know.
const SHAPED: &[&str] = &[
    "sk-proj-TESTONLYabcdefghijklmnopqrstuv",
    "xoxb-9999999999-TESTONLYfake",
];

/// Every 7-character window of `secret`: none may appear anywhere.
fn windows(secret: &str) -> Vec<&str> {
    (0..=secret.len() - 7).map(|i| &secret[i..i + 7]).collect()
}

fn assert_nothing_shows_more_than_six(place: &str, texts: &[String]) {
    for secret in std::iter::once(&CONFIGURED).chain(SHAPED) {
        for window in windows(secret) {
            for text in texts {
                assert!(
                    !text.contains(window),
                    "{place} shows {window:?} of {secret:?}: {text:?}"
                );
            }
        }
    }
}

#[tokio::test]
async fn credentials_streamed_two_characters_at_a_time_never_show_more_than_six() {
    let streaming = |c: &mut Config| {
        c.streaming.chunk_min_chars = 1;
        c.streaming.edit_min_interval_ms = 20;
    };
    let app = TestApp::builder().edit(streaming).start().await;
    let (llm, channel, gateway) = (&app.llm, &app.channel, app.gateway());
    let answer = format!(
        "Configured: {CONFIGURED}. OpenAI: {}. Slack: {}. Done.",
        SHAPED[0], SHAPED[1]
    );
    llm.push(Reply::paced(answer, 2, Duration::from_millis(40)));
    let chat = key("holdback");
    channel.say(&chat, "u1", "show me the keys").await.unwrap();

    let transcript = wait_transcript(channel, &chat, |t| {
        t.last().is_some_and(|m| m.ends_with("Done."))
    })
    .await;
    let writes: Vec<String> = channel.writes().into_iter().map(|c| c.text).collect();
    assert!(
        writes.len() > 10,
        "the draft was edited as it grew: {writes:#?}"
    );
    assert_nothing_shows_more_than_six("a draft update", &writes);
    assert_nothing_shows_more_than_six("the final message", &transcript);
    assert!(transcript[0].starts_with("Configured: test*[REDACTED]. OpenAI: sk-p*[REDACTED]"));

    wait_inbox_idle(&gateway.store()).await;
    let history = gateway.store().history(&chat, 10).await.unwrap();
    let stored: Vec<String> = history.into_iter().map(|m| m.content).collect();
    assert_nothing_shows_more_than_six("the stored history", &stored);
    app.shutdown().await;
}
