//! The reference server through Slack: the model sees its tools, calls one, the answer
//! carries the result, the call is audited and counted; an `ask` rule shows buttons.

use serde_json::{Value, json};
use switchboard_standins::slack::{FakeMessage, SignedRequest, SlackMessage, dm_event};
use switchboard_standins::{Reply, eventually};

use super::{everything_server, everything_table};
use crate::app::{Table, TestApp};
use crate::helpers::WAIT;

/// A gateway with an open Slack channel, no built-in tools, `policy` lines under `[policy]`
/// and the reference server; `None` where the server is not installed.
async fn spawn(policy: &str) -> Option<TestApp> {
    let entry = everything_server()?;
    let extra = format!(
        "[tools]\nenabled = []\n[policy]\n{policy}\n{}",
        everything_table(&entry)
    );
    Some(
        TestApp::builder()
            .slack(Table::open())
            .config(&extra)
            .start()
            .await,
    )
}

async fn dm(app: &TestApp, event_id: &str, text: &str, ts: &str) {
    let event = dm_event(&SlackMessage {
        event_id,
        text,
        ts,
        ..SlackMessage::default()
    });
    let status = app.slack_post("events", SignedRequest::event(&event)).await;
    assert_eq!(status, 200);
}

async fn wait_for(app: &TestApp, done: impl Fn(&[FakeMessage]) -> bool) -> Vec<FakeMessage> {
    let channel = SlackMessage::default().channel;
    eventually(WAIT * 2, "the bot's messages in the DM", async || {
        let messages = app.slack().messages(channel);
        if done(&messages) {
            Ok(messages)
        } else {
            Err(messages)
        }
    })
    .await
}

fn tool_message(request: &Value) -> Option<String> {
    let messages = request["messages"].as_array()?;
    let tool = messages.iter().rev().find(|m| m["role"] == "tool")?;
    Some(tool["content"].as_str()?.to_owned())
}

#[tokio::test]
async fn the_model_sees_and_calls_the_reference_servers_tool_and_the_answer_carries_its_result() {
    let Some(app) = spawn("allow = [\"mcp(everything__echo)\"]").await else {
        return;
    };
    app.llm
        .push(Reply::tool_call(
            "everything__echo",
            json!({"message": "hello mcp"}),
        ))
        .push(Reply::text("The server said: Echo: hello mcp"));
    dm(&app, "Ev1", "echo something", "1700000000.000100").await;
    wait_for(&app, |m| {
        m.iter()
            .any(|m| m.text.contains("The server said: Echo: hello mcp"))
    })
    .await;

    let requests = app.llm.requests();
    let tools = requests[0]["tools"].as_array().cloned().unwrap_or_default();
    let echo = tools
        .iter()
        .find(|t| t["function"]["name"] == "everything__echo")
        .unwrap_or_else(|| panic!("echo offered: {tools:#?}"));
    assert_eq!(
        echo["function"]["description"],
        "Echoes back the input string"
    );
    assert_eq!(
        echo["function"]["parameters"]["required"],
        json!(["message"])
    );
    let result = tool_message(requests.last().unwrap()).unwrap();
    assert!(result.contains("Echo: hello mcp"), "{result}");

    let audit = app.store().audit(None, 50).await.unwrap();
    assert!(
        audit
            .iter()
            .any(|e| e.tool == "everything__echo" && e.status == "ok"),
        "{audit:#?}"
    );
    let base = app.url("");
    let ready: Value = reqwest::get(format!("{base}/readyz"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let check = ready["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "mcp:everything")
        .cloned()
        .unwrap_or_else(|| panic!("{ready:#}"));
    assert_eq!(check["detail"]["state"], "running", "{check:#}");
    let metrics = reqwest::get(format!("{base}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("switchboard_mcp_calls_total{outcome=\"ok\",server=\"everything\"} 1"),
        "{metrics}"
    );
    app.shutdown().await;
}

#[tokio::test]
async fn an_ask_rule_on_an_mcp_tool_shows_approval_buttons_with_the_servers_read_only_hint() {
    let Some(app) = spawn("mode = \"autonomous\"\nask = [\"mcp(everything__*)\"]").await else {
        return;
    };
    app.llm
        .push(Reply::tool_call(
            "everything__echo",
            json!({"message": "needs a yes"}),
        ))
        .push(Reply::text("unused"));
    dm(&app, "Ev2", "echo with approval", "1700000000.000200").await;
    let has_buttons = |m: &FakeMessage| {
        m.blocks
            .as_ref()
            .and_then(Value::as_array)
            .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "actions"))
    };
    let messages = wait_for(&app, |m| m.iter().any(has_buttons)).await;
    let prompt = messages.iter().find(|m| has_buttons(m)).unwrap();
    let blocks = prompt.blocks.clone().unwrap().to_string();
    assert!(prompt.text.contains("everything__echo") || blocks.contains("everything__echo"));
    assert!(
        blocks.contains("marks it read-only") || prompt.text.contains("marks it read-only"),
        "{blocks}"
    );
    assert_eq!(
        app.llm.requests().len(),
        1,
        "nothing ran before the approval"
    );
    app.shutdown().await;
}
