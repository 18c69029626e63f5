//! What the sandbox actually enforces on this host, measured by applying every layer in a
//! probe child at start-up (and re-checked before every exec). One line of it goes to the
//! start-up log, all of it to `/readyz` and `switchboard check`.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::config::{Limits, Mode, Network};

/// Which namespaces a tool process tree runs in.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Namespaces {
    /// A user and a PID namespace of its own: per-call process limit, the gateway invisible.
    UserPid,
    /// A PID namespace (root without user namespaces).
    Pid,
    /// None; the supervisor is a subreaper and kills descendants itself.
    None,
}

/// Whether each call runs in a cgroup of its own (memory and process bounds over the call).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Cgroups {
    /// Yes, in this cgroup hierarchy (`"v2"` or `"v1"`).
    PerCall(String),
    /// No, for this reason (not delegated to the gateway, `cgroups = false`, …).
    Off(String),
}

/// The measured sandbox posture.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
pub struct Posture {
    /// `[sandbox] mode`.
    pub mode: Mode,
    /// Landlock ABI in effect (0 when unavailable).
    pub landlock_abi: u8,
    /// Whether every requested Landlock right is enforced by this kernel.
    pub landlock_full: bool,
    /// TCP connect/bind rules are enforced (Landlock ABI 4).
    pub tcp_rules: bool,
    /// Signals and abstract unix sockets are scoped to the sandbox (Landlock ABI 6).
    pub scoped: bool,
    /// The seccomp filter is installed.
    pub seccomp: bool,
    /// Namespaces in use.
    pub namespaces: Namespaces,
    /// `/proc` shows only the tool's own processes (a private mount in its PID namespace).
    pub private_proc: bool,
    /// The data directory holds only the tool's own workspace (other conversations',
    /// the database, checkpoints are not there to chmod or touch).
    pub workspaces_private: bool,
    /// Memory and process bounds over a whole call.
    pub cgroups: Cgroups,
    /// How many of the gateway's own files (config, env files) the probe tried to open.
    pub hidden_checked: usize,
    /// Those of them a tool could open: any entry is a missing layer.
    pub hidden_readable: Vec<std::path::PathBuf>,
    /// No unix datagram or other non-stream socket can be made (seccomp, network not full).
    pub datagrams_off: bool,
    /// Why a tool cannot reach its workspace by the path it is given (its `HOME`, its
    /// `TMPDIR`, the paths the model reads), as the probe found running confined; `None`
    /// when it can. Then no command could do anything, so it is a missing layer.
    #[serde(default)]
    pub workspace_unreachable: Option<String>,
    /// uid tool processes run as.
    pub uid: u32,
    /// Resource limits applied.
    pub limits: Option<Limits>,
    /// `[sandbox] network`.
    pub network: Network,
    /// Layers that are not in force, each with its reason. In `enforce` mode any entry
    /// disables the shell tool.
    pub missing: Vec<String>,
}

impl Posture {
    /// A posture for when the probe itself could not run.
    pub fn unavailable(mode: Mode, network: Network, reason: String) -> Self {
        Self {
            mode,
            landlock_abi: 0,
            landlock_full: false,
            tcp_rules: false,
            scoped: false,
            seccomp: false,
            namespaces: Namespaces::None,
            private_proc: false,
            workspaces_private: false,
            cgroups: Cgroups::Off("not measured".to_owned()),
            hidden_checked: 0,
            hidden_readable: Vec::new(),
            datagrams_off: false,
            workspace_unreachable: None,
            uid: 0,
            limits: None,
            network,
            missing: vec![reason],
        }
    }

    /// Why the shell tool is disabled, if it is (`enforce` mode with a missing layer).
    pub fn disabled_reason(&self) -> Option<String> {
        (self.mode == Mode::Enforce && !self.missing.is_empty()).then(|| {
            format!(
                "the shell is disabled: [sandbox] mode = \"enforce\" but {}",
                self.missing.join("; ")
            )
        })
    }

    /// Fill `missing` from the measured layers; `root` says whether the gateway runs as root.
    pub fn judge(&mut self, root: bool) {
        let mut missing = Vec::new();
        if self.mode == Mode::Off {
            self.missing = missing;
            return;
        }
        if self.landlock_abi == 0 {
            missing.push("Landlock is not available in this kernel".to_owned());
        }
        if matches!(self.network, Network::Ports(_)) && !self.tcp_rules {
            missing.push("TCP port rules need Landlock ABI 4".to_owned());
        }
        let signals_isolated =
            self.scoped || self.namespaces != Namespaces::None || (root && self.uid != 0);
        if !signals_isolated {
            missing.push(
                "signals to the gateway are not blocked (needs Landlock ABI 6, a PID namespace or a separate uid)"
                    .to_owned(),
            );
        }
        if !self.seccomp {
            missing.push("the seccomp filter could not be installed".to_owned());
        }
        if self.limits.is_none() {
            missing.push("resource limits could not be set".to_owned());
        }
        if !self.hidden_readable.is_empty() {
            let files: Vec<String> = self
                .hidden_readable
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            missing.push(format!(
                "tools can read the gateway's own files ({}): move them out of the paths tools read, or out of extra_read/extra_write",
                files.join(", ")
            ));
        }
        if let Some(why) = &self.workspace_unreachable {
            missing.push(why.clone());
        }
        if root && self.uid == 0 {
            missing.push("tool processes would run as root".to_owned());
        }
        self.missing = missing;
    }
}

