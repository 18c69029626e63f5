//! Servers that fail: a stdio server that exits mid-call (the result says so, the next call
//! starts it again) and a streamable-HTTP server that answers 500 (a clear error result);
//! the conversation goes on either way.

use axum::Json;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::post;
use serde_json::{Value, json};

use super::{call, script_server};
use crate::helpers::TestApp;

const ALLOW: &str = "[tools]\nenabled = []\n[policy]\nallow = [\"mcp(*)\"]\n";

#[tokio::test]
async fn a_stdio_server_that_exits_mid_call_says_so_and_the_next_call_restarts_it() {
    if super::everything_server().is_none() {
        return; // node and the test tree come together
    }
    let (_script, table) = script_server("crashy", "");
    let app = TestApp::spawn_with(&format!("{ALLOW}{table}")).await;
    let first = call(&app, "c", "crashy__hello", json!({})).await;
    assert!(first.contains("hello from pid"), "{first}");
    let crashed = call(&app, "c", "crashy__crash", json!({})).await;
    assert!(
        crashed.starts_with("error: MCP server `crashy`"),
        "{crashed}"
    );
    assert!(crashed.contains("restarted on the next call"), "{crashed}");
    let again = call(&app, "c", "crashy__hello", json!({})).await;
    assert!(again.contains("hello from pid"), "{again}");
    let starts = app
        .config
        .gateway
        .data_dir
        .join("workspaces/.mcp-crashy/starts.log");
    let starts = std::fs::read_to_string(starts).unwrap();
    assert_eq!(starts.lines().count(), 2, "started once, restarted once");
}

/// A streamable-HTTP MCP endpoint that initializes and lists one tool, then answers every
/// call with 500.
async fn flaky(Json(body): Json<Value>) -> Response {
    super::http_reply(&body, "flaky", |method| match method {
        "tools/list" => Ok(json!({"tools": [{
            "name": "boom", "description": "always fails", "inputSchema": {"type": "object"}
        }]})),
        "tools/call" => Err(StatusCode::INTERNAL_SERVER_ERROR),
        _ => Ok(json!({})),
    })
}

#[tokio::test]
async fn an_http_server_answering_500_gives_a_clear_error_and_the_conversation_goes_on() {
    let router = axum::Router::new().route(
        "/mcp",
        post(flaky).get(|| async { StatusCode::METHOD_NOT_ALLOWED }),
    );
    let url = format!("http://{}/mcp", switchboard_standins::serve(router).await);
    let table = format!("[mcp.servers.flaky]\nurl = \"{url}\"\ntimeout_secs = 5\n");
    let app = TestApp::spawn_with(&format!("{ALLOW}{table}")).await;
    let result = call(&app, "h", "flaky__boom", json!({})).await;
    assert!(result.starts_with("error: MCP server `flaky`"), "{result}");
    let hello = call(&app, "h", "flaky__boom", json!({})).await;
    assert!(hello.starts_with("error: MCP server `flaky`"), "{hello}");
}
