//! The agent loop inside the gateway: a tool's progress line in the draft, cleared before the
//! answer, and the turn stored whole. The loop on its own is tested in its crate
//! (`crates/agent/tests/agent_loop.rs`).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use switchboard::agent::{Tool, ToolResult};
use switchboard::provider::Role;
use switchboard_standins::{Op, Reply};

use crate::helpers::{TestApp, key, wait_inbox_idle, wait_transcript};

/// Adds two numbers after a fifth of a second, long enough for its progress line to show.
struct SlowAdd;

#[async_trait]
impl Tool for SlowAdd {
    fn name(&self) -> &str {
        "add"
    }
    fn description(&self) -> &str {
        "Add two integers a and b."
    }
    fn parameters_schema(&self) -> Value {
        json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}})
    }
    async fn execute(&self, args: Value) -> ToolResult {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let sum = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
        ToolResult::ok(sum.to_string())
    }
}

#[tokio::test]
async fn tool_progress_shows_in_the_draft_and_is_cleared_before_the_answer() {
    let app = TestApp::builder()
        .config("[policy]\nmode = \"autonomous\"\n")
        .tool(Arc::new(SlowAdd))
        .start()
        .await;
    let (channel, gateway) = (&app.channel, app.gateway());
    app.llm
        .push(Reply::tool_call("add", json!({"a": 20, "b": 22})))
        .push(Reply::text("It is 42."));
    let chat = key("tools");
    channel.say(&chat, "u1", "what is 20+22").await.unwrap();
    wait_transcript(channel, &chat, |t| t == ["It is 42."]).await;
    let texts: Vec<String> = channel
        .writes()
        .iter()
        .filter(|c| c.op != Op::Delete)
        .map(|c| c.text.clone())
        .collect();
    assert!(texts.iter().any(|t| t.starts_with("⏳ add")), "{texts:#?}");
    wait_inbox_idle(&gateway.store()).await;
    let history = gateway.store().history(&chat, 10).await.unwrap();
    let roles: Vec<Role> = history.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        vec![Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    assert_eq!(history[1].tool_calls[0].name, "add");
    app.shutdown().await;
}
