//! The layers a tool process puts on itself before it execs, in order: its uid/gid (when
//! the gateway is root), resource limits, Landlock, seccomp. Runs in the supervisor's
//! single-threaded child, so allocating here is safe.

use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, AccessNet, LandlockStatus, NetPort, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};

use super::Spec;
use super::config::{Limits, Network};

/// Landlock ABI whose rights we ask for; older kernels get what they support.
const ABI_WANTED: ABI = ABI::V6;

/// System directories a shell needs to read and execute.
pub const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
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

/// In a fresh mount and PID namespace, mount a `/proc` that shows only this namespace's
/// processes, so no tool sees another conversation's processes or command lines.
pub fn private_proc() -> Result<(), String> {
    let c = |s: &str| std::ffi::CString::new(s).unwrap_or_default();
    let (root, proc_dir, proc_type) = (c("/"), c("/proc"), c("proc"));
    // SAFETY: mount(2) with NUL-terminated strings that outlive the calls; only this
    // process's private mount namespace changes.
    let failed = unsafe {
        libc::mount(
            std::ptr::null(),
            root.as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
            || libc::mount(
                proc_type.as_ptr(),
                proc_dir.as_ptr(),
                proc_type.as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                std::ptr::null(),
            ) != 0
    };
    if failed {
        return Err(format!(
            "could not mount a private /proc: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
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

/// Restrict this process with Landlock: read+exec on the system, read/write on the
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
    let read: Vec<&Path> = SYSTEM_READ
        .iter()
        .map(Path::new)
        .chain(spec.extra_read.iter().map(|p| p.as_path()))
        .collect();
    let write: Vec<&Path> = DEV_WRITE
        .iter()
        .map(Path::new)
        .chain(std::iter::once(spec.workspace.as_path()))
        .chain(spec.extra_write.iter().map(|p| p.as_path()))
        .collect();
    let mut created = ruleset
        .create()
        .map_err(fail)?
        .add_rules(path_beneath_rules(read, AccessFs::from_read(abi)))
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
