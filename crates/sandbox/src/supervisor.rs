//! The supervisor: the gateway's own binary re-executed (`switchboard supervise`) between
//! the gateway and every tool process. Single-threaded, with a cleared environment and no
//! inherited descriptors, it starts a new session, dies with the gateway, clones the tool
//! process into new user + PID namespaces where it can (else becomes a subreaper), and kills
//! the whole tree when the command ends or the gateway asks (SIGTERM).

use std::ffi::CString;
use std::io::Write;

use super::cgroup::CallGroup;
use super::config::{Mode, Network};
use super::posture::{Cgroups, Namespaces, Posture};
use super::{REFUSED, Spec, procs};
use super::{layers, mounts};

/// Run the supervisor for `spec` (JSON); returns only on failure to start, with an exit code.
pub fn supervise(spec: &str) -> u8 {
    let spec: Spec = match serde_json::from_str(spec) {
        Ok(spec) => spec,
        Err(err) => {
            eprintln!("switchboard supervise: bad spec: {err}");
            return REFUSED;
        }
    };
    // SAFETY: process-level calls at the start of a single-threaded process (so changing
    // the environment races with nothing); the only memory passed lives on this frame.
    unsafe {
        std::env::remove_var(super::SPEC_VAR);
        libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
        libc::setsid();
        // Fires when the spawning *thread* ends: the gateway spawns from tokio worker
        // threads, which live as long as its runtime.
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
        if libc::getppid() != spec.parent {
            return REFUSED; // the gateway is already gone
        }
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1);
        libc::setrlimit(
            libc::RLIMIT_CORE,
            &libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            },
        );
    }
    let signals = block_signals();
    let argv = exec_argv(&spec);
    // Made before the tool exists, joined before it is released: all it starts is inside.
    let group = spec.cgroup.as_ref().ok().and_then(|plan| {
        CallGroup::create(plan, &spec.limits, std::process::id())
            .inspect_err(|e| eprintln!("switchboard sandbox: no cgroup for this call: {e}"))
            .ok()
    });
    let (child, ns) = match spawn(&spec, &argv, group.as_ref()) {
        Ok(started) => started,
        Err(err) => {
            eprintln!("switchboard supervise: could not start the command: {err}");
            group.into_iter().for_each(CallGroup::remove);
            return REFUSED;
        }
    };
    let status = wait(child, ns, &signals);
    group.into_iter().for_each(CallGroup::remove);
    exit_like(status)
}

/// The shell commands run under: bash, the language the policy's parser models, never
/// `/bin/sh`, which may be dash and read the same line as other commands.
pub const SHELL: &str = "/bin/bash";

/// `bash -c <command>` as C strings, built before any fork.
fn exec_argv(spec: &Spec) -> Vec<CString> {
    let command = spec.command.clone().unwrap_or_default().replace('\0', "");
    vec![
        CString::new(SHELL).unwrap_or_default(),
        CString::new("-c").unwrap_or_default(),
        CString::new(command).unwrap_or_default(),
    ]
}

fn block_signals() -> libc::sigset_t {
    // SAFETY: the set is initialised by sigemptyset before use; sigprocmask only reads it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in [libc::SIGCHLD, libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::sigaddset(&mut set, sig);
        }
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

/// Namespace attempts in order of preference.
fn attempts(spec: &Spec) -> Vec<Namespaces> {
    let root = spec.drop_to.is_some();
    match (spec.namespaces, root) {
        (false, _) => vec![Namespaces::None],
        (true, true) => vec![Namespaces::UserPid, Namespaces::Pid, Namespaces::None],
        (true, false) => vec![Namespaces::UserPid, Namespaces::None],
    }
}

/// The byte that releases the tool process: it is in the call's cgroup, or not.
const RELEASED_IN_CGROUP: u8 = 1;
const RELEASED: u8 = 2;

