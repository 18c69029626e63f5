//! Agent profiles end to end: which profile a channel or chat gets (its prompt, model and
//! tools, as the LLM stand-in sees them), fallback along a provider chain, `/model`, the
//! Anthropic text-as-string wire shape, config checks, and the stored model choice on both
//! databases.

mod checks;
mod fallback;
mod model;
mod routing;
mod store;

use serde_json::Value;
use switchboard_standins::FakeLlm;

/// The request whose last user message contains `text`.
fn request_saying(llm: &FakeLlm, text: &str) -> Option<Value> {
    llm.requests().into_iter().find(|body| {
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        messages
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .is_some_and(|m| m["content"].to_string().contains(text))
    })
}

/// The names of the tools an OpenAI-style request offered.
fn tool_names(body: &Value) -> Vec<String> {
    let tools = body["tools"].as_array().cloned().unwrap_or_default();
    tools
        .iter()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

/// The system prompt of an OpenAI-style request.
fn system_prompt(body: &Value) -> String {
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}
