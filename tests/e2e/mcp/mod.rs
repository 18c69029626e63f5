//! MCP servers as tool sources, end to end: the real reference server from the npm registry
//! (`@modelcontextprotocol/server-everything`, installed into `tests/mcp` by `.ci/run`)
//! called through Slack's stand-in, and small servers written here for the failures (a
//! stdio server that exits mid-call, an HTTP server answering 500) and the sandbox escapes.

mod everything;
mod failures;
mod probe;
mod sandbox;
mod schemas;

use std::path::PathBuf;

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use switchboard_standins::Reply;

use crate::helpers::{TestApp, key, wait_transcript};

/// The reference server's entry point, or `None` (with a visible notice) when `.ci/run`
/// has not installed it; with `SWITCHBOARD_REQUIRE_MCP=1` its absence fails the test.
pub fn everything_server() -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if path.is_file() && std::path::Path::new(NODE).is_file() {
        return Some(path);
    }
    if std::env::var("SWITCHBOARD_REQUIRE_MCP").as_deref() == Ok("1") {
        panic!(
            "SWITCHBOARD_REQUIRE_MCP=1 but {} (or {NODE}) is missing: run `npm ci --prefix tests/mcp`",
            path.display()
        );
    }
    eprintln!(
        "SKIPPED: the reference MCP server is not installed ({}); run `npm ci --prefix tests/mcp`",
        path.display()
    );
    None
}

/// Where node lives on the test machines.
pub const NODE: &str = "/usr/bin/node";

/// `[mcp.servers.everything]` for the reference server at `entry`.
pub fn everything_table(entry: &std::path::Path) -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp");
    format!(
        "[mcp.servers.everything]\ncommand = \"{NODE}\"\nargs = [\"{}\", \"stdio\"]\n\
         extra_read = [\"{}\"]\ntimeout_secs = 30\n",
        entry.display(),
        root.display()
    )
}

/// A stdio MCP server written in node for these tests: newline-delimited JSON-RPC,
/// `initialize`, `tools/list` and `tools/call` for the tools in `TOOLS` below. It appends
/// a line to `starts.log` in its working directory each time it starts.
pub const SCRIPT_SERVER: &str = r#"
const fs = require('fs');
fs.appendFileSync('starts.log', 'start\n');
const tools = ['hello', 'crash', 'env', 'read', 'write'].map((name) => ({
  name, description: 'test tool ' + name,
  inputSchema: { type: 'object', properties: { path: { type: 'string' }, text: { type: 'string' } } },
}));
const send = (msg) => process.stdout.write(JSON.stringify(msg) + '\n');
const text = (id, t) => send({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: String(t) }] } });
function call(id, name, args) {
  try {
    if (name === 'hello') return text(id, 'hello from pid ' + process.pid);
    if (name === 'crash') process.exit(3);
    if (name === 'env') {
      let parent = '';
      try { parent = fs.readFileSync('/proc/' + process.ppid + '/environ', 'utf8'); } catch (e) { parent = 'denied: ' + e.code; }
      return text(id, JSON.stringify(process.env) + '\n' + parent);
    }
    if (name === 'read') return text(id, fs.readFileSync(args.path, 'utf8'));
    if (name === 'write') { fs.writeFileSync(args.path, args.text || 'x'); return text(id, 'wrote ' + args.path); }
  } catch (e) { return text(id, 'failed: ' + e.code + ' ' + e.message); }
}
let buffer = '';
process.stdin.on('data', (chunk) => {
  buffer += chunk;
  let nl;
  while ((nl = buffer.indexOf('\n')) >= 0) {
    const line = buffer.slice(0, nl); buffer = buffer.slice(nl + 1);
    if (!line.trim()) continue;
    const msg = JSON.parse(line);
    if (msg.method === 'initialize') send({ jsonrpc: '2.0', id: msg.id, result: {
      protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} },
      serverInfo: { name: 'script', version: '1' } } });
    else if (msg.method === 'tools/list') send({ jsonrpc: '2.0', id: msg.id, result: { tools } });
    else if (msg.method === 'tools/call') call(msg.id, msg.params.name, msg.params.arguments || {});
    else if (msg.id !== undefined) send({ jsonrpc: '2.0', id: msg.id, result: {} });
  }
});
"#;

/// Write [`SCRIPT_SERVER`] into a fresh directory; returns it (keep it alive) and the
/// `[mcp.servers.<name>]` table that runs it, with `more` keys appended.
pub fn script_server(name: &str, more: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("server.js");
    std::fs::write(&script, SCRIPT_SERVER).unwrap();
    // The sandbox user (when the tests run as root) must reach the script.
    open_up(dir.path(), 0o755);
    let table = format!(
        "[mcp.servers.{name}]\ncommand = \"{NODE}\"\nargs = [\"{}\"]\nextra_read = [\"{}\"]\n\
         timeout_secs = 20\n{more}\n",
        script.display(),
        dir.path().display()
    );
    (dir, table)
}

/// Have the model call `tool` with `args` in `chat` (allowed by the config); returns the
/// tool message it got back.
pub async fn call(app: &TestApp, chat: &str, tool: &str, args: Value) -> String {
    let done = format!("done {chat} {}", app.llm.requests().len());
    app.llm
        .push(Reply::tool_call(tool, args))
        .push(Reply::text(done.clone()));
    let chat = key(chat);
    app.channel.say(&chat, "u1", "go").await.unwrap();
    wait_transcript(&app.channel, &chat, |t| t.contains(&done)).await;
    crate::sandbox::last_tool_message(app)
}

/// The reply of a streamable-HTTP MCP test server named `name` to one JSON-RPC message:
/// `initialize` answered here, notifications accepted (202), and every other method's
/// result from `result` (`Err(status)` for a bare HTTP failure, such as a 500).
pub fn http_reply(
    body: &Value,
    name: &str,
    result: impl FnOnce(&str) -> Result<Value, StatusCode>,
) -> Response {
    let id = body["id"].clone();
    let result = match body["method"].as_str().unwrap_or_default() {
        "initialize" => json!({
            "protocolVersion": body["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": name, "version": "1"}
        }),
        _ if id.is_null() => return StatusCode::ACCEPTED.into_response(),
        method => match result(method) {
            Ok(result) => result,
            Err(status) => return status.into_response(),
        },
    };
    Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}

/// `chmod mode path`.
pub fn open_up(path: &std::path::Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}
