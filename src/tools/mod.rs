//! Built-in tools, each confined to one conversation's workspace under
//! `[gateway] data_dir/workspaces/`. The `Toolbox` makes the enabled set for a conversation.

mod fetch;
mod files;
mod path;
mod shell;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use switchboard_channel::ConversationKey;

pub use fetch::{HttpFetchTool, host_allowed};
pub use files::{FileOp, FileTool};
pub use path::confine;
pub use shell::{ShellTool, TRUNCATED};

use crate::agent::Tool;
use crate::config::ToolsConfig;

/// Makes the configured tools for a conversation.
pub struct Toolbox {
    config: ToolsConfig,
    root: PathBuf,
    fetch: Arc<HttpFetchTool>,
}

impl Toolbox {
    /// Tools as `[tools]` enables them, with workspaces under `data_dir`.
    pub fn new(config: &ToolsConfig, data_dir: &Path) -> Self {
        Self {
            fetch: Arc::new(HttpFetchTool::new(&config.http_fetch)),
            config: config.clone(),
            root: data_dir.join("workspaces"),
        }
    }

    /// The workspace directory of `key` (one directory per conversation).
    pub fn workspace(&self, key: &ConversationKey) -> PathBuf {
        let mut dir = self
            .root
            .join(sanitize(&key.channel))
            .join(sanitize(&key.chat));
        if let Some(thread) = &key.thread {
            dir.push(sanitize(thread));
        }
        dir
    }

    /// The enabled tools, bound to `key`'s workspace.
    pub fn for_conversation(&self, key: &ConversationKey) -> Vec<Arc<dyn Tool>> {
        let ws = self.workspace(key);
        self.config
            .enabled
            .iter()
            .filter_map(|name| -> Option<Arc<dyn Tool>> {
                Some(match name.as_str() {
                    "shell" => Arc::new(ShellTool::new(
                        ws.clone(),
                        Duration::from_secs(self.config.shell.timeout_secs.max(1)),
                        self.config.shell.max_output_bytes,
                    )),
                    "file_read" => Arc::new(FileTool::new(FileOp::Read, ws.clone())),
                    "file_write" => Arc::new(FileTool::new(FileOp::Write, ws.clone())),
                    "file_edit" => Arc::new(FileTool::new(FileOp::Edit, ws.clone())),
                    "file_list" => Arc::new(FileTool::new(FileOp::List, ws.clone())),
                    "http_fetch" => self.fetch.clone(),
                    _ => return None,
                })
            })
            .collect()
    }
}

/// A path segment made only of `[A-Za-z0-9_-]`, never empty, never `.` or `..`.
fn sanitize(part: &str) -> String {
    let clean: String = part
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.is_empty() { "_".into() } else { clean }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_conversation_gets_its_own_safe_workspace() {
        let tb = Toolbox::new(&ToolsConfig::default(), Path::new("/data"));
        let a = tb.workspace(&ConversationKey::new("slack", "C1").in_thread("1712.0001"));
        assert_eq!(a, Path::new("/data/workspaces/slack/C1/1712_0001"));
        let evil = tb.workspace(&ConversationKey::new("web", "../../etc"));
        assert!(evil.starts_with("/data/workspaces/web/"), "{evil:?}");
        assert_eq!(
            tb.for_conversation(&ConversationKey::new("x", "y")).len(),
            4
        );
    }
}
