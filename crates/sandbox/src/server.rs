//! The long-lived launch mode: a server process (an MCP stdio server) started through the
//! same supervisor and layers as a shell command, but with its stdin and stdout piped to the
//! gateway and kept running across calls. The environment is cleared like the shell's, then
//! the server's own configured variables are added; its allowances (extra paths, network)
//! are its own. Dropping the [`ServerProcess`] stops the whole tree.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};

use super::config::{Limits, Network};
use super::launch::{Sandbox, StopOnDrop};
use super::workspace::TMP_DIR;

/// What one server may do beyond a shell command: its table's extra paths and network.
#[derive(Debug, Clone, Default)]
pub struct ServerAllowances {
    /// Paths it may read and execute (e.g. its `node_modules`).
    pub extra_read: Vec<PathBuf>,
    /// Paths it may write besides its working directory.
    pub extra_write: Vec<PathBuf>,
    /// TCP it may open.
    pub network: Network,
    /// Its own limits instead of `[sandbox.limits]` (a browser lives longer and runs more
    /// threads than a shell command).
    pub limits: Option<Limits>,
    /// Speak over descriptors 3 (its input, the stdin pipe) and 4 (its output, the stdout
    /// pipe) with stdin and stdout on `/dev/null`: Chromium's `--remote-debugging-pipe`.
    pub pipe_fds: bool,
}

/// A running server: its supervisor child, stopped (tree and all) when dropped.
pub struct ServerProcess {
    /// Owned so the pid in `stop` is not reaped (and reused) while we may signal it.
    child: Child,
    stop: StopOnDrop,
}

impl ServerProcess {
    /// Whether the server (its supervisor) has exited.
    pub fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// Wait until the server (its supervisor, which outlives nothing it started) exits.
    pub async fn wait(&mut self) {
        let _ = self.child.wait().await;
    }

    /// Its stderr pipe (once): the caller drains it, and may keep the last lines as the
    /// cause of a failed start.
    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.child.stderr.take()
    }

    /// The supervisor's pid.
    pub fn id(&self) -> Option<u32> {
        self.stop.0
    }
}

/// The pieces of a started server: the process and the two pipes the protocol runs over.
pub type Started = (ServerProcess, ChildStdout, ChildStdin);

impl Sandbox {
    /// Start `argv` as a long-lived server in `workspace` with `env` added to the cleared
    /// environment, confined like a shell command plus `allow`. In `enforce` mode with a
    /// layer missing it is refused with the same reason the shell gives. Its stderr is left
    /// piped for the caller ([`ServerProcess::take_stderr`]), who must drain it.
    pub fn spawn_server(
        &self,
        workspace: &Path,
        argv: &[String],
        env: &[(String, String)],
        allow: &ServerAllowances,
    ) -> Result<Started, String> {
        let (exe, ws, mut spec) = self.parts(workspace)?;
        let line = shlex::try_join(argv.iter().map(String::as_str))
            .map_err(|e| format!("cannot quote the server's command line: {e}"))?;
        spec.command = Some(if allow.pipe_fds {
            format!("exec {line} 3<&0 4>&1 </dev/null >/dev/null")
        } else {
            format!("exec {line}")
        });
        if let Some(limits) = allow.limits {
            spec.limits = limits;
        }
        spec.extra_read.extend(allow.extra_read.iter().cloned());
        spec.extra_write.extend(allow.extra_write.iter().cloned());
        spec.network = allow.network.clone();
        let mut cmd = tokio::process::Command::new(exe);
        cmd.arg("supervise")
            .current_dir(&ws)
            .env_clear()
            .env(
                super::SPEC_VAR,
                serde_json::to_string(&spec).unwrap_or_default(),
            )
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", &ws)
            .env("TMPDIR", ws.join(TMP_DIR))
            .env("LANG", "C.UTF-8")
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start the supervisor: {e}"))?;
        let stop = StopOnDrop(child.id());
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            return Err("the server's pipes were not set up".into());
        };
        Ok((ServerProcess { child, stop }, stdout, stdin))
    }
}
