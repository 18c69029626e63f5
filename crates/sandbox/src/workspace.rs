//! Preparing a conversation's workspace before each tool call, by descriptor: the workspace
//! and its `TMPDIR` are opened without following links and chowned through their handles,
//! so nothing a tool planted in its workspace (`.tmp` replaced by a link to a root-only
//! directory) makes a root gateway hand another directory to the sandbox user.

use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, AtFlags, Gid, Mode, OFlags, ResolveFlags, Uid};
use rustix::io::Errno;

/// Subdirectory of every workspace that is its `TMPDIR`.
pub const TMP_DIR: &str = ".tmp";

/// Create `workspace` and its `TMPDIR`, owned by `owner` when the gateway is root. With
/// `search`, the directories above it inside `data_dir` get search permission for others,
/// so that user can reach it by absolute path where no mount namespace opens a path for it
/// (see `mounts.rs`). Returns its absolute path.
pub fn prepare(
    workspace: &Path,
    data_dir: &Path,
    owner: Option<(u32, u32)>,
    search: bool,
) -> io::Result<PathBuf> {
    let ws = std::path::absolute(workspace)?;
    // The directories down to the workspace are the gateway's; no tool can write there.
    std::fs::create_dir_all(&ws)?;
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let dir = rfs::open(&ws, flags, Mode::empty())?;
    let tmp = tmp_dir(&dir)?;
    if let Some((uid, gid)) = owner {
        let (uid, gid) = (Uid::from_raw(uid), Gid::from_raw(gid));
        for fd in [&dir, &tmp] {
            rfs::fchown(fd, Some(uid), Some(gid))?;
        }
    }
    if search {
        searchable_above(&ws, data_dir)?;
    }
    Ok(ws)
}

/// The workspace's `TMPDIR`, made if missing. Whatever a tool left in its place (a link, a
/// file) is removed, never followed: it was the tool's own to lose.
fn tmp_dir(ws: &OwnedFd) -> io::Result<OwnedFd> {
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    // Twice at most: a tool still running could replace it again between the two steps.
    for _ in 0..2 {
        match rfs::mkdirat(ws, TMP_DIR, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(err) => return Err(err.into()),
        }
        match rfs::openat2(ws, TMP_DIR, flags, Mode::empty(), resolve) {
            Ok(fd) => return Ok(fd),
            Err(Errno::LOOP | Errno::NOTDIR | Errno::XDEV) => {
                rfs::unlinkat(ws, TMP_DIR, AtFlags::empty())?;
            }
            Err(err) => return Err(err.into()),
        }
    }
    Err(io::Error::other(format!(
        "{TMP_DIR} in the workspace is not a directory"
    )))
}

/// Give `o+x` to every directory above `ws` inside `data_dir` that lacks it (nothing more:
/// the directories stay unreadable to others, which the doctor counts as private).
pub fn searchable_above(ws: &Path, data_dir: &Path) -> io::Result<()> {
    let mut above = ws.parent();
    while let Some(dir) = above.filter(|d| d.starts_with(data_dir)) {
        let mut perms = std::fs::metadata(dir)?.permissions();
        if perms.mode() & 0o001 == 0 {
            perms.set_mode(perms.mode() | 0o001);
            std::fs::set_permissions(dir, perms)?;
        }
        above = dir.parent();
    }
    Ok(())
}

/// Bytes of disk the tree at `root` takes (allocated blocks, each inode once), without
/// following links.
pub fn disk_usage(root: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut seen = std::collections::HashSet::new();
    let mut total = 0;
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let Ok(meta) = entry.metadata() else { continue };
            if meta.nlink() > 1 && !seen.insert((meta.dev(), meta.ino())) {
                continue;
            }
            total += meta.blocks() * 512;
            if meta.is_dir() {
                pending.push(entry.path());
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_in_place_of_the_tmp_dir_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        let ws = dir.path().join("workspaces/c/chat");
        prepare(&ws, dir.path(), None, false).unwrap();
        std::fs::remove_dir(ws.join(TMP_DIR)).unwrap();
        std::os::unix::fs::symlink(&outside, ws.join(TMP_DIR)).unwrap();
        prepare(&ws, dir.path(), None, false).unwrap();
        let tmp = std::fs::symlink_metadata(ws.join(TMP_DIR)).unwrap();
        assert!(tmp.is_dir(), "a directory of its own again");
        assert!(outside.is_dir(), "the link's target is left alone");
    }

    #[test]
    fn disk_usage_counts_files_below_once_and_not_through_links() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        std::fs::write(dir.path().join("d/a"), vec![1u8; 1 << 20]).unwrap();
        std::fs::hard_link(dir.path().join("d/a"), dir.path().join("b")).unwrap();
        std::os::unix::fs::symlink("/usr", dir.path().join("usr")).unwrap();
        let used = disk_usage(dir.path());
        assert!((1 << 20..2 << 20).contains(&used), "{used}");
    }

    #[test]
    fn a_file_in_place_of_the_tmp_dir_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        std::fs::write(ws.join(TMP_DIR), "x").unwrap();
        prepare(&ws, dir.path(), None, false).unwrap();
        assert!(ws.join(TMP_DIR).is_dir());
    }
}
