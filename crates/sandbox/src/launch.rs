//! The gateway's side of the sandbox: measure the posture once at start-up, prepare
//! workspaces the sandbox user can use, build the supervisor's command line for each tool
//! call, and stop the whole tree when the call is over.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::config::{Mode, SandboxConfig};
use super::posture::Posture;
use super::workspace::TMP_DIR;
use super::{CgroupPlan, Spec};

/// The one start-up line that says what the sandbox enforces.
fn log_posture(posture: &Posture) {
    match posture.disabled_reason() {
        Some(reason) => tracing::error!(%posture, "sandbox: {reason}"),
        None if posture.mode == Mode::Enforce => tracing::info!(%posture, "sandbox enforced"),
        None => tracing::warn!(%posture, "sandbox not enforced"),
    }
}

/// How long the start-up probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Starts tool processes through the supervisor, and knows what that enforces.
#[derive(Debug)]
pub struct Sandbox {
    config: SandboxConfig,
    /// The supervisor binary, or why there is none.
    exe: Result<PathBuf, String>,
    /// uid/gid tool processes drop to (when the gateway is root).
    drop_to: Option<(u32, u32)>,
    /// Absolute `data_dir`.
    data_dir: PathBuf,
    /// Where each call's cgroup goes, or why calls get none.
    cgroup: Result<CgroupPlan, String>,
    /// What is enforced, once the probe has reported.
    posture: OnceLock<Posture>,
    /// The probe, running in a thread of its own from `new` on: it execs this binary, which
    /// costs milliseconds a start need not wait for while it opens the database. The first
    /// reader of the posture waits for it.
    probing: Mutex<Option<JoinHandle<Posture>>>,
}

