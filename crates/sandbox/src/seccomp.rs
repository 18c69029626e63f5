//! The seccomp filter of tool processes: EPERM for the system calls a shell never needs
//! and a sandbox escape often does (ptrace, other processes' memory, io_uring, namespaces,
//! mounts, keyrings, BPF, perf, userfaultfd), namespace flags on `clone`, and unless the
//! network is `full`: `socket` itself (with TCP ports allowed, IPv4 and IPv6 stream sockets
//! only, and no `listen`/`accept`), and `socketpair` of any type but `SOCK_STREAM` and
//! `SOCK_SEQPACKET` (a connected pair). `clone3` answers ENOSYS, so libc falls back to `clone`, whose flags the
//! filter can see.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

use super::config::Network;

/// Denied outright.
const DENIED: &[libc::c_long] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_open_tree,
    libc::SYS_move_mount,
    libc::SYS_fsopen,
    libc::SYS_fsmount,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_open_by_handle_at,
];

/// `clone` flags that create namespaces.
const NAMESPACE_FLAGS: &[libc::c_int] = &[
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWNS,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWCGROUP,
];

fn cond(arg: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, String> {
    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value).map_err(|e| e.to_string())
}

/// The bits of a socket type that name it (the rest are `SOCK_NONBLOCK | SOCK_CLOEXEC`).
const SOCK_TYPE_MASK: u64 = 0xf;

/// Rules matching every socket type but `SOCK_STREAM` (and `also`) in argument `arg`:
/// datagrams (and raw, sequenced packets) can be sent to a named socket by path, which no
/// Landlock ABI below 9 mediates.
fn other_types(arg: u8, also: Option<libc::c_int>) -> Result<Vec<SeccompRule>, String> {
    let kept = also.map(|t| t as u64);
    (0..=SOCK_TYPE_MASK)
        .filter(|&t| t != libc::SOCK_STREAM as u64 && Some(t) != kept)
        .map(|t| {
            SeccompRule::new(vec![cond(arg, SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK), t)?])
                .map_err(|e| e.to_string())
        })
        .collect()
}

/// The EPERM filter for `network`.
pub fn deny_filter(network: &Network) -> Result<BpfProgram, String> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        DENIED.iter().map(|&nr| (nr, Vec::new())).collect();
    let clone_rules = NAMESPACE_FLAGS
        .iter()
        .map(|&flag| {
            let flag = flag as u64;
            SeccompRule::new(vec![cond(0, SeccompCmpOp::MaskedEq(flag), flag)?])
                .map_err(|e| e.to_string())
        })
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_clone, clone_rules);
    if *network != Network::Full {
        // A socketpair's sockets are connected to each other and can neither connect nor
        // send elsewhere when sequenced (`EISCONN`), so `SOCK_SEQPACKET` pairs reach no named
        // socket; Chromium's crash handler and process launcher need them.
        rules.insert(
            libc::SYS_socketpair,
            other_types(1, Some(libc::SOCK_SEQPACKET))?,
        );
    }
    match network {
        Network::Full => {}
        // Not even AF_UNIX: Landlock below ABI 9 does not mediate connecting to a named
        // socket, so the host's (a database's trust-auth socket, docker.sock) would be
        // reachable.
        Network::Off => {
            rules.insert(libc::SYS_socket, Vec::new());
        }
        // TCP out to the listed ports (Landlock checks the port): IPv4 and IPv6 stream
        // sockets only, and no listening on one (`listen` autobinds on 0.0.0.0, which no
        // bind rule sees).
        Network::Ports(_) => {
            let other_family = [libc::AF_INET, libc::AF_INET6]
                .iter()
                .map(|&family| cond(0, SeccompCmpOp::Ne, family as u64))
                .collect::<Result<Vec<_>, _>>()?;
            let mut socket = vec![SeccompRule::new(other_family).map_err(|e| e.to_string())?];
            socket.extend(other_types(1, None)?);
            rules.insert(libc::SYS_socket, socket);
            for nr in [libc::SYS_listen, libc::SYS_accept, libc::SYS_accept4] {
                rules.insert(nr, Vec::new());
            }
        }
    }
    compile(rules, libc::EPERM)
}

/// `clone3` → ENOSYS.
pub fn clone3_filter() -> Result<BpfProgram, String> {
    compile(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        libc::ENOSYS,
    )
}

fn compile(rules: BTreeMap<i64, Vec<SeccompRule>>, errno: i32) -> Result<BpfProgram, String> {
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())
}

/// Install both filters on this process (sets `no_new_privs`).
pub fn install(network: &Network) -> Result<(), String> {
    let deny = deny_filter(network)?;
    let clone3 = clone3_filter()?;
    for program in [&clone3, &deny] {
        seccompiler::apply_filter(program).map_err(|e| format!("seccomp: {e}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filters_compile_for_every_network_setting() {
        for net in [Network::Off, Network::Full, Network::Ports(vec![80])] {
            assert!(deny_filter(&net).unwrap().len() > DENIED.len(), "{net:?}");
        }
        assert!(!clone3_filter().unwrap().is_empty());
    }
}
