//! Putting a workspace back as a [`Manifest`] recorded it, through the workspace's directory
//! handle: files the checkpoint did not have are removed, changed or missing ones are
//! written from the blob store (a temporary file renamed into place, so a symlink at the
//! target is replaced, never followed), directories are made and emptied ones removed.
//! Paths the checkpoint skipped (too large, symlinks) are left as they are and reported.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{self as rfs, AtFlags, Gid, Mode, OFlags, Uid};

use super::blobs::Blobs;
use super::snapshot::{FileEntry, Manifest};
use super::walk::{Found, look, open_parent, open_root, walk};

/// What a restore did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Restored {
    /// Files written back.
    pub written: usize,
    /// Files, links and directories removed.
    pub removed: usize,
    /// Paths that could not be put back, and why.
    pub failed: BTreeMap<String, String>,
}

/// Restore `workspace` to `manifest`; files and directories made get `owner`.
pub(super) fn restore(
    workspace: &Path,
    owner: Option<(u32, u32)>,
    manifest: &Manifest,
    blobs: &Blobs,
) -> std::io::Result<Restored> {
    if open_root(workspace)?.is_none() {
        std::fs::create_dir_all(workspace)?;
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::chown(workspace, Some(uid), Some(gid))?;
        }
    }
    let root = open_root(workspace)?.ok_or_else(|| std::io::Error::other("no workspace"))?;
    let mut done = Restored::default();
    let current = walk(&root)?;
    // Deepest first, so a directory is emptied before it is removed.
    for (rel, found) in current.iter().rev() {
        let kept = match found {
            Found::Dir => manifest.dirs.contains(rel),
            Found::File(_) | Found::Other(_) => manifest.files.contains_key(rel),
        };
        if kept || manifest.skipped.contains_key(rel) {
            continue;
        }
        let flags = match found {
            Found::Dir => AtFlags::REMOVEDIR,
            _ => AtFlags::empty(),
        };
        match open_parent(&root, rel).and_then(|(dir, name)| Ok(rfs::unlinkat(&dir, name, flags)?))
        {
            Ok(()) => done.removed += 1,
            // A directory still holding skipped files stays.
            Err(_) if *found == Found::Dir => {}
            Err(e) => {
                done.failed.insert(rel.clone(), e.to_string());
            }
        }
    }
    for rel in &manifest.dirs {
        if let Err(e) = ensure_dir(&root, rel, owner) {
            done.failed.insert(rel.clone(), e.to_string());
        }
    }
    let now: BTreeMap<&str, &Found> = current.iter().map(|(r, f)| (r.as_str(), f)).collect();
    for (rel, entry) in &manifest.files {
        if matches!(now.get(rel.as_str()), Some(Found::File(stamp)) if entry.same_as(stamp)) {
            continue;
        }
        match write_back(&root, rel, entry, blobs, owner) {
            Ok(()) => done.written += 1,
            Err(e) => {
                done.failed.insert(rel.clone(), e.to_string());
            }
        }
    }
    Ok(done)
}

/// Make `rel` a directory: kept when it is one, made when missing, and whatever else is
/// there (a symlink, a file) removed first.
fn ensure_dir(root: &OwnedFd, rel: &str, owner: Option<(u32, u32)>) -> std::io::Result<()> {
    let (dir, name) = open_parent(root, rel)?;
    match look(&dir, name)? {
        Some(Found::Dir) => return Ok(()),
        Some(_) => rfs::unlinkat(&dir, name, AtFlags::empty())?,
        None => {}
    }
    rfs::mkdirat(&dir, name, Mode::from_raw_mode(0o755))?;
    if let Some((uid, gid)) = owner {
        rfs::chownat(
            &dir,
            name,
            Some(Uid::from_raw(uid)),
            Some(Gid::from_raw(gid)),
            AtFlags::SYMLINK_NOFOLLOW,
        )?;
    }
    Ok(())
}

/// Write `entry`'s content to `rel`: a temporary file beside it, renamed over it.
fn write_back(
    root: &OwnedFd,
    rel: &str,
    entry: &FileEntry,
    blobs: &Blobs,
    owner: Option<(u32, u32)>,
) -> std::io::Result<()> {
    let (dir, name) = open_parent(root, rel)?;
    if look(&dir, name)? == Some(Found::Dir) {
        return Err(std::io::Error::other("a directory is there now"));
    }
    let tmp = format!(".{name}.rewind-{}", uuid::Uuid::new_v4().simple());
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rfs::openat(&dir, tmp.as_str(), flags, Mode::from_raw_mode(0o600))?;
    let filled = fill(fd, entry, blobs, owner)
        .and_then(|()| Ok(rfs::renameat(&dir, tmp.as_str(), &dir, name)?));
    if filled.is_err() {
        let _ = rfs::unlinkat(&dir, tmp.as_str(), AtFlags::empty());
    }
    filled
}

fn fill(
    fd: OwnedFd,
    entry: &FileEntry,
    blobs: &Blobs,
    owner: Option<(u32, u32)>,
) -> std::io::Result<()> {
    let mut blob = blobs.open(&entry.hash)?;
    if rustix::fs::ioctl_ficlone(&fd, &blob).is_err() {
        std::io::copy(&mut blob, &mut File::from(fd.try_clone()?))?;
    }
    if let Some((uid, gid)) = owner {
        rfs::fchown(&fd, Some(Uid::from_raw(uid)), Some(Gid::from_raw(gid)))?;
    }
    rfs::fchmod(&fd, Mode::from_raw_mode(entry.mode & 0o777))?;
    Ok(())
}