/// Clone the tool process, trying namespaces first; returns its pid and what it got.
fn spawn(
    spec: &Spec,
    argv: &[CString],
    group: Option<&CallGroup>,
) -> std::io::Result<(i32, Namespaces)> {
    let mut last = std::io::Error::other("no attempt");
    for ns in attempts(spec) {
        let flags = match ns {
            Namespaces::UserPid => libc::CLONE_NEWUSER | libc::CLONE_NEWPID | libc::CLONE_NEWNS,
            Namespaces::Pid => libc::CLONE_NEWPID | libc::CLONE_NEWNS,
            Namespaces::None => 0,
        };
        let mut sync = [0i32; 2];
        // SAFETY: pipe2 fills the two-int array we own.
        if unsafe { libc::pipe2(sync.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: a raw clone with no new stack behaves like fork; this process is
        // single-threaded, so the child may allocate. The child never returns from here.
        let pid = unsafe {
            libc::syscall(
                libc::SYS_clone,
                (flags | libc::SIGCHLD) as libc::c_ulong,
                0,
                0,
                0,
                0,
            )
        };
        if pid == 0 {
            // SAFETY: closing our copy of the write end.
            unsafe { libc::close(sync[1]) };
            child(spec, ns, sync[0], argv);
        }
        // SAFETY: closing our copy of the read end.
        unsafe { libc::close(sync[0]) };
        if pid < 0 {
            last = std::io::Error::last_os_error();
            // SAFETY: closing the unused write end.
            unsafe { libc::close(sync[1]) };
            continue;
        }
        let pid = pid as i32;
        let mapped = if ns == Namespaces::UserPid {
            write_maps(pid, spec)
        } else {
            Ok(())
        };
        let joined = group.is_some_and(|g| {
            g.join(pid)
                .inspect_err(|e| eprintln!("switchboard sandbox: {e}"))
                .is_ok()
        });
        let release = if joined { RELEASED_IN_CGROUP } else { RELEASED };
        // SAFETY: one byte from our stack releases the child; then the pipe is closed.
        unsafe {
            if mapped.is_ok() {
                libc::write(sync[1], [release].as_ptr().cast(), 1);
            }
            libc::close(sync[1]);
        }
        match mapped {
            Ok(()) => return Ok((pid, ns)),
            Err(err) => {
                last = err;
                reap(pid);
            }
        }
    }
    Err(last)
}

/// Map the sandbox's ids into the child's user namespace.
fn write_maps(pid: i32, spec: &Spec) -> std::io::Result<()> {
    let (uid, gid) = spec.drop_to.unwrap_or_else(|| {
        // SAFETY: getters without arguments.
        unsafe { (libc::geteuid(), libc::getegid()) }
    });
    if spec.drop_to.is_none() {
        std::fs::write(format!("/proc/{pid}/setgroups"), "deny")?;
    }
    std::fs::write(format!("/proc/{pid}/uid_map"), format!("{uid} {uid} 1"))?;
    std::fs::write(format!("/proc/{pid}/gid_map"), format!("{gid} {gid} 1"))
}

/// Kill and reap a child that never got released (its sync pipe closed without a byte).
fn reap(pid: i32) {
    // SAFETY: signalling and waiting for our own child.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, std::ptr::null_mut(), 0);
    }
}

/// The tool process: wait to be released, confine itself, exec (or report, when probing).
fn child(spec: &Spec, ns: Namespaces, sync: i32, argv: &[CString]) -> ! {
    let mut byte = 0u8;
    // SAFETY: reads one byte into our stack variable, then restores the signal mask the
    // supervisor blocked, so the command gets default signal handling.
    let released = unsafe {
        let n = libc::read(sync, (&raw mut byte).cast(), 1);
        libc::close(sync);
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        n == 1
    };
    if !released {
        exit_now(REFUSED);
    }
    let posture = confine(spec, ns, byte == RELEASED_IN_CGROUP);
    if spec.command.is_none() {
        let mut out = std::io::stdout();
        let _ = serde_json::to_writer(&mut out, &posture);
        let _ = out.flush();
        exit_now(0);
    }
    if let Some(reason) = posture.disabled_reason() {
        eprintln!("switchboard sandbox: {reason}");
        exit_now(REFUSED);
    }
    if ns != Namespaces::None {
        be_init(argv);
    }
    exec(argv)
}

/// As PID 1 of the tool's namespace: run the command as our child and reap every orphan
/// until it exits (a shell as PID 1 would leave them as zombies, counted against the
/// process limit), then exit, which kills whatever is left in the namespace.
fn be_init(argv: &[CString]) -> ! {
    // SAFETY: fork in a single-threaded process; the child only execs.
    let command = unsafe { libc::fork() };
    if command == 0 {
        exec(argv);
    }
    if command < 0 {
        exit_now(REFUSED);
    }
    loop {
        let mut status = 0;
        // SAFETY: waiting for any child into our stack variable.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid == command {
            // PID 1 cannot re-raise a signal on itself, so a signal becomes 128 + signal.
            exit_now(if libc::WIFSIGNALED(status) {
                128u8.wrapping_add(libc::WTERMSIG(status) as u8)
            } else {
                libc::WEXITSTATUS(status) as u8
            });
        }
        if pid < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            exit_now(REFUSED);
        }
    }
}

/// Replace this process with `bash -c <command>`.
fn exec(argv: &[CString]) -> ! {
    let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    // SAFETY: argv is a NULL-terminated array of valid C strings that outlive the call;
    // execv only returns on failure.
    unsafe { libc::execv(ptrs[0], ptrs.as_ptr()) };
    eprintln!(
        "switchboard sandbox: exec {SHELL}: {}",
        std::io::Error::last_os_error()
    );
    exit_now(127)
}

/// Try to open each of the gateway's own files as the confined tool would: every one that
/// opens is named in the posture (and disables the shell in `enforce` mode).
fn probe_hidden(spec: &Spec, posture: &mut Posture) {
    posture.hidden_checked = spec.hidden.len();
    posture.hidden_readable = spec
        .hidden
        .iter()
        .filter(|path| std::fs::File::open(path).is_ok())
        .cloned()
        .collect();
}

