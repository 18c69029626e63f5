//! `[sandbox]`: how tool processes are confined. Parsed with the rest of the config; the
//! gateway hands it to [`super::Sandbox::new`] at start-up.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// `[sandbox]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct SandboxConfig {
    /// What happens when a layer is missing.
    pub mode: Mode,
    /// Which TCP traffic tool processes may start.
    pub network: Network,
    /// More paths tools may read (and execute), e.g. a toolchain outside `/usr`.
    pub extra_read: Vec<PathBuf>,
    /// More paths tools may write besides their workspace.
    pub extra_write: Vec<PathBuf>,
    /// `[sandbox.limits]`.
    pub limits: Limits,
    /// The binary re-executed as the supervisor (default: the running executable). Tests
    /// that run the gateway in-process point it at `CARGO_BIN_EXE_switchboard`.
    pub supervisor: Option<PathBuf>,
    /// uid tool processes drop to when the gateway runs as root (root is exempt from the
    /// process limit, so a fork bomb is only bounded this way).
    pub uid: u32,
    /// gid tool processes drop to when the gateway runs as root.
    pub gid: u32,
    /// Use user and PID namespaces where the kernel allows it. `false` forces the posture
    /// of hosts without them (Docker's default seccomp profile), which tests use.
    pub namespaces: bool,
    /// Put each call in a cgroup of its own (memory and process limits over the call as a
    /// whole) where the gateway can create one; `false` never tries.
    pub cgroups: bool,
    /// Files tools must never read: the config file and the env files beside it. Filled
    /// when the config is loaded from a file; not a TOML key.
    #[serde(skip)]
    pub hidden: Vec<PathBuf>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            mode: Mode::Enforce,
            network: Network::Off,
            extra_read: Vec::new(),
            extra_write: Vec::new(),
            limits: Limits::default(),
            supervisor: None,
            uid: 65534,
            gid: 65534,
            namespaces: true,
            cgroups: true,
            hidden: Vec::new(),
        }
    }
}

/// `[sandbox] mode`.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Every layer must apply, or the shell tool is disabled (with the reason).
    #[default]
    Enforce,
    /// Apply what the kernel offers and say in the posture what is missing.
    BestEffort,
    /// No confinement beyond the supervisor's process hygiene; `check` warns.
    Off,
}

/// `[sandbox] network`: `"off"`, `"full"`, or a list of TCP ports tools may connect to.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(from = "NetworkRepr", into = "NetworkRepr")]
pub enum Network {
    /// No sockets but `AF_UNIX`; no TCP connect or bind.
    #[default]
    Off,
    /// Unrestricted.
    Full,
    /// TCP connect allowed to these ports only (Landlock rules are by port, not host).
    Ports(Vec<u16>),
}

/// The TOML shapes of [`Network`].
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(untagged)]
enum NetworkRepr {
    Word(NetworkWord),
    Ports(Vec<u16>),
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
enum NetworkWord {
    Off,
    Full,
}

impl From<NetworkRepr> for Network {
    fn from(repr: NetworkRepr) -> Self {
        match repr {
            NetworkRepr::Word(NetworkWord::Off) => Self::Off,
            NetworkRepr::Word(NetworkWord::Full) => Self::Full,
            NetworkRepr::Ports(ports) => Self::Ports(ports),
        }
    }
}

impl From<Network> for NetworkRepr {
    fn from(net: Network) -> Self {
        match net {
            Network::Off => Self::Word(NetworkWord::Off),
            Network::Full => Self::Word(NetworkWord::Full),
            Network::Ports(ports) => Self::Ports(ports),
        }
    }
}

/// `[sandbox.limits]`: resource limits of every tool process tree.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// CPU seconds per process (`RLIMIT_CPU`).
    pub cpu_secs: u64,
    /// Memory in MiB: of each process (`RLIMIT_DATA`; not `RLIMIT_AS`, which kills V8), and
    /// of the whole call (`memory.max`) where it runs in a cgroup of its own.
    pub memory_mb: u64,
    /// Largest file a process may write, in MiB (`RLIMIT_FSIZE`).
    pub file_size_mb: u64,
    /// Open descriptors per process (`RLIMIT_NOFILE`).
    pub open_files: u64,
    /// Processes of the sandbox user (`RLIMIT_NPROC`; per call where user namespaces exist),
    /// and of the whole call (`pids.max`) where it runs in a cgroup of its own.
    pub processes: u64,
    /// Disk a workspace may use, in MiB, checked after each shell call (0: unbounded).
    pub workspace_mb: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            cpu_secs: 120,
            memory_mb: 2048,
            file_size_mb: 1024,
            open_files: 1024,
            processes: 256,
            workspace_mb: 4096,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<SandboxConfig, toml::de::Error> {
        toml::from_str(text)
    }

    #[test]
    fn the_default_enforces_with_the_network_off() {
        let config = parse("").unwrap();
        assert_eq!(config.mode, Mode::Enforce);
        assert_eq!(config.network, Network::Off);
        assert!(config.namespaces);
    }

    #[test]
    fn network_is_a_word_or_a_list_of_ports() {
        assert_eq!(parse("network = \"full\"").unwrap().network, Network::Full);
        assert_eq!(
            parse("network = [443, 8080]").unwrap().network,
            Network::Ports(vec![443, 8080])
        );
        assert!(parse("network = \"some\"").is_err());
    }

    #[test]
    fn unknown_keys_and_modes_are_refused() {
        assert!(parse("mode = \"lenient\"").is_err());
        assert!(parse("[limits]\nswap = 1").is_err());
        assert_eq!(
            parse("mode = \"best_effort\"\n[limits]\nprocesses = 9")
                .unwrap()
                .limits
                .processes,
            9
        );
    }
}