impl fmt::Display for Posture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = match self.mode {
            Mode::Enforce => "enforce",
            Mode::BestEffort => "best_effort",
            Mode::Off => return write!(f, "mode off: tools run unconfined"),
        };
        write!(f, "mode {mode}; ")?;
        match self.landlock_abi {
            0 => write!(f, "landlock unavailable; ")?,
            abi => write!(
                f,
                "landlock ABI {abi} {} (tcp rules {}, signal/abstract-socket scopes {}); ",
                if self.landlock_full {
                    "fully enforced"
                } else {
                    "partially enforced"
                },
                on_off(self.tcp_rules),
                on_off(self.scoped)
            )?,
        }
        let ns = match (self.namespaces, self.private_proc) {
            (Namespaces::UserPid, true) => "user+pid+mount (private /proc)",
            (Namespaces::UserPid, false) => "user+pid (host /proc)",
            (Namespaces::Pid, true) => "pid+mount (private /proc)",
            (Namespaces::Pid, false) => "pid (host /proc)",
            (Namespaces::None, _) => "none (subreaper)",
        };
        write!(
            f,
            "seccomp {}; namespaces {ns}; uid {}; ",
            on_off(self.seccomp),
            self.uid
        )?;
        self.fmt_bounds(f)?;
        match &self.network {
            Network::Off => write!(f, "network off")?,
            Network::Full => write!(f, "network full")?,
            Network::Ports(p) => write!(f, "network tcp ports {p:?} (out only)")?,
        }
        let datagrams = if self.datagrams_off { "off" } else { "on" };
        write!(f, "; unix datagrams {datagrams}")?;
        if !self.missing.is_empty() {
            write!(f, "; missing: {}", self.missing.join("; "))?;
        }
        Ok(())
    }
}

impl Posture {
    /// The files, limits and cgroups part of the line.
    fn fmt_bounds(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shared = match (self.workspaces_private, self.namespaces) {
            (true, _) => "workspaces private",
            (false, Namespaces::None) => "workspaces shared (no mount namespace)",
            // The supervisor's stderr says why (in the gateway's log for a call).
            (false, _) => "workspaces shared (the data directory could not be covered)",
        };
        write!(f, "{shared}; ")?;
        match self.hidden_readable.len() {
            0 => write!(
                f,
                "config unreadable ({} files checked); ",
                self.hidden_checked
            )?,
            n => write!(f, "config READABLE ({n} files); ")?,
        }
        match &self.limits {
            Some(l) => write!(
                f,
                "limits cpu {}s data {} MiB fsize {} MiB nofile {} nproc {} workspace {} MiB; ",
                l.cpu_secs, l.memory_mb, l.file_size_mb, l.open_files, l.processes, l.workspace_mb
            )?,
            None => write!(f, "limits none; ")?,
        }
        match &self.cgroups {
            Cgroups::PerCall(version) => write!(f, "cgroup memory+pids per call ({version}); "),
            Cgroups::Off(reason) => write!(f, "cgroups off ({reason}); "),
        }
    }
}

fn on_off(on: bool) -> &'static str {
    if on { "on" } else { "off" }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> Posture {
        Posture {
            mode: Mode::Enforce,
            landlock_abi: 6,
            landlock_full: true,
            tcp_rules: true,
            scoped: true,
            seccomp: true,
            namespaces: Namespaces::UserPid,
            private_proc: true,
            workspaces_private: true,
            cgroups: Cgroups::PerCall("v2".into()),
            hidden_checked: 1,
            hidden_readable: Vec::new(),
            datagrams_off: true,
            workspace_unreachable: None,
            uid: 65534,
            limits: Some(Limits::default()),
            network: Network::Off,
            missing: Vec::new(),
        }
    }

    #[test]
    fn a_complete_posture_leaves_the_shell_enabled() {
        let mut p = full();
        p.judge(true);
        assert_eq!(p.disabled_reason(), None);
        assert!(
            p.to_string().contains("landlock ABI 6 fully enforced"),
            "{p}"
        );
    }

    #[test]
    fn enforce_mode_disables_the_shell_when_a_layer_is_missing() {
        let mut p = full();
        p.seccomp = false;
        p.landlock_abi = 0;
        p.judge(false);
        let reason = p.disabled_reason().unwrap();
        assert!(
            reason.contains("Landlock") && reason.contains("seccomp"),
            "{reason}"
        );
        p.mode = Mode::BestEffort;
        assert_eq!(p.disabled_reason(), None);
    }

    #[test]
    fn port_rules_without_landlock_network_support_are_a_missing_layer() {
        let mut p = full();
        p.tcp_rules = false;
        p.network = Network::Ports(vec![443]);
        p.judge(false);
        assert!(p.missing[0].contains("ABI 4"), "{:?}", p.missing);
    }

    #[test]
    fn signals_need_a_scope_a_namespace_or_another_uid() {
        let mut p = full();
        p.scoped = false;
        p.namespaces = Namespaces::None;
        p.uid = 1000;
        p.judge(false);
        assert!(p.missing[0].contains("signals"), "{:?}", p.missing);
        p.judge(true);
        assert!(
            p.missing.is_empty(),
            "root drops to another uid: {:?}",
            p.missing
        );
    }

    #[test]
    fn a_readable_config_file_is_a_missing_layer_named_in_the_line() {
        let mut p = Posture::unavailable(Mode::Enforce, Network::Off, String::new());
        p.hidden_readable = vec!["/etc/switchboard.toml".into()];
        p.judge(false);
        let reason = p.disabled_reason().unwrap();
        assert!(reason.contains("/etc/switchboard.toml"), "{reason}");
        assert!(p.to_string().contains("config READABLE (1 files)"), "{p}");
    }
}
