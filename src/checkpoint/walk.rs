//! Looking at a workspace through its directory handle: every open is `openat2` beneath the
//! workspace with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`, entries are examined without
//! following links, so a symlink (even one pointing outside) is seen as a link and never
//! entered or read through.

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags, ResolveFlags};

/// How every path beneath the workspace is resolved.
const RESOLVE: ResolveFlags = ResolveFlags::BENEATH
    .union(ResolveFlags::NO_SYMLINKS)
    .union(ResolveFlags::NO_MAGICLINKS);

/// Entries walked at most, so a workspace of millions of files fails clearly instead of
/// stalling the turn.
const MAX_ENTRIES: usize = 200_000;

/// What identifies a file's content without reading it (with the racy-time rule in
/// `snapshot`): size, modification and change times, inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stamp {
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub ino: u64,
    pub mode: u32,
    pub nlink: u64,
}

/// What is at a path, seen without following links.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Found {
    /// A directory.
    Dir,
    /// A regular file.
    File(Stamp),
    /// Anything else (a symlink, FIFO, socket, device, or a name that is not UTF-8), with
    /// why it is not stored.
    Other(&'static str),
}

/// The workspace directory, or `None` when it does not exist yet.
pub(super) fn open_root(path: &Path) -> std::io::Result<Option<OwnedFd>> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    match rfs::open(path, flags, Mode::empty()) {
        Ok(fd) => Ok(Some(fd)),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Open `rel` beneath `root` (`""` is the root itself).
pub(super) fn open_beneath(root: &OwnedFd, rel: &str, flags: OFlags) -> std::io::Result<OwnedFd> {
    let rel = if rel.is_empty() { "." } else { rel };
    let flags = flags | OFlags::CLOEXEC | OFlags::NOCTTY;
    Ok(rfs::openat2(root, rel, flags, Mode::empty(), RESOLVE)?)
}

/// Open `rel`'s parent directory beneath `root`, and give `rel`'s last name.
pub(super) fn open_parent<'a>(root: &OwnedFd, rel: &'a str) -> std::io::Result<(OwnedFd, &'a str)> {
    let (parent, name) = rel.rsplit_once('/').unwrap_or(("", rel));
    let dir = open_beneath(root, parent, OFlags::RDONLY | OFlags::DIRECTORY)?;
    Ok((dir, name))
}

/// What `name` in `dir` is, without following it (`None`: nothing there).
pub(super) fn look(dir: &OwnedFd, name: &str) -> std::io::Result<Option<Found>> {
    match rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(found(&st))),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn found(st: &rfs::Stat) -> Found {
    match FileType::from_raw_mode(st.st_mode) {
        FileType::Directory => Found::Dir,
        FileType::RegularFile => Found::File(Stamp {
            size: st.st_size as u64,
            mtime_ns: st.st_mtime * 1_000_000_000 + st.st_mtime_nsec as i64,
            ctime_ns: st.st_ctime * 1_000_000_000 + st.st_ctime_nsec as i64,
            ino: st.st_ino,
            mode: st.st_mode & 0o7777,
            #[allow(
                clippy::unnecessary_cast,
                reason = "`st_nlink` is u64 here but narrower on some architectures"
            )]
            nlink: st.st_nlink as u64,
        }),
        FileType::Symlink => Found::Other("a symlink, not followed"),
        _ => Found::Other("not a regular file"),
    }
}

/// Every entry beneath `root` with its path (`/`-separated), parents before children.
pub(super) fn walk(root: &OwnedFd) -> std::io::Result<Vec<(String, Found)>> {
    let mut out = Vec::new();
    let mut pending = vec![String::new()];
    while let Some(dir_rel) = pending.pop() {
        let fd = open_beneath(root, &dir_rel, OFlags::RDONLY | OFlags::DIRECTORY)?;
        let mut names = Vec::new();
        for entry in rfs::Dir::read_from(&fd)? {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            if name != b"." && name != b".." {
                names.push(name.to_vec());
            }
        }
        names.sort();
        for name in names {
            let rel = |n: &str| {
                if dir_rel.is_empty() {
                    n.to_owned()
                } else {
                    format!("{dir_rel}/{n}")
                }
            };
            let Ok(text) = std::str::from_utf8(&name) else {
                let lossy = String::from_utf8_lossy(&name).into_owned();
                out.push((rel(&lossy), Found::Other("its name is not UTF-8")));
                continue;
            };
            let os: &OsStr = std::os::unix::ffi::OsStrExt::from_bytes(&name);
            let kind = match rfs::statat(&fd, os, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => found(&st),
                Err(rustix::io::Errno::NOENT) => continue, // removed while we looked
                Err(e) => return Err(e.into()),
            };
            if kind == Found::Dir {
                pending.push(rel(text));
            }
            out.push((rel(text), kind));
            if out.len() > MAX_ENTRIES {
                return Err(std::io::Error::other(format!(
                    "more than {MAX_ENTRIES} files in the workspace"
                )));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}
