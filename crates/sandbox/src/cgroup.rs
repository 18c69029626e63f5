//! Bounds over a tool call as a whole: each call's process tree in a cgroup of its own with
//! `memory.max` and `pids.max` (rlimits bound one process each, so four processes could
//! take four times the memory). The gateway finds at start-up where it may create them
//! ([`delegate`]): under its own cgroup v2 when that is delegated to it (systemd
//! `Delegate=yes`, Docker's `--cgroupns=private` as root), moving itself into a leaf so the
//! controllers can be enabled below it; else under its cgroup v1 memory and pids
//! hierarchies where those are writable (hybrid hosts). The supervisor makes one per call,
//! puts the tool process in it before releasing it, and removes it when the tree is gone.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::config::Limits;

/// The group every call's cgroup is made in.
const TOOLS: &str = "switchboard-tools";
/// The leaf a cgroup v2 gateway moves itself into, so its own group may have children with
/// controllers (a v2 group with processes cannot).
const GATEWAY_LEAF: &str = "switchboard-gateway";

/// Which limit files a directory takes.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Controller {
    /// cgroup v2: `memory.max`, `memory.swap.max`, `pids.max`.
    V2,
    /// cgroup v1 memory hierarchy: `memory.limit_in_bytes`.
    V1Memory,
    /// cgroup v1 pids hierarchy: `pids.max`.
    V1Pids,
}

/// Where calls' cgroups go: one parent per hierarchy.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct CgroupPlan {
    /// Each parent directory and the limit files its children take.
    pub parents: Vec<(PathBuf, Controller)>,
}

impl CgroupPlan {
    /// `"v2"` or `"v1"`, for the posture.
    pub fn version(&self) -> &'static str {
        match self.parents.first() {
            Some((_, Controller::V2)) => "v2",
            _ => "v1",
        }
    }
}

/// Where this process may create a cgroup per call, or why nowhere.
pub fn delegate() -> Result<CgroupPlan, String> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").map_err(|e| e.to_string())?;
    let own = std::fs::read_to_string("/proc/self/cgroup").map_err(|e| e.to_string())?;
    let v2 = delegate_v2(&mounts, &own);
    let plan = v2.or_else(|v2| {
        delegate_v1(&mounts, &own).map_err(|v1| format!("cgroup v2: {v2}; cgroup v1: {v1}"))
    })?;
    for (parent, _) in &plan.parents {
        remove_stale(parent);
        // A group another user made earlier exists but may not be ours to fill.
        let check = parent.join(format!("call-check-{}", std::process::id()));
        make_dir(&check)?;
        let _ = std::fs::remove_dir(&check);
    }
    Ok(plan)
}

/// Mount points of `fstype` with their super options, from `/proc/self/mountinfo`.
fn mounts_of<'a>(mountinfo: &'a str, fstype: &str) -> Vec<(&'a str, &'a str)> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let mut right = right.split(' ');
            let point = left.split(' ').nth(4)?;
            (right.next()? == fstype).then(|| (point, right.nth(1).unwrap_or_default()))
        })
        .collect()
}

fn delegate_v2(mountinfo: &str, own: &str) -> Result<CgroupPlan, String> {
    let (mount, _) = *mounts_of(mountinfo, "cgroup2")
        .first()
        .ok_or("not mounted")?;
    let path = own
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .ok_or("this process is in no v2 group")?;
    let mut dir = Path::new(mount).join(path.trim_start_matches('/'));
    let controllers = read(&dir.join("cgroup.controllers"))?;
    if !(controllers.contains("memory") && controllers.contains("pids")) {
        return Err(format!(
            "{} offers no memory and pids controllers ({})",
            dir.display(),
            controllers.trim()
        ));
    }
    if dir.file_name().is_some_and(|n| n == GATEWAY_LEAF) {
        dir.pop();
    } else {
        let leaf = dir.join(GATEWAY_LEAF);
        make_dir(&leaf)?;
        write(&leaf.join("cgroup.procs"), &std::process::id().to_string())?;
    }
    write(&dir.join("cgroup.subtree_control"), "+memory +pids")?;
    let tools = dir.join(TOOLS);
    make_dir(&tools)?;
    write(&tools.join("cgroup.subtree_control"), "+memory +pids")?;
    Ok(CgroupPlan {
        parents: vec![(tools, Controller::V2)],
    })
}