impl Sandbox {
    /// Measure the posture for `config` with workspaces under `data_dir`, and log it once.
    /// Also makes this process non-dumpable, so no same-uid process can read its memory
    /// or `/proc/<pid>/environ`.
    pub fn new(config: &SandboxConfig, data_dir: &Path) -> Self {
        // SAFETY: prctl with integer arguments; affects only this process's dumpable flag.
        unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0) };
        // SAFETY: geteuid has no arguments and cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        let exe = match &config.supervisor {
            Some(path) => Ok(path.clone()),
            None => std::env::current_exe().map_err(|e| format!("no supervisor binary: {e}")),
        };
        let sandbox = Self {
            config: config.clone(),
            exe,
            drop_to: root.then_some((config.uid, config.gid)),
            data_dir: std::path::absolute(data_dir).unwrap_or_else(|_| data_dir.to_path_buf()),
            cgroup: match (config.cgroups, config.mode) {
                (_, Mode::Off) => Err("[sandbox] mode = \"off\"".to_owned()),
                (false, _) => Err("[sandbox] cgroups = false".to_owned()),
                (true, _) => super::cgroup::delegate(),
            },
            posture: OnceLock::new(),
            probing: Mutex::new(None),
        };
        let prober = sandbox.detached();
        let probing = std::thread::Builder::new()
            .name("sandbox-probe".into())
            .spawn(move || {
                let posture = prober.probe();
                log_posture(&posture);
                posture
            });
        match probing {
            Ok(handle) => *sandbox.probing.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle),
            Err(err) => {
                let posture = sandbox.unavailable(format!("cannot start the probe: {err}"));
                log_posture(&posture);
                let _ = sandbox.posture.set(posture);
            }
        }
        sandbox
    }

    /// A copy of the settings, without the posture, for the probe thread.
    fn detached(&self) -> Self {
        Self {
            config: self.config.clone(),
            exe: self.exe.clone(),
            drop_to: self.drop_to,
            data_dir: self.data_dir.clone(),
            cgroup: self.cgroup.clone(),
            posture: OnceLock::new(),
            probing: Mutex::new(None),
        }
    }

    /// The posture for when the probe could not run, with why.
    fn unavailable(&self, reason: String) -> Posture {
        Posture::unavailable(self.config.mode, self.config.network.clone(), reason)
    }

    /// What is enforced on this host.
    pub fn posture(&self) -> &Posture {
        self.posture.get_or_init(|| {
            let handle = self
                .probing
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            match handle.map(JoinHandle::join) {
                Some(Ok(posture)) => posture,
                Some(Err(_)) => self.unavailable("the probe thread panicked".into()),
                // Another reader took the handle and is joining it; `get_or_init` makes this
                // reader wait for that one, so this arm only runs if that reader panicked.
                None => self.unavailable("the probe was lost".into()),
            }
        })
    }

    /// Why `workspace` may not grow further, when it uses more than
    /// `[sandbox.limits] workspace_mb`.
    pub fn over_disk_limit(&self, workspace: &Path) -> Option<String> {
        let limit = self.config.limits.workspace_mb;
        if limit == 0 {
            return None;
        }
        let used = super::workspace::disk_usage(workspace);
        (used > limit.saturating_mul(1024 * 1024)).then(|| {
            format!(
                "the workspace uses {} MiB, over [sandbox.limits] workspace_mb = {limit}: delete files (rm) before writing more",
                used.div_ceil(1024 * 1024)
            )
        })
    }

    /// The owner files in workspaces must have (the sandbox user, when the gateway is root).
    pub fn owner(&self) -> Option<(u32, u32)> {
        self.drop_to
    }

    /// Warnings for `switchboard check`: `off` spelled out, or a layer missing.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.config.mode == Mode::Off {
            out.push("[sandbox] mode = \"off\": tool processes run unconfined".to_owned());
        } else if let Some(reason) = self.posture().disabled_reason() {
            out.push(reason);
        } else if !self.posture().missing.is_empty() {
            out.push(format!(
                "[sandbox] mode = \"best_effort\" runs without: {}",
                self.posture().missing.join("; ")
            ));
        }
        out
    }

    fn spec(&self, workspace: &Path, command: Option<&str>) -> Spec {
        Spec {
            command: command.map(str::to_owned),
            workspace: workspace.to_path_buf(),
            mode: self.config.mode,
            network: self.config.network.clone(),
            extra_read: self.config.extra_read.clone(),
            extra_write: self.config.extra_write.clone(),
            read_only: Vec::new(),
            limits: self.config.limits,
            drop_to: self.drop_to,
            namespaces: self.config.namespaces,
            parent: std::process::id() as i32,
            data_dir: self.data_dir.clone(),
            cover: super::mounts::cover_point(&self.data_dir, self.drop_to),
            hidden: self.config.hidden.clone(),
            cgroup: self.cgroup.clone(),
        }
    }

    /// Apply every layer in a throwaway child and read back what held. Where the tool
    /// cannot reach its workspace without a mount namespace to open a path (a root
    /// gateway), the directories on the way inside `data_dir` get `o+x` and the probe runs
    /// again: the posture then says whether that was enough.
    fn probe(&self) -> Posture {
        let first = self.probe_once(false);
        if self.drop_to.is_some() && first.workspace_unreachable.is_some() {
            return self.probe_once(true);
        }
        first
    }

    /// One probe, with `search` passed to [`super::workspace::prepare`].
    fn probe_once(&self, search: bool) -> Posture {
        let unavailable = |reason: String| self.unavailable(reason);
        let exe = match &self.exe {
            Ok(exe) => exe.clone(),
            Err(reason) => return unavailable(reason.clone()),
        };
        // A workspace of its own: no conversation's name starts with a dot.
        let probe_ws = self.data_dir.join("workspaces/.probe");
        let dir = match super::workspace::prepare(&probe_ws, &self.data_dir, self.drop_to, search) {
            Ok(dir) => dir,
            Err(err) => {
                return unavailable(format!("cannot prepare the workspaces directory: {err}"));
            }
        };
        let mut command = std::process::Command::new(&exe);
        command
            .arg("supervise")
            .current_dir(&dir)
            .env_clear()
            .env(
                super::SPEC_VAR,
                serde_json::to_string(&self.spec(&dir, None)).unwrap_or_default(),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        match run_bounded(command, PROBE_TIMEOUT) {
            Ok(out) => serde_json::from_slice(&out).unwrap_or_else(|_| {
                unavailable(format!(
                    "the supervisor {} did not report a posture: {}",
                    exe.display(),
                    String::from_utf8_lossy(&out)
                        .chars()
                        .take(200)
                        .collect::<String>()
                ))
            }),
            Err(err) => unavailable(format!("the supervisor {} failed: {err}", exe.display())),
        }
    }

    /// Whether tools reach the gateway's directories only by `o+x` on them: a root gateway
    /// whose tools get no private view of the data directory (no mount namespace).
    fn search(&self) -> bool {
        self.drop_to.is_some() && !self.posture().workspaces_private
    }

    /// Create `workspace` (and its `TMPDIR`) for the sandbox user without following any
    /// link a tool planted in it (see [`super::workspace`]). Returns its absolute path.
    pub fn prepare_workspace(&self, workspace: &Path) -> std::io::Result<PathBuf> {
        super::workspace::prepare(workspace, &self.data_dir, self.drop_to, self.search())
    }

    /// The supervisor binary, the prepared `workspace` and the spec of a process run there
    /// (without its command), or why no tool process may run on this host.
    pub(super) fn parts(&self, workspace: &Path) -> Result<(PathBuf, PathBuf, Spec), String> {
        if let Some(reason) = self.posture().disabled_reason() {
            return Err(reason);
        }
        let exe = self.exe.as_ref().map_err(Clone::clone)?;
        let ws = self
            .prepare_workspace(workspace)
            .map_err(|e| format!("cannot prepare the workspace: {e}"))?;
        let spec = self.spec(&ws, None);
        Ok((exe.clone(), ws, spec))
    }

    /// The supervisor command running `command` in `workspace`, with `read_only` readable
    /// (and executable) but mounted read-only, or why the shell is off.
    pub fn command(
        &self,
        workspace: &Path,
        command: &str,
        read_only: &[PathBuf],
    ) -> Result<tokio::process::Command, String> {
        if let Some(reason) = self.posture().disabled_reason() {
            return Err(reason);
        }
        let exe = self.exe.as_ref().map_err(Clone::clone)?;
        let ws = self
            .prepare_workspace(workspace)
            .map_err(|e| format!("cannot prepare the workspace: {e}"))?;
        if self.search() {
            for path in read_only {
                super::workspace::searchable_above(path, &self.data_dir)
                    .map_err(|e| format!("cannot open {} to tools: {e}", path.display()))?;
            }
        }
        let spec = Spec {
            read_only: read_only.to_vec(),
            ..self.spec(&ws, Some(command))
        };
        let mut cmd = tokio::process::Command::new(exe);
        cmd.arg("supervise")
            .current_dir(&ws)
            // Nothing of the gateway's environment (API keys, tokens) reaches the command.
            .env_clear()
            .env(
                super::SPEC_VAR,
                serde_json::to_string(&spec).unwrap_or_default(),
            )
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", &ws)
            .env("TMPDIR", ws.join(TMP_DIR))
            .env("LANG", "C.UTF-8")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        Ok(cmd)
    }
}

