//! The supervisor's view of the process tree: reaping, and the kill loop for when no PID
//! namespace holds the tree together (then `/proc` says who descends from us).

use std::collections::HashMap;

/// Every live descendant of `root` (children, grandchildren, …).
pub fn descendants(root: i32) -> Vec<i32> {
    let parents = parent_map();
    let mut found = Vec::new();
    for (&pid, _) in parents.iter() {
        let mut cur = pid;
        for _ in 0..64 {
            match parents.get(&cur) {
                Some(&ppid) if ppid == root => {
                    found.push(pid);
                    break;
                }
                Some(&ppid) if ppid > 1 => cur = ppid,
                _ => break,
            }
        }
    }
    found
}

/// pid → parent pid for every process in `/proc`.
fn parent_map() -> HashMap<i32, i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return HashMap::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| Some((pid, parent_of(pid)?)))
        .collect()
}

/// The parent pid from `/proc/<pid>/stat` (the field after the parenthesised name).
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rsplit_once(')')?.1;
    after.split_whitespace().nth(1)?.parse().ok()
}

/// Reap every exited child; returns the command's status once it is among them.
pub fn reap_all(child: i32) -> Option<i32> {
    let mut found = None;
    loop {
        let mut status = 0;
        // SAFETY: non-blocking wait for any child; status is our stack variable.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return found;
        }
        if pid == child {
            found = Some(status);
        }
    }
}

/// Kill everything the command started. In a PID namespace killing its init is enough;
/// otherwise every descendant was reparented to us (subreaper), so kill until none is left.
pub fn kill_tree(child: i32, namespaced: bool) {
    // SAFETY: SIGKILL to our child (an exited one yields ESRCH).
    unsafe { libc::kill(child, libc::SIGKILL) };
    if namespaced {
        return;
    }
    // SAFETY: getpid has no arguments.
    let me = unsafe { libc::getpid() };
    // Any live descendant has an ancestor that is our child (an orphan is reparented to
    // us), so no children means nothing left, without scanning /proc.
    for _ in 0..1000 {
        if !has_children() {
            return;
        }
        let descendants = descendants(me);
        if descendants.is_empty() {
            return;
        }
        for pid in descendants {
            // SAFETY: SIGKILL to a descendant of ours.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        reap_all(-1);
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Whether this process has any child, live or zombie.
fn has_children() -> bool {
    // SAFETY: waitid with WNOWAIT only inspects; info is our zeroed stack struct.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        libc::waitid(
            libc::P_ALL,
            0,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        ) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spawned_child_is_a_descendant_of_this_process() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let me = std::process::id() as i32;
        assert!(descendants(me).contains(&(child.id() as i32)));
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
