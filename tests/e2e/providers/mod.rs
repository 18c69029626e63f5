//! Both provider protocols against the fake LLM server: streaming, tool calls, retries
//! before the first token only, cut streams. `errors`: every failure class and its chat line;
//! `in_flight`: a provider's bound on calls at once.

mod errors;
mod in_flight;
mod probe;

use std::time::Duration;

use serde_json::json;
use switchboard::config::{EnvString, ProviderConfig, ProviderKind, Secret};
use switchboard::provider::{
    self, ChatMessage, ChatRequest, ProviderError, Role, StopReason, StreamEvent, ToolSpec,
};
use switchboard_standins::{FakeLlm, Reply};

use crate::helpers::{TestApp, key, wait_transcript};

fn config(kind: ProviderKind, llm: &FakeLlm) -> ProviderConfig {
    let base = match kind {
        ProviderKind::Openai => llm.openai_url(),
        ProviderKind::Anthropic => llm.anthropic_url(),
    };
    ProviderConfig {
        kind,
        base_url: Some(EnvString(base)),
        api_key: Secret::new("test-key-not-real"),
        timeout_secs: 2,
        max_retries: 2,
        ..ProviderConfig::default()
    }
}

fn request() -> ChatRequest {
    ChatRequest {
        messages: vec![
            ChatMessage::new(Role::System, "sys"),
            ChatMessage::new(Role::User, "hi"),
        ],
        tools: vec![ToolSpec {
            name: "lookup".into(),
            description: "look up".into(),
            parameters: json!({"type": "object"}).into(),
        }]
        .into(),
    }
}

async fn collect(kind: ProviderKind, llm: &FakeLlm) -> Result<Vec<StreamEvent>, ProviderError> {
    let provider = provider::from_config(&config(kind, llm)).unwrap();
    let mut stream = provider.stream(&request()).await?;
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event?);
    }
    Ok(events)
}

fn text_of(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn both_protocols_stream_text_and_tool_calls() {
    for kind in [ProviderKind::Openai, ProviderKind::Anthropic] {
        let llm = FakeLlm::start().await;
        llm.push(Reply::Stream {
            text: "Let me check.".into(),
            tool_calls: vec![("lookup".into(), json!({"q": "weather", "n": 2}))],
            chunk_chars: 3,
            first_delay: Duration::ZERO,
            delay: Duration::ZERO,
            max_tokens: false,
        });
        let events = collect(kind, &llm).await.unwrap();
        assert_eq!(text_of(&events), "Let me check.", "{kind:?}");
        let call = events
            .iter()
            .find_map(|e| match e {
                StreamEvent::ToolCall(c) => Some(c.clone()),
                _ => None,
            })
            .unwrap();
        assert_eq!(
            (call.name.as_str(), call.args.clone()),
            ("lookup", json!({"q": "weather", "n": 2})),
            "{kind:?}"
        );
        assert!(
            matches!(
                events.last(),
                Some(StreamEvent::Done {
                    stop_reason: StopReason::ToolUse,
                    ..
                })
            ),
            "{kind:?}"
        );
        let body = &llm.requests()[0];
        match kind {
            ProviderKind::Openai => {
                assert_eq!(body["tools"][0]["function"]["name"], "lookup");
                assert_eq!(
                    llm.request_headers()[0]["authorization"],
                    "Bearer test-key-not-real"
                );
            }
            ProviderKind::Anthropic => {
                assert_eq!(body["system"], "sys");
                assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
                assert_eq!(llm.request_headers()[0]["x-api-key"], "test-key-not-real");
            }
        }
    }
}

#[tokio::test]
async fn a_429_and_a_500_before_the_first_token_are_retried() {
    for kind in [ProviderKind::Openai, ProviderKind::Anthropic] {
        let llm = FakeLlm::start().await;
        llm.push(Reply::Status(429, Some(0)))
            .push(Reply::Status(503, None))
            .push(Reply::text("finally"));
        let events = collect(kind, &llm).await.unwrap();
        assert_eq!(text_of(&events), "finally");
        assert_eq!(llm.requests().len(), 3);
    }
}

#[tokio::test]
async fn a_client_error_is_not_retried() {
    let llm = FakeLlm::start().await;
    llm.push(Reply::Status(401, None));
    let err = collect(ProviderKind::Openai, &llm).await.unwrap_err();
    assert!(
        matches!(err, ProviderError::KeyRejected { status: 401, .. }),
        "{err:?}"
    );
    assert_eq!(llm.requests().len(), 1);
}

#[tokio::test]
async fn a_stream_cut_after_the_first_token_is_an_error_not_a_retry() {
    for kind in [ProviderKind::Openai, ProviderKind::Anthropic] {
        let llm = FakeLlm::start().await;
        llm.push(Reply::Cut("half an ans".into()));
        let err = collect(kind, &llm).await.unwrap_err();
        assert!(matches!(err, ProviderError::Stream(_)), "{kind:?}: {err:?}");
        assert_eq!(
            llm.requests().len(),
            1,
            "{kind:?}: text was already streamed; no retry"
        );
    }
}

#[tokio::test]
async fn a_stalled_stream_times_out() {
    let llm = FakeLlm::start().await;
    for _ in 0..3 {
        llm.push(Reply::Stall(Duration::from_secs(10)));
    }
    let started = std::time::Instant::now();
    let err = collect(ProviderKind::Openai, &llm).await.unwrap_err();
    assert!(matches!(err, ProviderError::Timeout(_)), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn the_gateway_answers_through_the_anthropic_protocol() {
    let llm = FakeLlm::start().await;
    let provider = config_for_anthropic(&llm);
    let builder = TestApp::builder().llm(llm);
    let app = builder.edit(|c| c.provider = provider).start().await;
    app.llm.push(Reply::text("bonjour from claude"));
    app.channel.say(&key("anth"), "u1", "hello").await.unwrap();
    wait_transcript(&app.channel, &key("anth"), |t| t == ["bonjour from claude"]).await;
    assert!(app.llm.requests().last().unwrap()["system"].is_string());
    app.shutdown().await;
}

fn config_for_anthropic(llm: &FakeLlm) -> ProviderConfig {
    config(ProviderKind::Anthropic, llm)
}
