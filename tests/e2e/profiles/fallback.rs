//! A profile's fallback chain: a provider failing before its first token (429, then 503
//! after its own retry) hands the turn to the next one, which answers; a provider whose
//! stream breaks after the first token does not: the person gets the error line, and the
//! fallback is never asked.

use switchboard::config::{Config, EnvString, ProviderKind};
use switchboard_standins::{FakeLlm, Reply};

use super::request_saying;
use crate::helpers::{TestApp, key, wait_inbox_idle, wait_transcript};

/// A gateway whose default profile falls back from the app's LLM stand-in (retried once) to
/// `backup`.
async fn spawn(backup: &FakeLlm) -> TestApp {
    let extra = format!(
        r#"
[providers.backup]
kind = "openai"
base_url = "{}"
model = "backup-model"
api_key = "test-key-not-real"
max_retries = 0
timeout_secs = 5

[agents.default]
fallback = ["backup"]
"#,
        backup.openai_url()
    );
    let builder = TestApp::builder().config(&extra);
    builder.edit(|c| c.provider.max_retries = 1).start().await
}

#[tokio::test]
async fn a_provider_answering_429_then_503_hands_the_turn_to_the_next_which_answers() {
    let backup = FakeLlm::start().await;
    let app = spawn(&backup).await;
    let (primary, channel, gateway) = (&app.llm, &app.channel, app.gateway());
    primary
        .push(Reply::Status(429, Some(0)))
        .push(Reply::Status(503, None));
    backup.push(Reply::text("The backup answers."));

    channel
        .say(&key("c1"), "u1", "are you there?")
        .await
        .unwrap();
    let transcript = wait_transcript(channel, &key("c1"), |t| {
        t.iter().any(|m| m.contains("The backup answers."))
    })
    .await;
    assert!(
        !transcript.iter().any(|m| m.contains("Sorry")),
        "{transcript:#?}"
    );
    assert_eq!(
        primary.requests().len(),
        2,
        "the primary's own retry, then the move"
    );
    let asked = request_saying(&backup, "are you there?").expect("the backup was asked");
    assert_eq!(asked["model"], "backup-model");
    let metrics = gateway.registry().deps().metrics.render();
    assert!(
        metrics.contains(r#"switchboard_llm_fallbacks_total{from="default",to="backup"} 1"#),
        "{metrics}"
    );
    app.shutdown().await;
}

#[tokio::test]
async fn a_stream_cut_after_the_first_token_ends_with_the_error_line_and_no_second_answer() {
    let backup = FakeLlm::start().await;
    let app = spawn(&backup).await;
    let (primary, channel, gateway) = (&app.llm, &app.channel, app.gateway());
    primary.push(Reply::Cut("The first half of an ans".into()));
    backup.push(Reply::text("A second, different answer."));

    channel
        .say(&key("c2"), "u1", "tell me a story")
        .await
        .unwrap();
    let transcript = wait_transcript(channel, &key("c2"), |t| {
        t.iter().any(|m| m.contains("Sorry"))
    })
    .await;
    wait_inbox_idle(&gateway.store()).await;
    let transcript = [transcript, channel.transcript(&key("c2"))].concat();
    assert!(
        !transcript.iter().any(|m| m.contains("second, different")),
        "{transcript:#?}"
    );
    assert!(backup.requests().is_empty(), "{:#?}", backup.requests());
    app.shutdown().await;
}

#[tokio::test]
async fn the_anthropic_provider_sends_text_only_user_content_as_a_plain_string() {
    let llm = FakeLlm::start().await;
    let url = EnvString(llm.anthropic_url());
    let anthropic = |c: &mut Config| {
        c.provider.kind = ProviderKind::Anthropic;
        c.provider.base_url = Some(url);
    };
    let app = TestApp::builder().llm(llm).edit(anthropic).start().await;
    let (llm, channel) = (&app.llm, &app.channel);

    channel
        .say(&key("c3"), "u1", "plain words please")
        .await
        .unwrap();
    wait_transcript(channel, &key("c3"), |t| {
        t.iter().any(|m| m.contains("plain words please"))
    })
    .await;
    let body = request_saying(llm, "plain words please").expect("asked");
    let user = body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .cloned()
        .unwrap();
    assert_eq!(
        user["content"],
        serde_json::json!("plain words please"),
        "{body:#}"
    );
    app.shutdown().await;
}
