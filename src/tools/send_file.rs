//! `send_file`: post a file from the conversation's workspace to the conversation (a chart,
//! a report, a patch) through the platform's upload API. It is not read-only, so the policy
//! gate asks first by default (a file leaves the host). A text file passes the scrubber
//! before it leaves; a binary file leaves as it is, after that approval. The post goes
//! through the conversation's [`FilePoster`] (below), which waits for the chat's governor like every
//! other write.

use async_trait::async_trait;
use serde_json::{Value, json};
use std::sync::Arc;

use switchboard_channel::{Channel, ConversationKey, FileError, MessageRef, OutboundFile};

use super::WorkspaceDir;
use crate::agent::{Tool, ToolResult};
use crate::governor::Governor;
use crate::scrub::Scrubber;

/// The tool's name.
pub const SEND_FILE_TOOL: &str = "send_file";
/// Largest file the tool reads (platforms refuse less; their own limit is checked there).
const MAX_SEND_BYTES: u64 = 50 * 1024 * 1024;

/// Posts files into one conversation: each upload waits for the chat's governor like any
/// other write, and its caption is scrubbed. Made by the conversation's outbound path
/// (`Outbox::file_poster`) for the `send_file` tool.
#[derive(Clone)]
pub struct FilePoster {
    channel: Arc<dyn Channel>,
    governor: Arc<Governor>,
    scrubber: Arc<Scrubber>,
    key: ConversationKey,
}

impl FilePoster {
    /// A poster into `key` on `channel`, paced by `governor`, captions scrubbed by `scrubber`.
    pub fn new(
        channel: Arc<dyn Channel>,
        governor: Arc<Governor>,
        scrubber: Arc<Scrubber>,
        key: ConversationKey,
    ) -> Self {
        Self {
            channel,
            governor,
            scrubber,
            key,
        }
    }

    /// `text` with every credential redacted, as everything posted is.
    pub fn scrub(&self, text: &str) -> String {
        self.scrubber.scrub(text).into_owned()
    }

    /// Upload `file` once the chat's budget allows a write.
    pub async fn post(&self, mut file: OutboundFile) -> Result<MessageRef, FileError> {
        let limits = self.channel.limits_for(&self.key);
        self.governor.take(&self.key, &limits).await;
        file.caption = self.scrub(&file.caption);
        self.channel.send_file(&self.key, &file).await
    }
}

/// Posts workspace files into one conversation.
pub struct SendFileTool {
    workspace: WorkspaceDir,
    poster: FilePoster,
}

impl SendFileTool {
    /// A `send_file` for `workspace`, posting through `poster`.
    pub fn new(workspace: WorkspaceDir, poster: FilePoster) -> Self {
        Self { workspace, poster }
    }

    async fn send(&self, path: &str, caption: &str) -> Result<String, String> {
        let dir = self.workspace.clone();
        let rel = path.to_owned();
        let bytes = tokio::task::spawn_blocking(move || dir.read_file(&rel, MAX_SEND_BYTES))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("{path}: {e}"))?;
        let name = std::path::Path::new(path)
            .file_name()
            .map_or_else(|| "file".to_owned(), |n| n.to_string_lossy().into_owned());
        let mime = mime_of(&name);
        // Text leaves scrubbed (a credential in a generated report stays home).
        let bytes = match std::str::from_utf8(&bytes) {
            Ok(text) if !text.contains('\0') => self.poster.scrub(text).into_bytes(),
            _ => bytes,
        };
        let size = bytes.len();
        let file = OutboundFile {
            name: name.clone(),
            bytes,
            mime: Some(mime.to_owned()),
            caption: caption.to_owned(),
        };
        match self.poster.post(file).await {
            Ok(_) => Ok(format!("Sent {name} ({size} bytes) to the conversation.")),
            Err(FileError::TooLarge { limit }) => Err(format!(
                "{name} is {size} bytes, over this platform's {limit}-byte upload limit"
            )),
            Err(err) => Err(format!("{name} could not be sent: {err}")),
        }
    }
}

#[async_trait]
impl Tool for SendFileTool {
    fn name(&self) -> &str {
        SEND_FILE_TOOL
    }

    fn description(&self) -> &str {
        "Send a file from the workspace to the person in this conversation (a chart, a report, a patch), with an optional caption."
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": { "type": "string", "description": "Path of the file, relative to the workspace." },
                "caption": { "type": "string", "description": "Short text shown with the file." }
            },
            "required": ["path"]
        })
    }

    async fn execute(&self, args: Value) -> ToolResult {
        let Some(path) = args.get("path").and_then(Value::as_str) else {
            return ToolResult::err("`path` (a workspace-relative file path) is required");
        };
        let caption = args.get("caption").and_then(Value::as_str).unwrap_or("");
        match self.send(path, caption).await {
            Ok(done) => ToolResult::ok(done),
            Err(err) => ToolResult::err(err),
        }
    }
}

/// A MIME type from a file name's extension (images may be shown inline).
fn mime_of(name: &str) -> &'static str {
    let ext = name.rsplit('.').next().unwrap_or("").to_ascii_lowercase();
    match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "webp" => "image/webp",
        "gif" => "image/gif",
        "pdf" => "application/pdf",
        "csv" => "text/csv",
        "txt" | "log" | "md" | "patch" | "diff" => "text/plain",
        "json" => "application/json",
        "html" => "text/html",
        "svg" => "image/svg+xml",
        "zip" => "application/zip",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_extensions_get_their_mime_type() {
        assert_eq!(mime_of("chart.PNG"), "image/png");
        assert_eq!(mime_of("report.pdf"), "application/pdf");
        assert_eq!(mime_of("Makefile"), "application/octet-stream");
    }
}
