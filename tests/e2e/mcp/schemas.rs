//! An MCP server's input schemas: arguments that break one are refused before the server is
//! called, with every problem named for the model; a `pattern` the validator's regex engine
//! lacks (look-around) is left to the server while the rest of the schema still holds, and
//! the model sees the schema as the server wrote it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};

use super::call;
use crate::helpers::TestApp;

/// A streamable-HTTP MCP endpoint with two tools; counts the calls that reach it.
async fn server(State(calls): State<Arc<AtomicUsize>>, Json(body): Json<Value>) -> Response {
    super::http_reply(&body, "schemas", |method| match method {
        "tools/list" => Ok(json!({"tools": [
            {"name": "greet", "description": "greets", "inputSchema": {
                "type": "object",
                "properties": {"name": {"type": "string", "minLength": 1}},
                "required": ["name"],
                "additionalProperties": false
            }},
            {"name": "lookaround", "description": "needs look-around", "inputSchema": {
                "type": "object",
                "properties": {"name": {"type": "string", "pattern": "^(?!admin$)"}}
            }}
        ]})),
        "tools/call" => {
            calls.fetch_add(1, Ordering::SeqCst);
            let name = body["params"]["arguments"]["name"].as_str().unwrap_or("?");
            Ok(json!({"content": [{"type": "text", "text": format!("hi {name}")}]}))
        }
        _ => Ok(json!({})),
    })
}

#[tokio::test]
async fn arguments_are_checked_against_the_servers_schema_before_it_is_called() {
    let calls = Arc::new(AtomicUsize::new(0));
    let router = Router::new()
        .route(
            "/mcp",
            post(server).get(|| async { StatusCode::METHOD_NOT_ALLOWED }),
        )
        .with_state(calls.clone());
    let url = format!("http://{}/mcp", switchboard_standins::serve(router).await);
    let config = format!(
        "[tools]\nenabled = []\n[policy]\nallow = [\"mcp(*)\"]\n\
         [mcp.servers.schemas]\nurl = \"{url}\"\ntimeout_secs = 5\n"
    );
    let app = TestApp::spawn_with(&config).await;

    let refused = call(&app, "s", "schemas__greet", json!({"nmae": "ada"})).await;
    assert!(
        refused.contains("invalid arguments for schemas__greet"),
        "{refused}"
    );
    assert!(
        refused.contains("missing") && refused.contains("'name'"),
        "{refused}"
    );
    assert!(
        refused.contains("'nmae'"),
        "the extra key is named: {refused}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0, "the server was not called");

    let greeted = call(&app, "s", "schemas__greet", json!({"name": "ada"})).await;
    assert!(greeted.contains("hi ada"), "{greeted}");
    let passed = call(&app, "s", "schemas__lookaround", json!({"name": "bo"})).await;
    assert!(passed.contains("hi bo"), "{passed}");
    let typed = call(&app, "s", "schemas__lookaround", json!({"name": 7})).await;
    assert!(typed.contains("/name: "), "the type still holds: {typed}");
    assert_eq!(calls.load(Ordering::SeqCst), 2);

    let tools = app.llm.requests()[0]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let parameters = |name: &str| {
        tools
            .iter()
            .find(|t| t["function"]["name"] == name)
            .unwrap_or_else(|| panic!("{name} offered: {tools:#?}"))["function"]["parameters"]
            .clone()
    };
    assert_eq!(parameters("schemas__greet")["required"], json!(["name"]));
    let lookaround = parameters("schemas__lookaround");
    assert_eq!(lookaround["properties"]["name"]["pattern"], "^(?!admin$)");
}