/// Asks a supervisor to kill its command's whole tree when dropped (SIGTERM to the
/// supervisor, which kills every descendant and exits), so a cancelled turn, a timeout or
/// a finished call leaves no process behind.
pub struct StopOnDrop(pub Option<u32>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            // SAFETY: kill(2) on the supervisor we spawned and have not reaped yet (the
            // tokio child handle still owns it), so the pid cannot have been reused.
            unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        }
    }
}

/// Run `command` to completion within `limit`, returning its stdout.
fn run_bounded(mut command: std::process::Command, limit: Duration) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut child = command.spawn()?;
    let started = Instant::now();
    loop {
        if child.try_wait()?.is_some() {
            break;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::other("timed out"));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut out = Vec::new();
    if let Some(mut stdout) = child.stdout.take() {
        stdout.read_to_end(&mut out)?;
    }
    if out.is_empty()
        && let Some(mut stderr) = child.stderr.take()
    {
        stderr.read_to_end(&mut out)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_supervisor_disables_the_shell_with_the_reason_everywhere() {
        let dir = tempfile::tempdir().unwrap();
        let config = SandboxConfig {
            supervisor: Some("/nonexistent/switchboard".into()),
            ..SandboxConfig::default()
        };
        let sandbox = Sandbox::new(&config, dir.path());
        let reason = sandbox.posture().disabled_reason().unwrap();
        assert!(reason.contains("/nonexistent/switchboard"), "{reason}");
        assert_eq!(sandbox.warnings(), vec![reason.clone()]);
        assert_eq!(
            sandbox.command(dir.path(), "true", &[]).unwrap_err(),
            reason
        );
    }

    #[test]
    fn off_must_be_spelled_out_and_is_warned_about() {
        let dir = tempfile::tempdir().unwrap();
        let config = SandboxConfig {
            mode: Mode::Off,
            supervisor: Some("/nonexistent/switchboard".into()),
            ..SandboxConfig::default()
        };
        let sandbox = Sandbox::new(&config, dir.path());
        assert!(sandbox.warnings()[0].contains("unconfined"));
        assert_eq!(SandboxConfig::default().mode, Mode::Enforce);
    }

    #[test]
    fn a_workspace_is_created_with_its_tmp_dir_and_owned_by_the_sandbox_user() {
        let dir = tempfile::tempdir().unwrap();
        let config = SandboxConfig {
            supervisor: Some("/nonexistent/switchboard".into()),
            ..SandboxConfig::default()
        };
        let sandbox = Sandbox::new(&config, dir.path());
        let ws = sandbox
            .prepare_workspace(&dir.path().join("workspaces/c/chat"))
            .unwrap();
        assert!(ws.is_absolute() && ws.join(TMP_DIR).is_dir());
        if let Some((uid, _)) = sandbox.owner() {
            use std::os::unix::fs::MetadataExt;
            assert_eq!(std::fs::metadata(&ws).unwrap().uid(), uid);
            let above = std::fs::metadata(dir.path()).unwrap().mode();
            assert_eq!(above & 0o001, 0o001, "data_dir is searchable");
        }
    }
}
