//! The tool's own view of the filesystem, set up in its fresh mount namespace before
//! Landlock (which forbids mounts): a `/proc` of its PID namespace only, and a data
//! directory that holds nothing but its own workspace, reachable by the sandbox user even
//! when a directory above it is closed to that user (a root gateway's data under `/root`).
//! Landlock does not mediate chmod, chown, utimes or xattrs, so a sibling workspace or the
//! database that is merely unreadable could still be broken; one that is not there cannot.

use std::ffi::CString;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, Mode, OFlags};

use super::Spec;
use super::posture::Posture;

/// The mounts of the tool's own namespace: its `/proc`, and a data directory holding only
/// what the call is granted. Not required layers: without them the posture says so.
pub fn private_view(spec: &Spec, posture: &mut Posture) {
    // Before Landlock, which forbids mounts and ties its /proc rule to this mount.
    posture.private_proc = private_proc().is_ok();
    if spec.data_dir.as_os_str().is_empty() || spec.data_dir == Path::new("/") {
        return;
    }
    let keep: Vec<(&Path, bool)> = std::iter::once(spec.workspace.as_path())
        .chain(spec.extra_read.iter().map(PathBuf::as_path))
        .chain(spec.extra_write.iter().map(PathBuf::as_path))
        .map(|path| (path, false))
        .chain(spec.read_only.iter().map(|path| (path.as_path(), true)))
        .collect();
    let cover = match spec.cover.as_os_str().is_empty() {
        true => spec.data_dir.as_path(),
        false => spec.cover.as_path(),
    };
    match private_data_dir(cover, &keep, &spec.workspace, spec.drop_to) {
        Ok(()) => posture.workspaces_private = true,
        Err(err) => eprintln!("switchboard sandbox: {err}"),
    }
}

/// `open_tree`, `move_mount` and `mount_setattr` flags (linux/mount.h).
const OPEN_TREE_CLONE: u32 = 1;
const MOVE_MOUNT_F_EMPTY_PATH: u32 = 4;
const MOUNT_ATTR_RDONLY: u64 = 1;

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

fn c_path(path: &Path) -> Result<CString, String> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| format!("{} has a NUL", path.display()))
}

fn last_error(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

/// mount(2) with optional source and type; `Err` carries the OS error and `what`.
fn mount(
    source: Option<&str>,
    target: &Path,
    fstype: Option<&str>,
    flags: libc::c_ulong,
    data: Option<&str>,
    what: &str,
) -> Result<(), String> {
    let cstr = |s: Option<&str>| s.map(|s| CString::new(s).unwrap_or_default());
    let (source, fstype, data) = (cstr(source), cstr(fstype), cstr(data));
    let target = c_path(target)?;
    let ptr = |c: &Option<CString>| c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
    // SAFETY: every pointer is null or a NUL-terminated string that outlives the call; only
    // this process's private mount namespace changes.
    let rc = unsafe {
        libc::mount(
            ptr(&source),
            target.as_ptr(),
            ptr(&fstype),
            flags,
            ptr(&data).cast(),
        )
    };
    if rc != 0 {
        return Err(last_error(what));
    }
    Ok(())
}

/// In a fresh mount and PID namespace, mount a `/proc` that shows only this namespace's
/// processes, so no tool sees another conversation's processes or command lines.
fn private_proc() -> Result<(), String> {
    let private = libc::MS_REC | libc::MS_PRIVATE;
    mount(
        None,
        Path::new("/"),
        None,
        private,
        None,
        "could not make / private",
    )?;
    let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    mount(
        Some("proc"),
        Path::new("/proc"),
        Some("proc"),
        flags,
        None,
        "could not mount a private /proc",
    )
}

/// Run `make` with the filesystem ids of `owner` (when given), then restore them.
fn as_fs_user<T>(owner: Option<(u32, u32)>, make: impl FnOnce() -> T) -> T {
    let Some((uid, gid)) = owner else {
        return make();
    };
    // SAFETY: setfsuid/setfsgid change only this single-threaded process's filesystem ids;
    // they return the previous ids, restored below.
    let (old_gid, old_uid) = unsafe { (libc::setfsgid(gid), libc::setfsuid(uid)) };
    let out = make();
    // SAFETY: as above, back to the ids we had.
    unsafe {
        libc::setfsuid(old_uid as u32);
        libc::setfsgid(old_gid as u32);
    }
    out
}

/// A detached copy of the mount tree at `path` (with what is mounted below it).
fn clone_tree(path: &Path) -> Result<OwnedFd, String> {
    let cpath = c_path(path)?;
    let flags = OPEN_TREE_CLONE | libc::O_CLOEXEC as u32 | libc::AT_RECURSIVE as u32;
    // SAFETY: open_tree with a NUL-terminated path; it returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, cpath.as_ptr(), flags) };
    if fd < 0 {
        return Err(last_error(&format!("open_tree {}", path.display())));
    }
    // SAFETY: a descriptor open_tree just returned, owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Make the detached tree `tree` read-only, with everything mounted below it. Only adds
/// a flag: the locked flags a clone inherits from the parent namespace stay as they are.
fn make_read_only(tree: &OwnedFd, path: &Path) -> Result<(), String> {
    use std::os::fd::AsRawFd;
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    let empty = CString::default();
    let flags = libc::AT_EMPTY_PATH | libc::AT_RECURSIVE;
    // SAFETY: mount_setattr on our own descriptor with an empty path and a struct that
    // outlives the call, its size passed with it.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            tree.as_raw_fd(),
            empty.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc != 0 {
        return Err(last_error(&format!("read-only {}", path.display())));
    }
    Ok(())
}

/// Attach the detached tree `tree` at `target`.
fn attach(tree: &OwnedFd, target: &Path) -> Result<(), String> {
    use std::os::fd::AsRawFd;
    let (empty, ctarget) = (CString::default(), c_path(target)?);
    // SAFETY: move_mount from our descriptor (empty path) to a NUL-terminated target path.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.as_raw_fd(),
            empty.as_ptr(),
            libc::AT_FDCWD,
            ctarget.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        )
    };
    if rc != 0 {
        return Err(last_error(&format!("move_mount to {}", target.display())));
    }
    Ok(())
}

