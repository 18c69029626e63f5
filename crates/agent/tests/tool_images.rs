//! Images a tool returns (a browser screenshot) reach a model that reads images, through a
//! real OpenAI-compatible HTTP client against the in-process LLM stand-in: after the tool
//! messages, as one user message of `image_url` parts; never for a model without vision;
//! and only the newest `MAX_TOOL_IMAGES` of a turn.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use switchboard_agent::provider::{self, ChatMessage, ImagePart, ProviderConfig, Role};
use switchboard_agent::{AgentLoop, MAX_TOOL_IMAGES, Tool, ToolResult};
use switchboard_env::{EnvString, Secret};
use switchboard_standins::{FakeLlm, Reply};

/// Returns one image whose data names the call's `n`.
struct Camera;

#[async_trait]
impl Tool for Camera {
    fn name(&self) -> &str {
        "camera"
    }
    fn description(&self) -> &str {
        "Take picture n."
    }
    fn parameters_schema(&self) -> Value {
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    }
    async fn execute(&self, args: Value) -> ToolResult {
        let n = args["n"].as_i64().unwrap_or_default();
        ToolResult::ok(format!("picture {n} saved")).with_image(ImagePart {
            mime: "image/png".into(),
            data: format!("cGljdHVyZS{n}"),
        })
    }
}

/// Runs a turn in which the model takes `pictures` pictures, one per round-trip; returns
/// the requests the model got.
async fn turn(vision: bool, pictures: i64) -> Vec<Value> {
    let llm = FakeLlm::start().await;
    for n in 1..=pictures {
        llm.push(Reply::tool_call("camera", json!({"n": n})));
    }
    llm.push(Reply::text("Nice pictures."));
    let provider = provider::from_config(&ProviderConfig {
        base_url: Some(EnvString(llm.openai_url())),
        api_key: Secret::new("test-key-not-real"),
        max_retries: 0,
        vision,
        ..ProviderConfig::default()
    })
    .unwrap();
    let agent = AgentLoop::builder()
        .tool(Arc::new(Camera))
        .max_iterations(20)
        .vision(vision)
        .build();
    let messages = vec![
        ChatMessage::new(Role::System, "sys"),
        ChatMessage::new(Role::User, "take pictures"),
    ];
    let run = agent
        .run(provider.as_ref(), messages, |_| {})
        .await
        .unwrap();
    assert_eq!(run.answer, "Nice pictures.");
    assert!(
        run.messages.iter().all(|m| m.images.is_empty()),
        "the turn to be stored holds no image"
    );
    llm.requests()
}

/// The data URLs of every image part in `request`, in order.
fn images(request: &Value) -> Vec<String> {
    let messages = request["messages"].as_array().unwrap();
    messages
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|part| part["type"] == "image_url")
        .map(|part| part["image_url"]["url"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_tool_image_reaches_a_model_with_vision_after_the_tool_message() {
    let requests = turn(true, 1).await;
    assert_eq!(requests.len(), 2);
    assert!(images(&requests[0]).is_empty());
    assert_eq!(images(&requests[1]), ["data:image/png;base64,cGljdHVyZS1"]);
    let messages = requests[1]["messages"].as_array().unwrap();
    let tool = messages.iter().position(|m| m["role"] == "tool").unwrap();
    assert_eq!(messages[tool]["content"], "picture 1 saved");
    assert_eq!(
        messages[tool + 1]["role"],
        "user",
        "the images follow the results"
    );
}

#[tokio::test]
async fn a_model_without_vision_gets_the_text_alone() {
    let requests = turn(false, 1).await;
    assert!(images(&requests[1]).is_empty(), "{}", requests[1]);
    let messages = requests[1]["messages"].as_array().unwrap();
    assert_eq!(messages.last().unwrap()["content"], "picture 1 saved");
}

#[tokio::test]
async fn only_the_newest_images_of_a_turn_are_sent() {
    let pictures = MAX_TOOL_IMAGES as i64 + 2;
    let requests = turn(true, pictures).await;
    let last = images(requests.last().unwrap());
    let newest: Vec<String> = (3..=pictures)
        .map(|n| format!("data:image/png;base64,cGljdHVyZS{n}"))
        .collect();
    assert_eq!(last, newest);
}