/// Whether the confined tool reaches its workspace by the path every call is given (its
/// `HOME` and `TMPDIR`, the paths the model is told), listing it and writing in its
/// `TMPDIR` as a command would; if not, why, naming the directory that stops it.
fn probe_reach(spec: &Spec, uid: u32) -> Option<String> {
    let ws = &spec.workspace;
    let file = ws.join(super::workspace::TMP_DIR).join(".reach");
    let tried = std::fs::read_dir(ws)
        .and_then(|_| std::fs::write(&file, b""))
        .and_then(|()| std::fs::remove_file(&file));
    let err = tried.err()?;
    let mut above: Vec<&std::path::Path> = ws.ancestors().collect();
    above.reverse();
    let closed = above
        .into_iter()
        .find(|dir| std::fs::metadata(dir).is_err())
        .and_then(std::path::Path::parent)
        .unwrap_or(ws);
    Some(format!(
        "tools (uid {uid}) cannot reach their workspace {}: {err}; {} is closed to them and no mount namespace opens a path through it here: set gateway.data_dir to a directory uid {uid} can reach (e.g. /var/lib/switchboard), or `chmod o+x {}`",
        ws.display(),
        closed.display(),
        closed.display()
    ))
}

/// Apply the layers in order and measure what holds. Landlock opens its paths before the
/// uid changes (the sandbox user may not be able to reach them by name), and the seccomp
/// filter comes last, once no more privileged calls are needed.
fn confine(spec: &Spec, ns: Namespaces, in_cgroup: bool) -> Posture {
    let mut posture = Posture::unavailable(spec.mode, spec.network.clone(), String::new());
    posture.missing.clear();
    posture.namespaces = ns;
    posture.cgroups = match (&spec.cgroup, in_cgroup) {
        (Ok(plan), true) => Cgroups::PerCall(plan.version().to_owned()),
        (Ok(_), false) => Cgroups::Off("the call's cgroup could not be made".to_owned()),
        (Err(reason), _) => Cgroups::Off(reason.clone()),
    };
    let mut notes = Vec::new();
    if ns != Namespaces::None {
        mounts::private_view(spec, &mut posture);
    }
    if spec.mode != Mode::Off {
        match layers::set_limits(&spec.limits) {
            Ok(()) => posture.limits = Some(spec.limits),
            Err(err) => notes.push(err),
        }
        match layers::landlock(spec) {
            Ok(ll) => {
                (posture.landlock_abi, posture.landlock_full) = (ll.abi, ll.full);
                (posture.tcp_rules, posture.scoped) = (ll.tcp, ll.scoped);
            }
            Err(err) => notes.push(err),
        }
    }
    if let Some((uid, gid)) = spec.drop_to
        && let Err(err) = layers::drop_ids(uid, gid)
    {
        notes.push(err);
    }
    // SAFETY: after the id change (which clears it), die with the supervisor.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        posture.uid = libc::getuid();
    }
    if spec.mode != Mode::Off {
        match super::seccomp::install(&spec.network) {
            Ok(()) => {
                posture.seccomp = true;
                posture.datagrams_off = spec.network != Network::Full;
            }
            Err(err) => notes.push(err),
        }
    }
    if spec.command.is_none() {
        probe_hidden(spec, &mut posture);
        posture.workspace_unreachable = probe_reach(spec, posture.uid);
    }
    posture.judge(spec.drop_to.is_some());
    posture.missing.extend(notes);
    posture
}

/// Wait for the command; on SIGTERM (the gateway's stop) kill the tree first.
fn wait(child: i32, ns: Namespaces, signals: &libc::sigset_t) -> i32 {
    loop {
        // SAFETY: sigwaitinfo with a valid, blocked set and no info struct.
        let sig = unsafe { libc::sigwaitinfo(signals, std::ptr::null_mut()) };
        if sig == libc::SIGCHLD {
            if let Some(status) = procs::reap_all(child) {
                procs::kill_tree(child, ns != Namespaces::None);
                return status;
            }
        } else if sig > 0 {
            procs::kill_tree(child, ns != Namespaces::None);
            // SAFETY: waiting for our own child, now killed.
            let mut status = 0;
            unsafe { libc::waitpid(child, &mut status, 0) };
            return status;
        }
    }
}

/// Exit the way the command did: its code, or the same signal.
fn exit_like(status: i32) -> u8 {
    if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        // SAFETY: restore the default action and unblock, then raise the signal on
        // ourselves so the gateway sees "killed by a signal"; core dumps are off.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, sig);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::kill(libc::getpid(), sig);
        }
        return 128u8.wrapping_add(sig as u8);
    }
    libc::WEXITSTATUS(status) as u8
}

fn exit_now(code: u8) -> ! {
    // SAFETY: _exit ends the child without running the parent's atexit handlers.
    unsafe { libc::_exit(i32::from(code)) }
}
