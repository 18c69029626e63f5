//! The `shell` tool: `sh -c` in the conversation's workspace, with a cleared environment, a
//! timeout, an output cap, and its whole process group killed when it times out, finishes,
//! or the turn is cancelled (the future dropped).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::agent::{Tool, ToolResult};

/// Marker appended when output was cut.
pub const TRUNCATED: &str = "[output truncated]";

/// How long to keep reading after the command exited (background children holding pipes).
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Runs shell commands in one workspace.
pub struct ShellTool {
    workspace: PathBuf,
    timeout: Duration,
    max_output: usize,
}

impl ShellTool {
    /// A shell confined to `workspace`.
    pub fn new(workspace: PathBuf, timeout: Duration, max_output: usize) -> Self {
        Self {
            workspace,
            timeout,
            max_output,
        }
    }
}

/// Kills a process group when dropped, so a cancelled turn leaves no process behind.
struct GroupKill(i32);

impl Drop for GroupKill {
    fn drop(&mut self) {
        // SAFETY: kill(2) with a negative pid signals the group we created with
        // process_group(0); it touches no memory and an exited group just yields ESRCH.
        unsafe {
            libc::kill(-self.0, libc::SIGKILL);
        }
    }
}

#[async_trait]
impl Tool for ShellTool {
    fn name(&self) -> &str {
        "shell"
    }

    fn description(&self) -> &str {
        "Run a shell command (sh -c) in the conversation's workspace directory. Returns the exit code and output."
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
        match self.run(command, timeout).await {
            Ok(result) => result,
            Err(err) => ToolResult::err(format!("could not start the command: {err}")),
        }
    }
}

impl ShellTool {
    async fn run(&self, command: &str, timeout: Duration) -> std::io::Result<ToolResult> {
        tokio::fs::create_dir_all(&self.workspace).await?;
        let mut child = tokio::process::Command::new("sh")
            .arg("-c")
            .arg(command)
            .current_dir(&self.workspace)
            // Nothing of the gateway's environment (API keys, tokens) reaches the command.
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", &self.workspace)
            .env("LANG", "C.UTF-8")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()?;
        let group = GroupKill(child.id().map_or(0, |p| p as i32));
        let cap = self.max_output;
        let stdout = tokio::spawn(read_capped(child.stdout.take(), cap));
        let stderr = tokio::spawn(read_capped(child.stderr.take(), cap));
        let status = tokio::time::timeout(timeout, child.wait()).await;
        drop(group); // stragglers in the group die, so the pipes close
        let read = async {
            let (out, err) = tokio::join!(stdout, stderr);
            (out.unwrap_or_default(), err.unwrap_or_default())
        };
        let ((out, out_cut), (err, err_cut)) = tokio::time::timeout(DRAIN_GRACE, read)
            .await
            .unwrap_or_default();
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
        Ok(match status {
            Err(_) => ToolResult {
                success: false,
                output: text,
                error: Some(format!(
                    "timed out after {} s; the command was killed",
                    timeout.as_secs()
                )),
            },
            Ok(Err(err)) => ToolResult::err(format!("waiting for the command failed: {err}")),
            Ok(Ok(status)) if status.success() => ToolResult::ok(format!("exit code: 0\n{text}")),
            Ok(Ok(status)) => ToolResult {
                success: false,
                output: text,
                error: Some(match status.code() {
                    Some(code) => format!("exit code: {code}"),
                    None => "killed by a signal".to_owned(),
                }),
            },
        })
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(dir: &tempfile::TempDir, max_output: usize) -> ShellTool {
        ShellTool::new(dir.path().to_path_buf(), Duration::from_secs(5), max_output)
    }

    #[tokio::test]
    async fn a_command_runs_in_the_workspace_and_reports_its_exit_code() {
        let dir = tempfile::tempdir().unwrap();
        let ok = shell(&dir, 1024)
            .execute(json!({"command": "pwd; echo hi >&2"}))
            .await;
        assert!(ok.success, "{ok:?}");
        assert!(
            ok.output.contains(&dir.path().display().to_string())
                && ok.output.contains("[stderr]\nhi")
        );
        let bad = shell(&dir, 1024)
            .execute(json!({"command": "exit 3"}))
            .await;
        assert_eq!(bad.error.as_deref(), Some("exit code: 3"));
    }

    #[tokio::test]
    async fn the_gateway_environment_is_not_inherited() {
        // SAFETY: single-threaded test setup; no other thread reads the environment here.
        unsafe { std::env::set_var("SWITCHBOARD_TEST_SECRET_VAR", "leak") };
        let dir = tempfile::tempdir().unwrap();
        let out = shell(&dir, 1024).execute(json!({"command": "env"})).await;
        assert!(
            !out.output.contains("SWITCHBOARD_TEST_SECRET_VAR"),
            "{}",
            out.output
        );
    }

    #[tokio::test]
    async fn output_beyond_the_cap_is_cut_with_a_marker() {
        let dir = tempfile::tempdir().unwrap();
        let out = shell(&dir, 100)
            .execute(json!({"command": "yes | head -c 100000"}))
            .await;
        assert!(out.output.ends_with(TRUNCATED), "{}", out.output);
        assert!(out.output.len() < 200);
    }

    #[tokio::test]
    async fn a_command_past_its_timeout_is_killed_with_its_children() {
        let dir = tempfile::tempdir().unwrap();
        let started = std::time::Instant::now();
        let out = shell(&dir, 1024)
            .execute(json!({"command": "sleep 30 & echo $! > bg.pid; sleep 30", "timeout_secs": 1}))
            .await;
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(out.error.unwrap().contains("timed out"));
        let pid = std::fs::read_to_string(dir.path().join("bg.pid")).unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        // Gone, or a zombie waiting for init to reap it: either way no longer running.
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
        let state = stat
            .rsplit(')')
            .next()
            .and_then(|s| s.split_whitespace().next());
        assert!(
            matches!(state, None | Some("Z" | "X")),
            "background child survived: {stat}"
        );
    }
}
