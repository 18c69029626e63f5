//! One MCP server's lifecycle: started on first use, its tool list kept, restarted when it
//! died (at once) or failed to start (after a backoff that doubles up to a minute), stopped
//! with the gateway. Calls are bounded by the server's timeout; every failure becomes a
//! sentence for the model, never a panic or a stuck turn.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceError;
use serde::Serialize;
use serde_json::{Value, json};
use switchboard_channel::Backoff;
use tokio::time::Instant;

use super::connect::{self, Launch, Session};
use crate::config::mcp::McpServerConfig;
use crate::sandbox::Sandbox;

/// Wait after a first failed start; doubles per failure in a row up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(2);
/// Longest wait between two start attempts of a server that keeps failing.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// One tool as the server describes it.
#[derive(Debug, Clone)]
pub struct ToolDef {
    /// Its name on the server.
    pub name: String,
    /// The server's description.
    pub description: String,
    /// JSON Schema of its arguments.
    pub schema: Value,
    /// The server's `readOnlyHint` (shown to approvers; never skips asking).
    pub read_only_hint: bool,
}

/// What `/readyz` and `check` show for a server.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Status {
    /// Not used yet (servers start on first use).
    NotStarted,
    /// Up, offering this many tools.
    Running {
        /// Tools offered after the filters.
        tools: usize,
    },
    /// It died; the next use starts it again.
    Exited,
    /// The last start failed; the next attempt waits for the backoff.
    Failed {
        /// Why.
        error: String,
    },
    /// Stopped with the gateway.
    Stopped,
}

/// The mutable part, behind an async lock so only one start runs at a time.
struct Slot {
    session: Option<Arc<Session>>,
    tools: Option<Arc<Vec<ToolDef>>>,
    /// The wait after the next failed start; reset by a start that succeeds.
    backoff: Backoff,
    retry_at: Option<Instant>,
    last_error: String,
    stopped: bool,
}

impl Slot {
    fn new() -> Self {
        Self {
            session: None,
            tools: None,
            backoff: Backoff::new(FIRST_BACKOFF, MAX_BACKOFF),
            retry_at: None,
            last_error: String::new(),
            stopped: false,
        }
    }
}

/// One configured server (or one conversation's instance of a `per_conversation` server).
pub struct Server {
    /// The `[mcp.servers.<name>]` name.
    pub name: String,
    config: Arc<McpServerConfig>,
    sandbox: Arc<Sandbox>,
    /// The stdio server's working directory.
    workspace: PathBuf,
    slot: tokio::sync::Mutex<Slot>,
    /// A copy of the state for `/readyz`, readable without waiting for a start.
    status: std::sync::Mutex<Status>,
}

impl Server {
    /// A server that starts on first use.
    pub fn new(
        name: &str,
        config: Arc<McpServerConfig>,
        sandbox: Arc<Sandbox>,
        workspace: PathBuf,
    ) -> Self {
        Self {
            name: name.to_owned(),
            config,
            sandbox,
            workspace,
            slot: tokio::sync::Mutex::new(Slot::new()),
            status: std::sync::Mutex::new(Status::NotStarted),
        }
    }

    /// Its configuration.
    pub fn config(&self) -> &McpServerConfig {
        &self.config
    }

    /// The current state.
    pub fn status(&self) -> Status {
        self.status
            .lock()
            .map(|s| s.clone())
            .unwrap_or(Status::Stopped)
    }

    fn set_status(&self, status: Status) {
        if let Ok(mut s) = self.status.lock() {
            *s = status;
        }
    }

    /// The tools it offers (after the filters): the list fetched when it last started, or
    /// start it now to fetch one.
    pub async fn tools(&self) -> Result<Arc<Vec<ToolDef>>, String> {
        {
            let slot = self.slot.lock().await;
            if let Some(tools) = &slot.tools {
                return Ok(Arc::clone(tools));
            }
        }
        self.session().await?;
        let slot = self.slot.lock().await;
        slot.tools
            .clone()
            .ok_or_else(|| "the server listed no tools".to_owned())
    }

