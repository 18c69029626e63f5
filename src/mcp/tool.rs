//! One MCP server tool as the agent sees it: `<server>__<tool>`, the server's description
//! and JSON Schema, its result turned into text (text content joined, images and resources
//! as a short note, capped), and every failure a clear error result for the model.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::server::{Server, ToolDef};
use crate::agent::{Tool, ToolResult};
use crate::config::mcp::TOOL_SEPARATOR;
use crate::metrics::Metrics;

/// Most result text kept (larger results are cut here, then offloaded like shell output).
pub const MAX_RESULT_BYTES: usize = 1024 * 1024;

/// A server's tool, routed to its [`Server`].
pub struct McpTool {
    full_name: String,
    description: String,
    schema: Value,
    def: ToolDef,
    server: Arc<Server>,
    metrics: Option<Arc<Metrics>>,
}

impl McpTool {
    /// The tool `def` of `server`.
    pub fn new(server: Arc<Server>, def: ToolDef, metrics: Option<Arc<Metrics>>) -> Self {
        let full_name = format!("{}{TOOL_SEPARATOR}{}", server.name, def.name);
        // A schema the validator cannot compile would fail every call: offer a plain
        // object instead (the server still checks its own arguments).
        let schema = if crate::agent::schema::usable(&def.schema) {
            def.schema.clone()
        } else {
            tracing::warn!(tool = %full_name, "mcp tool schema not usable; accepting any object");
            json!({"type": "object"})
        };
        let description = match def.description.trim() {
            "" => format!("Tool `{}` of the MCP server `{}`.", def.name, server.name),
            text => text.to_owned(),
        };
        Self {
            full_name,
            description,
            schema,
            def,
            server,
            metrics,
        }
    }

    fn count(&self, outcome: &str) {
        if let Some(m) = &self.metrics {
            m.mcp_calls
                .with_label_values(&[self.server.name.as_str(), outcome])
                .inc();
        }
    }
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.full_name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters_schema(&self) -> Value {
        self.schema.clone()
    }

    /// The server's own `readOnlyHint`: the policy shows it in the approval prompt but
    /// still asks; it only lets allowed calls run side by side.
    fn read_only(&self) -> bool {
        self.def.read_only_hint
    }

    async fn execute(&self, args: Value) -> ToolResult {
        let server = &self.server.name;
        match self.server.call(&self.def.name, args).await {
            Ok(result) => {
                let (text, is_error) = render(&result);
                self.count(if is_error { "tool_error" } else { "ok" });
                if is_error {
                    ToolResult::failed(text, format!("MCP server `{server}` reported an error"))
                } else {
                    ToolResult::ok(text)
                }
            }
            Err(error) => {
                self.count("error");
                ToolResult::err(format!("MCP server `{server}`: {error}"))
            }
        }
    }
}

/// The text of a `tools/call` result and whether it is an error (`isError`).
pub fn render(result: &Value) -> (String, bool) {
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut parts: Vec<String> = Vec::new();
    for item in result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        parts.push(content_text(item));
    }
    if parts.is_empty()
        && let Some(structured) = result.get("structuredContent")
    {
        parts.push(structured.to_string());
    }
    let mut text = parts.join("\n");
    if text.len() > MAX_RESULT_BYTES {
        let mut cut = MAX_RESULT_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let total = text.len();
        text.truncate(cut);
        text.push_str(&format!("\n[result cut at {cut} of {total} bytes]"));
    }
    (text, is_error)
}

/// One content item: text as is, anything else as a short note.
fn content_text(item: &Value) -> String {
    let field = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or_default();
    match field("type") {
        "text" => field("text").to_owned(),
        "image" | "audio" => {
            let bytes = field("data").len() / 4 * 3;
            format!(
                "[{} {}, about {bytes} bytes, not shown]",
                field("type"),
                field("mimeType")
            )
        }
        "resource" => {
            let resource = item.get("resource").cloned().unwrap_or_default();
            let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("?");
            match resource.get("text").and_then(Value::as_str) {
                Some(text) => format!("[resource {uri}]\n{text}"),
                None => format!("[resource {uri}, binary, not shown]"),
            }
        }
        "resource_link" => format!("[resource link {}]", field("uri")),
        other => format!("[{other} content, not shown]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_joined_and_other_content_becomes_a_note() {
        let result = json!({"content": [
            {"type": "text", "text": "one"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///a", "text": "body"}},
            {"type": "text", "text": "two"}
        ]});
        let (text, error) = render(&result);
        assert!(!error);
        assert_eq!(
            text,
            "one\n[image image/png, about 3 bytes, not shown]\n[resource file:///a]\nbody\ntwo"
        );
        let (_, error) = render(&json!({"content": [], "isError": true}));
        assert!(error);
    }

    #[test]
    fn a_huge_result_is_cut_with_a_note() {
        let big = "é".repeat(MAX_RESULT_BYTES);
        let (text, _) = render(&json!({"content": [{"type": "text", "text": big}]}));
        assert!(text.len() < MAX_RESULT_BYTES + 100);
        assert!(text.ends_with("bytes]"), "{}", &text[text.len() - 50..]);
    }
}
