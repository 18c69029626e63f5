//! Image parts on the wire: one user message with an image, as each protocol sends it
//! (OpenAI `image_url` data URLs, Anthropic base64 `image` blocks before the text).

use switchboard::config::{EnvString, ProviderConfig, ProviderKind, Secret};
use switchboard::provider::{self, ChatMessage, ChatRequest, ImagePart, Role};
use switchboard_standins::{FakeLlm, Reply};

fn request() -> ChatRequest {
    let mut user = ChatMessage::new(Role::User, "what is in this picture?");
    user.images.push(ImagePart {
        mime: "image/png".into(),
        data: "iVBORw0KGgo=".into(),
    });
    ChatRequest {
        messages: vec![ChatMessage::new(Role::System, "be brief"), user],
        tools: Default::default(),
    }
}

async fn sent(kind: ProviderKind) -> serde_json::Value {
    let llm = FakeLlm::start().await;
    llm.push(Reply::text("A red dot."));
    let base = match kind {
        ProviderKind::Openai => llm.openai_url(),
        ProviderKind::Anthropic => llm.anthropic_url(),
    };
    let config = ProviderConfig {
        kind,
        base_url: Some(EnvString(base)),
        api_key: Secret::new("test-key-not-real"),
        ..ProviderConfig::default()
    };
    let provider = provider::from_config(&config).unwrap();
    let mut stream = provider.stream(&request()).await.unwrap();
    while stream.next().await.is_some() {}
    llm.requests().remove(0)
}

#[tokio::test]
async fn openai_requests_carry_an_image_as_a_data_url_part_after_the_text() {
    let body = sent(ProviderKind::Openai).await;
    let parts = body["messages"][1]["content"].as_array().unwrap().clone();
    assert_eq!(parts[0]["type"], "text");
    assert_eq!(parts[0]["text"], "what is in this picture?");
    assert_eq!(parts[1]["type"], "image_url");
    assert_eq!(
        parts[1]["image_url"]["url"],
        "data:image/png;base64,iVBORw0KGgo="
    );
}

#[tokio::test]
async fn anthropic_requests_carry_an_image_as_a_base64_block_before_the_text() {
    let body = sent(ProviderKind::Anthropic).await;
    let blocks = body["messages"][0]["content"].as_array().unwrap().clone();
    assert_eq!(blocks[0]["type"], "image");
    assert_eq!(blocks[0]["source"]["type"], "base64");
    assert_eq!(blocks[0]["source"]["media_type"], "image/png");
    assert_eq!(blocks[0]["source"]["data"], "iVBORw0KGgo=");
    assert_eq!(blocks[1]["text"], "what is in this picture?");
}
