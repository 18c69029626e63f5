//! The content store of one conversation's checkpoints: each distinct file content once,
//! named by its SHA-256, under `data_dir/checkpoints/<conversation>/blobs`. A content is
//! stored by cloning the file (`FICLONE`, copy-on-write on Btrfs, XFS and others) where the
//! filesystem allows, else by copying it; either way it is hashed from the private copy, so
//! what is named is exactly what is kept.

use std::collections::HashSet;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::PathBuf;

use sha2::{Digest, Sha256};

/// One conversation's stored contents.
#[derive(Debug, Clone)]
pub(super) struct Blobs {
    dir: PathBuf,
}

/// A content put into the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Stored {
    /// Its SHA-256, hex.
    pub hash: String,
    /// Its length.
    pub size: u64,
    /// Whether it was new (false: the same content was already stored).
    pub new: bool,
}

impl Blobs {
    /// The store in `dir` (created on the first put).
    pub(super) fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    fn path(&self, hash: &str) -> PathBuf {
        self.dir.join(hash)
    }

    /// Whether `hash` is stored.
    pub(super) fn has(&self, hash: &str) -> bool {
        self.path(hash).is_file()
    }

    /// Store the content of the open file `src`; `None` when it is longer than `cap`.
    pub(super) fn put(&self, src: &OwnedFd, cap: u64) -> std::io::Result<Option<Stored>> {
        std::fs::create_dir_all(&self.dir)?;
        let tmp = self
            .dir
            .join(format!(".tmp-{}", uuid::Uuid::new_v4().simple()));
        let result = self.fill(src, &tmp, cap);
        let stored = match result {
            Ok(Some((hash, size))) => {
                let target = self.path(&hash);
                let new = !target.is_file();
                if new {
                    std::fs::rename(&tmp, &target)?;
                }
                Some(Stored { hash, size, new })
            }
            Ok(None) => None,
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(e);
            }
        };
        let _ = std::fs::remove_file(&tmp);
        Ok(stored)
    }

    /// Clone (or copy) `src` into `tmp` and hash the copy.
    fn fill(
        &self,
        src: &OwnedFd,
        tmp: &PathBuf,
        cap: u64,
    ) -> std::io::Result<Option<(String, u64)>> {
        let mut out = File::create_new(tmp)?;
        let mut hasher = Sha256::new();
        let size = if rustix::fs::ioctl_ficlone(&out, src).is_ok() {
            hash_all(&mut File::open(tmp)?, &mut hasher, cap, None)?
        } else {
            let mut input = File::from(src.try_clone()?);
            hash_all(&mut input, &mut hasher, cap, Some(&mut out))?
        };
        Ok(size.map(|size| (format!("{:x}", hasher.finalize()), size)))
    }

    /// Open a stored content.
    pub(super) fn open(&self, hash: &str) -> std::io::Result<File> {
        File::open(self.path(hash))
    }

    /// Remove every content not in `keep`; returns how many were removed.
    pub(super) fn retain(&self, keep: &HashSet<&str>) -> std::io::Result<usize> {
        let mut removed = 0;
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Ok(0);
        };
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if !keep.contains(name.as_ref()) {
                std::fs::remove_file(entry.path())?;
                removed += 1;
            }
        }
        Ok(removed)
    }
}

/// Feed `input` to `hasher` (and to `copy`), up to `cap` bytes: its length, or `None` when
/// it is longer.
fn hash_all(
    input: &mut File,
    hasher: &mut Sha256,
    cap: u64,
    mut copy: Option<&mut File>,
) -> std::io::Result<Option<u64>> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut size = 0u64;
    loop {
        let n = input.read(&mut buf)?;
        if n == 0 {
            return Ok(Some(size));
        }
        size += n as u64;
        if size > cap {
            return Ok(None);
        }
        hasher.update(&buf[..n]);
        if let Some(out) = copy.as_mut() {
            out.write_all(&buf[..n])?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fd(path: &std::path::Path) -> OwnedFd {
        OwnedFd::from(File::open(path).unwrap())
    }

    #[test]
    fn the_same_content_is_stored_once_and_an_oversized_one_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = Blobs::new(dir.path().join("blobs"));
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, "same").unwrap();
        std::fs::write(&b, "same").unwrap();
        let first = blobs.put(&fd(&a), 100).unwrap().unwrap();
        let second = blobs.put(&fd(&b), 100).unwrap().unwrap();
        assert!(first.new && !second.new);
        assert_eq!(first.hash, second.hash);
        assert_eq!(first.size, 4);
        assert!(blobs.put(&fd(&a), 3).unwrap().is_none());
        assert_eq!(
            std::fs::read_dir(dir.path().join("blobs")).unwrap().count(),
            1
        );
        let mut text = String::new();
        blobs
            .open(&first.hash)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "same");
        assert_eq!(blobs.retain(&HashSet::new()).unwrap(), 1);
        assert!(!blobs.has(&first.hash));
    }
}