/// The directory the tool's view covers: `data_dir`, or the highest directory above it that
/// `owner` (the sandbox user a root gateway drops to) may not search, such as `/root`.
/// Covered there, the path down to the workspace is rebuilt on the tmpfs, so that user
/// reaches its workspace (and the skills' copies) by the same absolute path the gateway
/// uses, while everything else in that directory stays out of its sight. Called in the
/// gateway: inside the tool's user namespace an unmapped owner reads as the overflow uid.
pub(super) fn cover_point(data_dir: &Path, owner: Option<(u32, u32)>) -> PathBuf {
    use std::os::unix::fs::MetadataExt;
    let Some((uid, gid)) = owner else {
        // Tools run as the gateway's own user, which reached data_dir already.
        return data_dir.to_path_buf();
    };
    let mut ancestors: Vec<&Path> = data_dir.ancestors().skip(1).collect();
    ancestors.reverse();
    for dir in ancestors.into_iter().filter(|d| d.parent().is_some()) {
        let Ok(meta) = std::fs::metadata(dir) else {
            break;
        };
        let bit = if meta.uid() == uid {
            0o100
        } else if meta.gid() == gid {
            0o010
        } else {
            0o001
        };
        if meta.mode() & bit == 0 {
            return dir.to_path_buf();
        }
    }
    data_dir.to_path_buf()
}

/// Cover `cover` (see [`cover_point`]) with an empty read-only tmpfs and put back only
/// `keep` (the workspace, and whatever else below `cover` the call is granted; those marked
/// `true` read-only, which Landlock's read-only rule for them would refuse to write anyway),
/// each at its own path, then move into `workspace` so `..` leads to the empty tmpfs, not the
/// real siblings. `owner` is the sandbox user a root gateway drops to: root is not mapped in
/// the tool's user namespace, so the directories on the tmpfs are made as that user, by
/// descriptor from the tmpfs's root (that user may not be able to search what lies above).
fn private_data_dir(
    cover: &Path,
    keep: &[(&Path, bool)],
    workspace: &Path,
    owner: Option<(u32, u32)>,
) -> Result<(), String> {
    let kept: Vec<(&Path, OwnedFd)> = keep
        .iter()
        .filter(|(p, _)| p.starts_with(cover) && *p != cover && p.exists())
        .map(|(p, read_only)| {
            let tree = clone_tree(p)?;
            // Landlock grants these paths read only either way; the read-only mount also
            // covers what Landlock does not mediate (chmod, utimes, xattrs).
            if *read_only && let Err(err) = make_read_only(&tree, p) {
                eprintln!("switchboard sandbox: {err}");
            }
            Ok((*p, tree))
        })
        .collect::<Result<_, String>>()?;
    let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    let tmpfs = Some("tmpfs");
    mount(
        tmpfs,
        cover,
        tmpfs,
        flags,
        Some("mode=0777,size=1m"),
        "could not cover the data directory",
    )?;
    let top = rfs::open(cover, DIR_FLAGS, Mode::empty())
        .map_err(|e| format!("open {}: {e}", cover.display()))?;
    let made = as_fs_user(owner, || {
        kept.iter().try_for_each(|(path, _)| {
            let below = path.strip_prefix(cover).unwrap_or(path);
            make_path(&top, below).map_err(|e| format!("mkdir {}: {e}", path.display()))
        })
    });
    made?;
    for (path, tree) in &kept {
        attach(tree, path)?;
    }
    let read_only = flags | libc::MS_REMOUNT | libc::MS_RDONLY;
    mount(
        None,
        cover,
        None,
        read_only,
        None,
        "could not make the cover read-only",
    )?;
    std::env::set_current_dir(workspace).map_err(|e| format!("chdir {}: {e}", workspace.display()))
}

/// Flags that open a directory without following a link.
const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// Make every directory of `below` under `top` (a fresh tmpfs only this process writes).
fn make_path(top: &OwnedFd, below: &Path) -> rustix::io::Result<()> {
    let mut opened: Option<OwnedFd> = None;
    for part in below.components() {
        let (name, dir) = (part.as_os_str(), opened.as_ref().unwrap_or(top));
        match rfs::mkdirat(dir, name, Mode::from_raw_mode(0o755)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(err) => return Err(err),
        }
        let next = rfs::openat(dir, name, DIR_FLAGS, Mode::empty())?;
        opened = Some(next);
    }
    Ok(())
}
