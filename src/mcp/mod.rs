//! Model Context Protocol servers as tool sources (`[mcp.servers.<name>]`). Each server's
//! tools reach the agent as `<server>__<tool>` and pass the policy gate like any other tool
//! (they ask unless an allow rule names them: `mcp(github__*)`); their output is scrubbed
//! and offloaded by the agent loop like shell output.
//!
//! Lifecycle: a server starts on first use, which is the first turn that needs the tool
//! list (the model must see the tools before it can call them, and starting at boot would
//! slow every start-up for servers that may never be used). One process per server shared
//! by every conversation, or one per conversation (`per_conversation = true`, working in
//! that conversation's workspace). A server that died is restarted by its next use; one that
//! fails to start waits out a doubling backoff. All stop with the gateway.
//!
//! Layout: `connect` (stdio through the sandbox, streamable HTTP), `server` (one server's
//! lifecycle and calls), `stderr` (a stdio server's last words, the cause of a failure),
//! `paths` (what `check` can tell before starting one: a command or script the sandbox
//! user cannot reach), `tool` (the [`Tool`] the agent sees, results as text).

mod connect;
mod paths;
mod server;
mod stderr;
mod tool;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dashmap::DashMap;
use serde_json::{Value, json};
use switchboard_channel::ConversationKey;
use tokio_util::sync::CancellationToken;

pub use paths::{ToolUser, path_warnings};
pub use server::{Server, Status, ToolDef};
pub use tool::{MAX_RESULT_BYTES, McpTool, render};

use crate::agent::Tool;
use crate::config::mcp::{McpConfig, McpServerConfig};
use crate::metrics::Metrics;
use crate::sandbox::Sandbox;

/// One configured server: its shared instance, or its per-conversation instances.
struct Entry {
    name: String,
    config: Arc<McpServerConfig>,
    shared: Option<Arc<Server>>,
    per_conversation: DashMap<ConversationKey, Arc<Server>>,
}

/// Every configured MCP server.
pub struct Mcp {
    entries: Vec<Entry>,
    sandbox: Arc<Sandbox>,
    metrics: Option<Arc<Metrics>>,
}

impl Mcp {
    /// The servers of `config`; shared stdio servers work in `workspaces/.mcp-<name>`
    /// under `data_dir` (no conversation's workspace starts with a dot).
    pub fn new(config: &McpConfig, sandbox: Arc<Sandbox>, data_dir: &Path) -> Self {
        let root = data_dir.join("workspaces");
        let entries = config
            .servers
            .iter()
            .map(|(name, server)| {
                let config = Arc::new(server.clone());
                let shared = (!server.per_conversation).then(|| {
                    let ws = root.join(format!(".mcp-{name}"));
                    Arc::new(Server::new(
                        name,
                        Arc::clone(&config),
                        Arc::clone(&sandbox),
                        ws,
                    ))
                });
                Entry {
                    name: name.clone(),
                    config,
                    shared,
                    per_conversation: DashMap::new(),
                }
            })
            .collect();
        Self {
            entries,
            sandbox,
            metrics: None,
        }
    }

    /// Count calls and errors per server in `metrics`.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Whether any server is configured.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Stop every server when `shutdown` fires.
    pub fn stop_on(self: &Arc<Self>, shutdown: &CancellationToken) {
        let mcp = Arc::clone(self);
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            shutdown.cancelled().await;
            mcp.stop().await;
        });
    }

    /// Stop every server (their process trees are killed).
    pub async fn stop(&self) {
        for server in self.all() {
            server.stop().await;
        }
    }

    fn all(&self) -> Vec<Arc<Server>> {
        let mut out = Vec::new();
        for entry in &self.entries {
            out.extend(entry.shared.iter().cloned());
            out.extend(entry.per_conversation.iter().map(|s| Arc::clone(s.value())));
        }
        out
    }

    fn server_for(&self, entry: &Entry, key: &ConversationKey, workspace: &Path) -> Arc<Server> {
        if let Some(shared) = &entry.shared {
            return Arc::clone(shared);
        }
        let made = entry
            .per_conversation
            .entry(key.clone())
            .or_insert_with(|| {
                let (config, sandbox) = (Arc::clone(&entry.config), Arc::clone(&self.sandbox));
                Arc::new(Server::new(
                    &entry.name,
                    config,
                    sandbox,
                    workspace.to_path_buf(),
                ))
            });
        Arc::clone(made.value())
    }

    /// The tools of every server for `key`'s turn (starting servers not yet started); a
    /// server that cannot start is left out of this turn and logged.
    pub async fn tools_for(&self, key: &ConversationKey, workspace: &Path) -> Vec<Arc<dyn Tool>> {
        let servers: Vec<Arc<Server>> = self
            .entries
            .iter()
            .map(|e| self.server_for(e, key, workspace))
            .collect();
        let lists = futures::future::join_all(servers.iter().map(|s| s.tools())).await;
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        for (server, list) in servers.iter().zip(lists) {
            match list {
                Ok(list) => tools.extend(list.iter().map(|def| -> Arc<dyn Tool> {
                    Arc::new(McpTool::new(
                        Arc::clone(server),
                        def.clone(),
                        self.metrics.clone(),
                    ))
                })),
                Err(error) => {
                    tracing::warn!(server = %server.name, %error, "mcp tools left out of this turn");
                }
            }
        }
        tools
    }

    /// `/readyz` entries: one per server with its state (never makes the gateway unready).
    pub fn readyz_checks(&self) -> Vec<Value> {
        self.entries
            .iter()
            .map(|entry| {
                let status = match &entry.shared {
                    Some(server) => serde_json::to_value(server.status()).unwrap_or_default(),
                    None => json!({"state": "per_conversation",
                                   "instances": entry.per_conversation.len()}),
                };
                let ok = !matches!(status.get("state").and_then(Value::as_str), Some("failed"));
                json!({"name": format!("mcp:{}", entry.name), "ok": ok, "detail": status})
            })
            .collect()
    }
}

/// `switchboard check --probe`: start each server once, list its tools, stop it. Returns
/// one line per server, or per tool under it.
pub async fn probe_lines(
    config: &McpConfig,
    sandbox: Arc<Sandbox>,
    data_dir: &Path,
) -> Vec<String> {
    let mut lines = Vec::new();
    for (name, server) in &config.servers {
        let ws: PathBuf = data_dir.join("workspaces").join(format!(".mcp-{name}"));
        let probe = Server::new(name, Arc::new(server.clone()), Arc::clone(&sandbox), ws);
        match probe.tools().await {
            Ok(tools) => {
                lines.push(format!("mcp server {name}: ok, {} tools", tools.len()));
                for tool in tools.iter() {
                    let hint = if tool.read_only_hint {
                        " (read-only hint)"
                    } else {
                        ""
                    };
                    lines.push(format!("  {name}__{}{hint}", tool.name));
                }
            }
            Err(error) => lines.push(format!("mcp server {name}: FAILED: {error}")),
        }
        probe.stop().await;
    }
    lines
}
