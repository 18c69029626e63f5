//! Taking a checkpoint: walk the workspace through its handle and record every regular file
//! as path → (size, times, mode, content hash) in a [`Manifest`]. A file whose size, times
//! and inode are those of the previous manifest keeps its hash without being read or
//! copied, unless it changed too recently for its times to be trusted (the "racy" window
//! of coarse file timestamps); every other file is put into the [`Blobs`] store, which keeps
//! each content once.

use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::OFlags;
use serde::{Deserialize, Serialize};

use super::blobs::Blobs;
use super::walk::{Found, Stamp, open_beneath, open_root, walk};

/// A file modified this close to the previous snapshot may have changed again within the
/// same timestamp tick: it is hashed again (not copied, when its content is unchanged).
const RACY_NS: i64 = 2_000_000_000;

/// One stored file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct FileEntry {
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub ino: u64,
    pub mode: u32,
    /// SHA-256 of the content, hex: its name in the blob store.
    pub hash: String,
}

impl FileEntry {
    /// Whether `stamp` says the file is still the one recorded.
    pub(super) fn same_as(&self, stamp: &Stamp) -> bool {
        (self.size, self.mtime_ns, self.ctime_ns, self.ino)
            == (stamp.size, stamp.mtime_ns, stamp.ctime_ns, stamp.ino)
    }
}

/// The workspace at one checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Manifest {
    /// When the walk began (Unix ns, the filesystem's clock).
    pub taken_at_ns: i64,
    /// Regular files by path.
    pub files: BTreeMap<String, FileEntry>,
    /// Directories by path.
    pub dirs: BTreeSet<String>,
    /// Paths not stored, and why (too large, a symlink, other hard links…).
    pub skipped: BTreeMap<String, String>,
}

impl Manifest {
    /// Bytes of the distinct contents it refers to.
    pub(super) fn hashes(&self) -> impl Iterator<Item = (&str, u64)> {
        self.files.values().map(|f| (f.hash.as_str(), f.size))
    }
}

/// What one snapshot did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Taken {
    /// Contents newly put in the store.
    pub copied: usize,
}

/// Snapshot the workspace at `workspace` into `blobs`, reusing `previous` where files are
/// unchanged; files over `max_file` bytes are recorded as skipped.
pub(super) fn snapshot(
    workspace: &Path,
    blobs: &Blobs,
    previous: Option<&Manifest>,
    max_file: u64,
) -> std::io::Result<(Manifest, Taken)> {
    let mut manifest = Manifest {
        taken_at_ns: now_ns(),
        ..Manifest::default()
    };
    let mut taken = Taken::default();
    let Some(root) = open_root(workspace)? else {
        return Ok((manifest, taken));
    };
    for (rel, found) in walk(&root)? {
        let stamp = match found {
            Found::Dir => {
                manifest.dirs.insert(rel);
                continue;
            }
            Found::Other(why) => {
                manifest.skipped.insert(rel, why.to_owned());
                continue;
            }
            Found::File(stamp) => stamp,
        };
        match file_entry(&root, &rel, stamp, blobs, previous, max_file)? {
            Seen::Stored(entry, new) => {
                taken.copied += usize::from(new);
                manifest.files.insert(rel, entry);
            }
            Seen::Skipped(why) => {
                manifest.skipped.insert(rel, why);
            }
            Seen::Gone => {}
        }
    }
    Ok((manifest, taken))
}

/// What became of one regular file in a snapshot.
enum Seen {
    /// Recorded; `true` when its content was newly put in the store.
    Stored(FileEntry, bool),
    /// Not stored, for this reason.
    Skipped(String),
    /// Removed while the workspace was walked.
    Gone,
}

/// Record the regular file `rel`.
fn file_entry(
    root: &OwnedFd,
    rel: &str,
    stamp: Stamp,
    blobs: &Blobs,
    previous: Option<&Manifest>,
    max_file: u64,
) -> std::io::Result<Seen> {
    if stamp.nlink > 1 {
        let why = "it has other hard links (it may be a file from outside)";
        return Ok(Seen::Skipped(why.to_owned()));
    }
    if stamp.size > max_file {
        return Ok(Seen::Skipped(too_large(stamp.size, max_file)));
    }
    let known = previous
        .and_then(|p| p.files.get(rel).map(|e| (p.taken_at_ns, e)))
        .filter(|(at, e)| e.same_as(&stamp) && stamp.mtime_ns < at - RACY_NS)
        .filter(|(_, e)| blobs.has(&e.hash));
    if let Some((_, entry)) = known {
        return Ok(Seen::Stored(entry.clone(), false));
    }
    let file = match open_beneath(root, rel, OFlags::RDONLY | OFlags::NONBLOCK) {
        Ok(fd) => fd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Seen::Gone),
        Err(e) => return Ok(Seen::Skipped(format!("it could not be read: {e}"))),
    };
    let Some(stored) = blobs.put(&file, max_file)? else {
        return Ok(Seen::Skipped(too_large(stamp.size, max_file)));
    };
    let entry = FileEntry {
        size: stored.size,
        hash: stored.hash,
        mtime_ns: stamp.mtime_ns,
        ctime_ns: stamp.ctime_ns,
        ino: stamp.ino,
        mode: stamp.mode,
    };
    Ok(Seen::Stored(entry, stored.new))
}

fn too_large(size: u64, max: u64) -> String {
    format!("it is larger than the {max}-byte limit ({size} bytes)")
}

/// The filesystem's clock, which file times are compared with (not the gateway's clock).
fn now_ns() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.map_or(0, |d| d.as_nanos() as i64)
}