fn delegate_v1(mountinfo: &str, own: &str) -> Result<CgroupPlan, String> {
    let mut parents = Vec::new();
    for (name, controller) in [
        ("memory", Controller::V1Memory),
        ("pids", Controller::V1Pids),
    ] {
        let has = |options: &str| options.split(',').any(|o| o == name);
        let (mount, _) = *mounts_of(mountinfo, "cgroup")
            .iter()
            .find(|(_, options)| has(options))
            .ok_or_else(|| format!("no {name} hierarchy"))?;
        let path = own
            .lines()
            .find_map(|l| {
                let mut parts = l.splitn(3, ':');
                let (_, list, path) = (parts.next()?, parts.next()?, parts.next()?);
                has(list).then_some(path)
            })
            .ok_or_else(|| format!("this process is in no {name} group"))?;
        let tools = Path::new(mount)
            .join(path.trim_start_matches('/'))
            .join(TOOLS);
        make_dir(&tools)?;
        parents.push((tools, controller));
    }
    Ok(CgroupPlan { parents })
}

/// Remove the groups of calls whose supervisor died before it could (an empty group only:
/// rmdir refuses one that still has processes).
fn remove_stale(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        if entry.file_name().to_string_lossy().starts_with("call-") {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn write(path: &Path, value: &str) -> Result<(), String> {
    std::fs::write(path, value).map_err(|e| format!("{}: {e}", path.display()))
}

fn make_dir(path: &Path) -> Result<(), String> {
    match std::fs::create_dir(path) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            Err(format!("{}: {e}", path.display()))
        }
        _ => Ok(()),
    }
}

/// One call's cgroups (one per hierarchy), removed by [`CallGroup::remove`].
pub struct CallGroup {
    dirs: Vec<PathBuf>,
}

impl CallGroup {
    /// Make `call-<id>` under each parent of `plan` with `limits` set.
    pub fn create(plan: &CgroupPlan, limits: &Limits, id: u32) -> Result<Self, String> {
        let memory = limits.memory_mb.saturating_mul(1024 * 1024).to_string();
        let pids = limits.processes.to_string();
        let mut group = Self { dirs: Vec::new() };
        for (parent, controller) in &plan.parents {
            let dir = parent.join(format!("call-{id}"));
            make_dir(&dir)?;
            group.dirs.push(dir.clone());
            let set = |file: &str, value: &str| write(&dir.join(file), value);
            let made = match controller {
                Controller::V2 => set("memory.max", &memory).and_then(|()| {
                    // No swap to spill into; absent where swap accounting is off.
                    let _ = set("memory.swap.max", "0");
                    set("pids.max", &pids)
                }),
                Controller::V1Memory => set("memory.limit_in_bytes", &memory),
                Controller::V1Pids => set("pids.max", &pids),
            };
            if let Err(err) = made {
                group.remove();
                return Err(err);
            }
        }
        Ok(group)
    }

    /// Move process `pid` (the tool, not yet released) into the call's groups.
    pub fn join(&self, pid: i32) -> Result<(), String> {
        self.dirs
            .iter()
            .try_for_each(|dir| write(&dir.join("cgroup.procs"), &pid.to_string()))
    }

    /// Remove the groups once the tree is gone; a dying process can hold one a moment.
    pub fn remove(self) {
        for dir in &self.dirs {
            for _ in 0..200 {
                if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
35 24 0:30 / /sys/fs/cgroup/unified rw,relatime shared:9 - cgroup2 cgroup2 rw\n\
40 24 0:35 / /sys/fs/cgroup/memory rw,relatime shared:14 - cgroup cgroup rw,memory\n\
41 24 0:36 / /sys/fs/cgroup/pids rw,relatime shared:15 - cgroup cgroup rw,pids\n";

    #[test]
    fn mounts_are_found_by_type_with_their_options() {
        assert_eq!(
            mounts_of(MOUNTINFO, "cgroup2"),
            vec![("/sys/fs/cgroup/unified", "rw")]
        );
        assert_eq!(
            mounts_of(MOUNTINFO, "cgroup"),
            vec![
                ("/sys/fs/cgroup/memory", "rw,memory"),
                ("/sys/fs/cgroup/pids", "rw,pids")
            ]
        );
    }

    #[test]
    fn a_v2_hierarchy_without_memory_and_pids_is_not_used() {
        let own = "4:memory:/a\n0::/\n";
        let mountinfo = "35 24 0:30 / /nonexistent-cgroup2 rw - cgroup2 cgroup2 rw\n";
        let err = delegate_v2(mountinfo, own).unwrap_err();
        assert!(err.contains("/nonexistent-cgroup2"), "{err}");
    }
}
