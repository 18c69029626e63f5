//! The layers a tool process puts on itself before it execs, in order: its uid/gid (when
//! the gateway is root), resource limits, Landlock, seccomp. Runs in the supervisor's
//! single-threaded child, so allocating here is safe.

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, LandlockStatus, NetPort, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};

use super::Spec;
use super::config::{Limits, Network};

/// Landlock ABI whose rights we ask for; older kernels get what they support.
const ABI_WANTED: ABI = ABI::V6;

/// System directories a shell needs to read and execute (`/opt` is not one: toolchains there
/// go in `extra_read`, and a gateway installed there keeps its files to itself).
pub const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/proc",
    "/dev/urandom",
    "/dev/random",
];
/// Device files every process may write.
const DEV_WRITE: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

/// What Landlock enforced.
pub struct LandlockOutcome {
    /// ABI in effect (0: unavailable).
    pub abi: u8,
    /// Every requested right is enforced.
    pub full: bool,
    /// TCP rules are enforced.
    pub tcp: bool,
    /// Signal and abstract-socket scopes are enforced.
    pub scoped: bool,
}

/// Drop to `uid`/`gid` with no supplementary groups (only when running as root).
pub fn drop_ids(uid: u32, gid: u32) -> Result<(), String> {
    // SAFETY: plain credential syscalls on this single-threaded process; no memory shared.
    let failed = unsafe {
        libc::setgroups(0, std::ptr::null()) != 0
            || libc::setresgid(gid, gid, gid) != 0
            || libc::setresuid(uid, uid, uid) != 0
    };
    if failed {
        return Err(format!(
            "could not drop to uid {uid}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Apply `[sandbox.limits]` to this process (inherited by everything it starts).
pub fn set_limits(limits: &Limits) -> Result<(), String> {
    const MIB: u64 = 1024 * 1024;
    let table = [
        (libc::RLIMIT_CPU, limits.cpu_secs, "cpu"),
        (
            libc::RLIMIT_DATA,
            limits.memory_mb.saturating_mul(MIB),
            "data",
        ),
        (
            libc::RLIMIT_FSIZE,
            limits.file_size_mb.saturating_mul(MIB),
            "fsize",
        ),
        (libc::RLIMIT_NOFILE, limits.open_files, "nofile"),
        (libc::RLIMIT_NPROC, limits.processes, "nproc"),
        (libc::RLIMIT_CORE, 0, "core"),
    ];
    for (resource, value, name) in table {
        let limit = libc::rlimit {
            rlim_cur: value,
            rlim_max: value,
        };
        // SAFETY: setrlimit reads the struct we pass; it outlives the call.
        if unsafe { libc::setrlimit(resource, &limit) } != 0 {
            return Err(format!(
                "setrlimit {name}: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

/// Restrict this process with Landlock: read+exec on the system (and the read-only
/// paths), read/write on the
/// workspace and `extra_write`, TCP only to allowed ports, signals and abstract sockets
/// scoped to the sandbox.
pub fn landlock(spec: &Spec) -> Result<LandlockOutcome, String> {
    let abi = ABI_WANTED;
    let fail = |e: landlock::RulesetError| format!("landlock: {e}");
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .map_err(fail)?
        .scope(Scope::AbstractUnixSocket | Scope::Signal)
        .map_err(fail)?;
    if spec.network != Network::Full {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(fail)?;
    }
    let roots = SYSTEM_READ
        .iter()
        .map(PathBuf::from)
        .chain(spec.extra_read.iter().cloned())
        .chain(spec.read_only.iter().cloned())
        .collect();
    let read = without(roots, &spec.hidden);
    let write: Vec<&Path> = DEV_WRITE
        .iter()
        .map(Path::new)
        .chain(std::iter::once(spec.workspace.as_path()))
        .chain(spec.extra_write.iter().map(|p| p.as_path()))
        .collect();
    let mut created = ruleset
        .create()
        .map_err(fail)?
        .add_rules(path_beneath_rules(&read, AccessFs::from_read(abi)))
        .map_err(fail)?
        .add_rules(path_beneath_rules(write, AccessFs::from_all(abi)))
        .map_err(fail)?;
    if let Network::Ports(ports) = &spec.network {
        for port in ports {
            created = created
                .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
                .map_err(fail)?;
        }
    }
    let status = created.restrict_self().map_err(fail)?;
    let effective = match status.landlock {
        LandlockStatus::Available { effective_abi, .. } => effective_abi as u8,
        _ => 0,
    };
    let enforced = status.ruleset != RulesetStatus::NotEnforced;
    Ok(LandlockOutcome {
        abi: if enforced { effective } else { 0 },
        full: status.ruleset == RulesetStatus::FullyEnforced,
        tcp: enforced && effective >= 4,
        scoped: enforced && effective >= 6,
    })
}

/// `roots` with the `hidden` files cut out: a root that holds one is replaced by its
/// entries, recursively, leaving out the hidden files themselves (Landlock can only add).
/// Links among the entries are left out too: granting one would grant its target.
/// `hidden` holds canonical paths.
pub fn without(roots: Vec<PathBuf>, hidden: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for root in roots {
        let real = std::fs::canonicalize(&root).unwrap_or_else(|_| root.clone());
        if hidden.contains(&real) {
            continue;
        }
        if !hidden.iter().any(|h| h.starts_with(&real)) {
            out.push(root);
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&real) else {
            continue;
        };
        let entries = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| !t.is_symlink()))
            .map(|e| e.path())
            .collect();
        out.extend(without(entries, hidden));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hidden_file_is_cut_out_of_the_directory_that_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("conf/sub")).unwrap();
        for file in [
            "conf/switchboard.toml",
            "conf/.env",
            "conf/other",
            "conf/sub/x",
        ] {
            std::fs::write(root.join(file), "").unwrap();
        }
        std::os::unix::fs::symlink("/root", root.join("conf/link")).unwrap();
        let hidden = [root.join("conf/switchboard.toml"), root.join("conf/.env")];
        let mut granted = without(vec![root.clone(), "/usr".into()], &hidden);
        granted.sort();
        assert_eq!(
            granted,
            vec![
                root.join("conf/other"),
                root.join("conf/sub"),
                "/usr".into()
            ]
        );
    }
}
