//! Sandboxed tool processes. The shell tool never starts a command itself: it asks
//! [`Sandbox`] for a command line that re-executes this binary as the supervisor
//! (`switchboard supervise`, hidden), which puts the command in its own namespaces, session
//! and process tree, drops root, and in the child applies resource limits, Landlock and
//! seccomp before it execs. What is enforced on this host is measured once at start-up
//! ([`Posture`]), logged, shown in `/readyz` and `switchboard check`; in `enforce` mode a
//! missing layer disables the shell instead of running it unconfined.
//!
//! Layout: `config` (`[sandbox]`), `launch` (the gateway's side: probe, command, stop),
//! `supervisor` (the re-executed helper), `layers` (ids, rlimits, Landlock), `mounts` (the
//! tool's own `/proc` and data directory), `cgroup` (bounds over a whole call), `seccomp`,
//! `workspace` (preparing one by descriptor), `posture`, `procs` (the kill loop's view of `/proc`), `server` (long-lived piped
//! processes: MCP stdio servers).

mod cgroup;
mod config;
mod launch;
mod layers;
mod mounts;
mod posture;
mod procs;
mod seccomp;
mod server;
mod supervisor;
mod workspace;

use std::path::PathBuf;
use std::process::ExitCode;

use serde::{Deserialize, Serialize};

pub use cgroup::CgroupPlan;
pub use config::{Limits, Mode, Network, SandboxConfig};
pub use launch::{Sandbox, StopOnDrop};
pub use posture::{Cgroups, Namespaces, Posture};
pub use server::{ServerAllowances, ServerProcess};

/// Exit code of a supervisor or tool process that refused to run (bad spec, a layer
/// missing in `enforce` mode).
pub const REFUSED: u8 = 125;

/// The environment variable that carries the [`Spec`] to the supervisor. Not an argument:
/// command lines are world-readable in `/proc`, environments are not.
pub const SPEC_VAR: &str = "SWITCHBOARD_SANDBOX_SPEC";

/// Run the supervisor (`switchboard supervise`, hidden) on `spec`, the [`Spec`] as JSON. Call
/// it before any thread exists (before the async runtime): it forks and creates user
/// namespaces, which need a single-threaded process.
pub fn supervise(spec: &str) -> ExitCode {
    ExitCode::from(supervisor::supervise(spec))
}

/// What the gateway tells the supervisor: one command and its confinement.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Spec {
    /// `bash -c` this; `None` probes the layers and prints the [`Posture`] as JSON.
    pub command: Option<String>,
    /// The conversation's workspace (absolute), the only writable place.
    pub workspace: PathBuf,
    /// `[sandbox] mode`.
    pub mode: Mode,
    /// `[sandbox] network`.
    pub network: Network,
    /// `[sandbox] extra_read`.
    pub extra_read: Vec<PathBuf>,
    /// `[sandbox] extra_write`.
    pub extra_write: Vec<PathBuf>,
    /// Paths the call may read and execute but never change, mounted read-only in its own
    /// view: the verified copies of the skills its profile may use.
    #[serde(default)]
    pub read_only: Vec<PathBuf>,
    /// `[sandbox.limits]`.
    pub limits: Limits,
    /// uid/gid to drop to (set when the gateway runs as root).
    pub drop_to: Option<(u32, u32)>,
    /// Try namespaces.
    pub namespaces: bool,
    /// The gateway's pid: the supervisor exits if its parent is already something else.
    pub parent: i32,
    /// `data_dir`: in the tool's mount namespace it holds only the workspace (and granted
    /// paths under it). Empty: left as it is.
    #[serde(default)]
    pub data_dir: PathBuf,
    /// What the tool's mount namespace covers: `data_dir`, or the highest directory above it
    /// that the tool's user may not search (see `mounts.rs`). Found by the gateway: inside
    /// the tool's user namespace the owners of unmapped files read as the overflow uid.
    /// Empty: `data_dir`.
    #[serde(default)]
    pub cover: PathBuf,
    /// Files no tool may read (the config file, env files beside it); canonical paths.
    #[serde(default)]
    pub hidden: Vec<PathBuf>,
    /// Where the call's cgroup goes, or why it gets none.
    #[serde(default = "no_cgroup")]
    pub cgroup: Result<CgroupPlan, String>,
}

fn no_cgroup() -> Result<CgroupPlan, String> {
    Err("not planned".to_owned())
}

/// `/readyz`'s sandbox entry: `ok` is false only when `enforce` mode disabled the shell;
/// the detail is the posture line. It never makes the gateway unready.
pub fn readyz_check(sandbox: &Sandbox) -> serde_json::Value {
    let posture = sandbox.posture();
    serde_json::json!({
        "name": "sandbox",
        "ok": posture.disabled_reason().is_none(),
        "detail": posture.to_string(),
        "posture": posture,
    })
}

/// `switchboard check`'s sandbox lines: the measured posture, then any warning.
pub fn check_report(config: &SandboxConfig, data_dir: &std::path::Path) {
    let sandbox = Sandbox::new(config, data_dir);
    println!("sandbox: {}", sandbox.posture());
    for warning in sandbox.warnings() {
        println!("warning: {warning}");
    }
}