    /// A live session, starting the server when it is not running.
    async fn session(&self) -> Result<Arc<Session>, String> {
        let mut slot = self.slot.lock().await;
        if slot.stopped {
            return Err("the gateway is shutting down".into());
        }
        if let Some(session) = &slot.session {
            if !session.exited() {
                return Ok(Arc::clone(session));
            }
            let why = session.explain("mcp server exited".into(), &self.config);
            tracing::warn!(server = %self.name, "{why}; starting it again");
            slot.session = None;
        }
        let now = Instant::now();
        if let Some(at) = slot.retry_at.filter(|at| *at > now) {
            let wait = (at - now).as_secs().max(1);
            return Err(format!(
                "it failed to start ({}); next attempt in {wait}s",
                slot.last_error
            ));
        }
        match self.start().await {
            Ok((session, tools)) => {
                let session = Arc::new(session);
                self.set_status(Status::Running { tools: tools.len() });
                tracing::info!(server = %self.name, tools = tools.len(), "mcp server started");
                slot.backoff.reset();
                slot.retry_at = None;
                slot.tools = Some(Arc::new(tools));
                slot.session = Some(Arc::clone(&session));
                Ok(session)
            }
            Err(error) => {
                slot.retry_at = Some(Instant::now() + slot.backoff.next_delay());
                slot.last_error = error.clone();
                tracing::warn!(server = %self.name, %error, "mcp server failed to start");
                self.set_status(Status::Failed {
                    error: error.clone(),
                });
                Err(error)
            }
        }
    }

    /// Open a session and list its tools.
    async fn start(&self) -> Result<(Session, Vec<ToolDef>), String> {
        let launch = Launch {
            sandbox: &self.sandbox,
            workspace: &self.workspace,
        };
        let session = connect::open(&self.name, &self.config, &launch).await?;
        let limit = Duration::from_secs(self.config.timeout_secs.max(1));
        let listed = tokio::time::timeout(limit, session.service.list_all_tools())
            .await
            .map_err(|_| format!("no tool list within {}s", limit.as_secs()))
            .and_then(|r| r.map_err(|e| format!("listing its tools failed: {e}")))
            .map_err(|e| session.explain(e, &self.config))?;
        let tools = listed
            .iter()
            .filter_map(|tool| tool_def(&serde_json::to_value(tool).ok()?))
            .filter(|tool| self.config.offers(&tool.name))
            .collect();
        Ok((session, tools))
    }

    /// Call `tool` with `args`; the result as the protocol's JSON (`content`, `isError`).
    pub async fn call(&self, tool: &str, args: Value) -> Result<Value, String> {
        let session = self
            .session()
            .await
            .map_err(|e| format!("unavailable: {e}"))?;
        let params = serde_json::from_value(json!({"name": tool, "arguments": args}))
            .map_err(|e| format!("the arguments cannot be sent: {e}"))?;
        let limit = Duration::from_secs(self.config.timeout_secs.max(1));
        let answer = tokio::time::timeout(limit, session.service.call_tool(params)).await;
        match answer {
            Err(_) => Err(format!(
                "no answer within {}s (the call was abandoned)",
                limit.as_secs()
            )),
            Ok(Ok(result)) => serde_json::to_value(result)
                .map_err(|e| format!("the server's answer could not be read: {e}")),
            Ok(Err(ServiceError::McpError(error))) => {
                Err(format!("the server refused the call: {}", error.message))
            }
            Ok(Err(other)) => {
                self.forget(&session).await;
                let what = if session.exited() {
                    "the server exited during the call"
                } else {
                    "the connection to the server was lost during the call"
                };
                Err(format!(
                    "{what} ({other}); it is restarted on the next call"
                ))
            }
        }
    }

    /// Drop `session` if it is still the current one (it failed), so the next use restarts.
    async fn forget(&self, session: &Arc<Session>) {
        let mut slot = self.slot.lock().await;
        if slot
            .session
            .as_ref()
            .is_some_and(|s| Arc::ptr_eq(s, session))
        {
            slot.session = None;
            self.set_status(Status::Exited);
            let why = session.explain("mcp server lost".into(), &self.config);
            tracing::warn!(server = %self.name, "{why}; restarting on next use");
        }
    }

    /// Stop the server for good (its process tree is killed when the session drops).
    pub async fn stop(&self) {
        let mut slot = self.slot.lock().await;
        slot.stopped = true;
        slot.session = None;
        self.set_status(Status::Stopped);
    }
}

/// A tool definition from the protocol's JSON (`name`, `description`, `inputSchema`,
/// `annotations.readOnlyHint`).
fn tool_def(tool: &Value) -> Option<ToolDef> {
    let name = tool.get("name")?.as_str()?.to_owned();
    let description = tool
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let schema = match tool.get("inputSchema") {
        Some(schema @ Value::Object(_)) => schema.clone(),
        _ => json!({"type": "object"}),
    };
    let read_only_hint = tool
        .pointer("/annotations/readOnlyHint")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Some(ToolDef {
        name,
        description,
        schema,
        read_only_hint,
    })
}
