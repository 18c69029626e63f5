//! The `shell` tool: `bash -c` in the conversation's workspace through the sandbox
//! supervisor (see `crate::sandbox`), with a cleared environment, a timeout, an output cap,
//! and its whole process tree killed when it times out, finishes, or the turn is cancelled
//! (the future dropped).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::agent::{Tool, ToolResult};
use crate::sandbox::{REFUSED, Sandbox, StopOnDrop};

/// Marker appended when output was cut.
pub const TRUNCATED: &str = "[output truncated]";

/// How long to keep reading after the command exited (background children holding pipes).
const DRAIN_GRACE: Duration = Duration::from_secs(2);
/// How long a stopped supervisor gets to kill its tree before it is killed itself.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// Runs shell commands in one workspace.
pub struct ShellTool {
    workspace: PathBuf,
    timeout: Duration,
    max_output: usize,
    sandbox: Arc<Sandbox>,
    /// Paths commands may read and execute but not change (the profile's skills).
    read_only: Vec<PathBuf>,
}

impl ShellTool {
    /// A shell confined to `workspace` by `sandbox`.
    pub fn new(
        workspace: PathBuf,
        timeout: Duration,
        max_output: usize,
        sandbox: Arc<Sandbox>,
    ) -> Self {
        Self {
            workspace,
            timeout,
            max_output,
            sandbox,
            read_only: Vec::new(),
        }
    }

    /// Also let commands read and execute `paths`, mounted read-only.
    pub fn with_read_only(mut self, paths: Vec<PathBuf>) -> Self {
        self.read_only = paths;
        self
    }
}

#[async_trait]
impl Tool for ShellTool {
    fn name(&self) -> &str {
        "shell"
    }

    fn description(&self) -> &str {
        "Run a shell command (bash -c) in the conversation's workspace directory. Returns the exit code and output."
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line to run."},
                "timeout_secs": {"type": "integer", "minimum": 1, "description": "Stop it after this many seconds."}
            },
            "required": ["command"],
            "additionalProperties": false
        })
    }

    async fn execute(&self, args: Value) -> ToolResult {
        let command = args["command"].as_str().unwrap_or_default();
        let timeout = args["timeout_secs"]
            .as_u64()
            .map_or(self.timeout, |s| Duration::from_secs(s).min(self.timeout));
        let cmd = match self
            .sandbox
            .command(&self.workspace, command, &self.read_only)
        {
            Ok(cmd) => cmd,
            Err(reason) => return ToolResult::err(reason),
        };
        let result = match self.run(cmd, timeout).await {
            Ok(result) => result,
            Err(err) => return ToolResult::err(format!("could not start the command: {err}")),
        };
        self.with_disk_check(result).await
    }
}

impl ShellTool {
    /// `result`, turned into an error that says so when the call left the workspace over
    /// its disk limit (rlimits bound one file, not the sum of them).
    async fn with_disk_check(&self, result: ToolResult) -> ToolResult {
        let (sandbox, ws) = (Arc::clone(&self.sandbox), self.workspace.clone());
        let over = tokio::task::spawn_blocking(move || sandbox.over_disk_limit(&ws))
            .await
            .ok()
            .flatten();
        match over {
            Some(reason) => ToolResult::failed(
                result.output,
                match result.error {
                    Some(own) => format!("{own}; {reason}"),
                    None => reason,
                },
            ),
            None => result,
        }
    }

    async fn run(
        &self,
        mut cmd: tokio::process::Command,
        timeout: Duration,
    ) -> std::io::Result<ToolResult> {
        let mut child = cmd.spawn()?;
        // Dropped (turn cancelled) or timed out: the supervisor kills the whole tree.
        let mut stop = StopOnDrop(child.id());
        let cap = self.max_output;
        let stdout = tokio::spawn(read_capped(child.stdout.take(), cap));
        let stderr = tokio::spawn(read_capped(child.stderr.take(), cap));
        let status = tokio::time::timeout(timeout, child.wait()).await;
        if status.is_ok() {
            stop.0 = None; // reaped: the supervisor already cleaned up, and its pid is free
        } else {
            drop(stop);
            if tokio::time::timeout(STOP_GRACE, child.wait())
                .await
                .is_err()
            {
                child.start_kill()?;
            }
        }
        let read = async {
            let (out, err) = tokio::join!(stdout, stderr);
            (out.unwrap_or_default(), err.unwrap_or_default())
        };
        let (out, err) = tokio::time::timeout(DRAIN_GRACE, read)
            .await
            .unwrap_or_default();
        let text = combine(out, err, cap);
        Ok(match status {
            Err(_) => ToolResult::failed(
                text,
                format!(
                    "timed out after {} s; the command was killed",
                    timeout.as_secs()
                ),
            ),
            Ok(Err(err)) => ToolResult::err(format!("waiting for the command failed: {err}")),
            Ok(Ok(status)) => finished(status, text),
        })
    }
}

/// stdout, then stderr under a marker, cut to `cap` with [`TRUNCATED`] if anything was lost.
fn combine((out, out_cut): (Vec<u8>, bool), (err, err_cut): (Vec<u8>, bool), cap: usize) -> String {
    let mut text = String::from_utf8_lossy(&out).into_owned();
    if !err.is_empty() {
        text.push_str("\n[stderr]\n");
        text.push_str(&String::from_utf8_lossy(&err));
    }
    if out_cut || err_cut || text.len() > cap {
        let mut end = cap.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('\n');
        text.push_str(TRUNCATED);
    }
    text
}

/// The result of a command that ran to its end.
fn finished(status: std::process::ExitStatus, text: String) -> ToolResult {
    if status.success() {
        return ToolResult::ok(format!("exit code: 0\n{text}"));
    }
    if status.code() == Some(i32::from(REFUSED)) && text.contains("switchboard sandbox") {
        return ToolResult::err(format!(
            "the sandbox refused to run the command: {}",
            text.trim()
        ));
    }
    ToolResult::failed(
        text,
        match status.code() {
            Some(code) => format!("exit code: {code}"),
            None => "killed by a signal".to_owned(),
        },
    )
}

/// Read all of `pipe`, keeping at most `cap` bytes; the flag says whether more came.
async fn read_capped(pipe: Option<impl AsyncRead + Unpin>, cap: usize) -> (Vec<u8>, bool) {
    let Some(mut pipe) = pipe else {
        return (Vec::new(), false);
    };
    let mut kept = Vec::new();
    let mut cut = false;
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => return (kept, cut),
            Ok(n) => {
                let room = cap.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
                cut |= n > room;
            }
        }
    }
}

// The tests run the real supervisor binary, so they live in tests/e2e/sandbox.rs.
