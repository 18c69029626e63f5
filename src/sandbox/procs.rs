//! The process tree as `/proc` shows it, for the supervisor's kill loop where no PID
//! namespace holds the tree together.

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
