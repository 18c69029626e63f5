//! Built-in tools, each confined to one conversation's workspace under
//! `[gateway] data_dir/workspaces/`. The `Toolbox` makes the enabled set for a conversation;
//! the shell runs through the [`Sandbox`], the file tools through a directory handle.
//! Workspaces are siblings, never nested: a thread's is `<channel>/<chat>@<thread>`, next to
//! its chat's `<channel>/<chat>`, so no conversation can reach another's files.

mod browser;
mod fetch;
mod files;
mod schedule;
mod send_file;
mod shell;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use switchboard_channel::ConversationKey;

pub use crate::agent::plan::{Plan, PlanItem, Status, TODO_TOOL, TodoTool};
pub use crate::hosts::{AllowedHost, DEFAULT_PORTS, host_allowed};
pub use browser::{BROWSER_TOOL, BrowserTool, Browsers, posture as browser_posture};
pub use fetch::HttpFetchTool;
pub use files::{FileOp, FileTool};
pub use schedule::{SCHEDULE_TOOL, ScheduleTool};
pub use send_file::{FilePoster, SEND_FILE_TOOL, SendFileTool};
pub use shell::{ShellTool, TRUNCATED};
pub use switchboard_agent::workspace::{WorkspaceDir, confine};

use crate::agent::Tool;
use crate::config::ToolsConfig;
use crate::sandbox::{Sandbox, SandboxConfig};

/// Makes the configured tools for a conversation.
pub struct Toolbox {
    config: ToolsConfig,
    root: PathBuf,
    fetch: Arc<HttpFetchTool>,
    sandbox: Arc<Sandbox>,
    /// Every conversation's browser (one at most each), shared by the tools bound to them.
    browsers: Arc<Browsers>,
    /// Scheduled tasks: when set (and enabled), every conversation gets its `schedule` tool.
    schedules: Option<Arc<crate::schedule::Schedules>>,
}

impl Toolbox {
    /// Tools as `[tools]` enables them, with workspaces under `data_dir`, sandboxed as
    /// `[sandbox]` says (the posture is measured and logged here, once).
    pub fn new(config: &ToolsConfig, sandbox: &SandboxConfig, data_dir: &Path) -> Self {
        let limits = sandbox.limits;
        let sandbox = Arc::new(Sandbox::new(sandbox, data_dir));
        let browsers = Arc::new(Browsers::new(&config.browser, Arc::clone(&sandbox), limits));
        if config.enabled.iter().any(|t| t == BROWSER_TOOL) {
            let posture = browser_posture(&config.browser, &limits);
            tracing::info!(%posture, "browser tool enabled");
        }
        Self {
            fetch: Arc::new(HttpFetchTool::new(&config.http_fetch)),
            browsers,
            config: config.clone(),
            root: data_dir.join("workspaces"),
            sandbox,
            schedules: None,
        }
    }

    /// Close `key`'s browser and delete its profile (cookies, storage): `/new`.
    pub async fn forget_browser(&self, key: &ConversationKey) {
        self.browsers.forget(&self.workspace(key)).await;
    }

    /// Offer the `schedule` tool (bound to each conversation) when `schedules` is enabled.
    pub fn with_schedules(mut self, schedules: Arc<crate::schedule::Schedules>) -> Self {
        self.schedules = Some(schedules).filter(|s| s.enabled());
        self
    }

    /// Never let the browser type a secret `scrubber` knows.
    pub fn with_scrubber(self, scrubber: Arc<crate::scrub::Scrubber>) -> Self {
        self.browsers.set_scrubber(scrubber);
        self
    }

    /// The sandbox tool processes run in.
    pub fn sandbox(&self) -> &Arc<Sandbox> {
        &self.sandbox
    }

    /// The workspace directory of `key` (one directory per conversation; a thread's sits
    /// next to its chat's, not inside it).
    pub fn workspace(&self, key: &ConversationKey) -> PathBuf {
        let mut name = sanitize(&key.chat);
        if let Some(thread) = &key.thread {
            name = format!("{name}@{}", sanitize(thread));
        }
        self.root.join(sanitize(&key.channel)).join(name)
    }

    /// The workspace of sub-task `index` (from 0) of `key`'s delegations: a sibling of the
    /// conversation's, `<chat>~sub<n>` (a sanitized chat name holds no `~`, so it is no
    /// other conversation's), never inside it.
    pub fn sub_task_workspace(&self, key: &ConversationKey, index: usize) -> PathBuf {
        let conversation = self.workspace(key);
        let name = conversation
            .file_name()
            .map_or_else(|| "_".to_owned(), |n| n.to_string_lossy().into_owned());
        conversation.with_file_name(format!("{name}~sub{}", index + 1))
    }

    /// The enabled tools for sub-task `index` of `key`'s delegations, bound to its sibling
    /// workspace (no `schedule`: a sub-task answers its parent, not the chat), and that
    /// workspace's handle.
    pub fn for_sub_task(
        &self,
        key: &ConversationKey,
        index: usize,
        skills: &[PathBuf],
    ) -> (Vec<Arc<dyn Tool>>, WorkspaceDir) {
        let ws = self.sub_task_workspace(key, index);
        (self.built_in(&ws, skills), self.dir(&ws))
    }

    /// The enabled tools, bound to `key`'s workspace; `skills` (verified skill copies) are
    /// readable by the file tools and mounted read-only for the shell.
    pub fn for_conversation(
        &self,
        key: &ConversationKey,
        skills: &[PathBuf],
    ) -> Vec<Arc<dyn Tool>> {
        let ws = self.workspace(key);
        self.built_in(&ws, skills)
            .into_iter()
            .chain(self.schedules.iter().map(|s| -> Arc<dyn Tool> {
                Arc::new(ScheduleTool::new(Arc::clone(s), key.clone()))
            }))
            .collect()
    }

    /// The enabled built-in tools bound to workspace `ws`.
    fn built_in(&self, ws: &Path, skills: &[PathBuf]) -> Vec<Arc<dyn Tool>> {
        let ws = ws.to_path_buf();
        let file = |op| {
            let mounts = skills.iter().map(|root| self.dir(root)).collect();
            Arc::new(FileTool::new(op, self.dir(&ws)).with_read_only(mounts))
        };
        self.config
            .enabled
            .iter()
            .filter_map(|name| -> Option<Arc<dyn Tool>> {
                Some(match name.as_str() {
                    "shell" => Arc::new(
                        ShellTool::new(
                            ws.clone(),
                            Duration::from_secs(self.config.shell.timeout_secs.max(1)),
                            self.config.shell.max_output_bytes,
                            Arc::clone(&self.sandbox),
                        )
                        .with_read_only(skills.to_vec()),
                    ),
                    "file_read" => file(FileOp::Read),
                    "file_write" => file(FileOp::Write),
                    "file_edit" => file(FileOp::Edit),
                    "file_list" => file(FileOp::List),
                    "http_fetch" => self.fetch.clone(),
                    BROWSER_TOOL => {
                        Arc::new(BrowserTool::new(Arc::clone(&self.browsers), self.dir(&ws)))
                    }
                    TODO_TOOL => Arc::new(TodoTool),
                    _ => return None,
                })
            })
            .collect()
    }
}

impl Toolbox {
    /// The directory handle of `key`'s workspace (what the gateway itself writes through).
    pub fn workspace_dir(&self, key: &ConversationKey) -> WorkspaceDir {
        self.dir(&self.workspace(key))
    }

    /// The `send_file` tool for `key`, posting through `files`, when `[tools]` enables it.
    pub fn send_file(&self, key: &ConversationKey, files: FilePoster) -> Option<Arc<dyn Tool>> {
        let enabled = self.config.enabled.iter().any(|t| t == SEND_FILE_TOOL);
        enabled.then(|| -> Arc<dyn Tool> {
            Arc::new(SendFileTool::new(self.workspace_dir(key), files))
        })
    }

    fn dir(&self, ws: &Path) -> WorkspaceDir {
        WorkspaceDir::new(ws.to_path_buf(), self.sandbox.owner())
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
        let sandbox = SandboxConfig {
            supervisor: Some("/nonexistent".into()),
            ..SandboxConfig::default()
        };
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path();
        let tb = Toolbox::new(&ToolsConfig::default(), &sandbox, data);
        let chat = tb.workspace(&ConversationKey::new("slack", "C1"));
        let a = tb.workspace(&ConversationKey::new("slack", "C1").in_thread("1712.0001"));
        assert_eq!(chat, data.join("workspaces/slack/C1"));
        assert_eq!(a, data.join("workspaces/slack/C1@1712_0001"));
        assert!(
            !a.starts_with(&chat),
            "a thread's workspace is not inside its chat's"
        );
        let evil = tb.workspace(&ConversationKey::new("web", "../../etc"));
        assert!(evil.starts_with(data.join("workspaces/web/")), "{evil:?}");
        assert_eq!(
            tb.for_conversation(&ConversationKey::new("x", "y"), &[])
                .len(),
            4
        );
    }
}
