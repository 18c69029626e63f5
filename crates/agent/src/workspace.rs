//! Confinement of file-tool paths to the conversation's workspace, enforced by the kernel:
//! every open is `openat2` relative to the workspace's directory handle with
//! `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`, so no `..`, absolute
//! path or symlink (even one the shell planted a moment ago) can lead outside, and there is
//! no gap between checking a path and using it. Reads refuse hard-linked and non-regular
//! files (a FIFO neither blocks nor streams forever) and stop at a size cap; writes go to a
//! temporary file renamed into place. Every write the gateway makes into a workspace
//! should go through [`WorkspaceDir`].

use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

/// Reject absolute paths and `..` up front, for a clear message; returns the clean
/// relative path (possibly empty: the workspace itself). The kernel enforces the rest.
pub fn confine(relative: &str) -> Result<PathBuf, String> {
    let rel = Path::new(relative.trim());
    let mut clean = PathBuf::new();
    for component in rel.components() {
        match component {
            Component::Normal(part) => clean.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(format!("{relative:?} contains `..`, which is not allowed"));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!(
                    "{relative:?} is absolute; use a path relative to the workspace"
                ));
            }
        }
    }
    Ok(clean)
}

/// A conversation's workspace, opened by handle for every file operation.
#[derive(Debug, Clone)]
pub struct WorkspaceDir {
    path: PathBuf,
    /// uid/gid new files and directories get (the sandbox user, when the gateway is root).
    owner: Option<(u32, u32)>,
}

const RESOLVE: ResolveFlags = ResolveFlags::BENEATH
    .union(ResolveFlags::NO_SYMLINKS)
    .union(ResolveFlags::NO_MAGICLINKS);

impl WorkspaceDir {
    /// The workspace at `path`; files created in it get `owner`.
    pub fn new(path: PathBuf, owner: Option<(u32, u32)>) -> Self {
        Self { path, owner }
    }

    /// The workspace's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A handle on the workspace directory, created first if `create`.
    fn root(&self, create: bool) -> Result<OwnedFd, String> {
        if create && !self.path.exists() {
            std::fs::create_dir_all(&self.path).map_err(|e| e.to_string())?;
            if let Some((uid, gid)) = self.owner {
                std::os::unix::fs::chown(&self.path, Some(uid), Some(gid))
                    .map_err(|e| e.to_string())?;
            }
        }
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        rfs::open(&self.path, flags, Mode::empty()).map_err(|e| describe(e, "."))
    }

    /// Open `rel` beneath the workspace.
    fn open(
        &self,
        dir: &OwnedFd,
        rel: &Path,
        flags: OFlags,
        mode: Mode,
    ) -> Result<OwnedFd, String> {
        let rel = if rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            rel
        };
        rfs::openat2(
            dir,
            rel,
            flags | OFlags::CLOEXEC | OFlags::NOCTTY,
            mode,
            RESOLVE,
        )
        .map_err(|e| describe(e, &rel.display().to_string()))
    }

    /// The bytes of the regular, singly-linked file `rel`, refusing anything over `cap`.
    pub fn read_file(&self, rel: &str, cap: u64) -> Result<Vec<u8>, String> {
        let rel = confine(rel)?;
        let root = self.root(false)?;
        let fd = self.open(
            &root,
            &rel,
            OFlags::RDONLY | OFlags::NONBLOCK,
            Mode::empty(),
        )?;
        let stat = rfs::fstat(&fd).map_err(|e| e.to_string())?;
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => {}
            FileType::Directory => return Err("is a directory; use file_list".into()),
            _ => return Err("not a regular file (a device, FIFO or socket); refused".into()),
        }
        if stat.st_nlink > 1 {
            return Err("has other hard links (it may be a file from outside); refused".into());
        }
        if stat.st_size as u64 > cap {
            return Err(format!(
                "is {} bytes, more than the {cap} bytes the file tools read; use the shell (head, sed -n)",
                stat.st_size
            ));
        }
        let mut bytes = Vec::new();
        std::fs::File::from(fd)
            .take(cap + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| e.to_string())?;
        if bytes.len() as u64 > cap {
            return Err(format!("grew past {cap} bytes while being read; refused"));
        }
        Ok(bytes)
    }

    /// Replace `rel` with `bytes`: parents created beneath the workspace, a temporary file
    /// written and renamed over the target (a symlink there is replaced, never followed).
    pub fn write_file(&self, rel: &str, bytes: &[u8]) -> Result<(), String> {
        let rel = confine(rel)?;
        let name = rel
            .file_name()
            .ok_or_else(|| "needs a file name".to_owned())?
            .to_owned();
        let root = self.root(true)?;
        let dir = self.make_dirs(&root, rel.parent().unwrap_or(Path::new("")))?;
        match rfs::statat(&dir, &name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Directory => {
                return Err("is a directory".into());
            }
            Ok(st)
                if FileType::from_raw_mode(st.st_mode) == FileType::RegularFile
                    && st.st_nlink > 1 =>
            {
                return Err("has other hard links (it may be a file from outside); refused".into());
            }
            _ => {}
        }
        let tmp = format!(
            ".{}.tmp-{}",
            name.to_string_lossy(),
            uuid::Uuid::new_v4().simple()
        );
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL;
        let fd = self.open(&dir, Path::new(&tmp), flags, Mode::from_raw_mode(0o644))?;
        let written = self.fill(fd, bytes).and_then(|()| {
            rfs::renameat(&dir, &tmp, &dir, &name)
                .map_err(|e| describe(e, &rel.display().to_string()))
        });
        if written.is_err() {
            let _ = rfs::unlinkat(&dir, &tmp, AtFlags::empty());
        }
        written
    }

    fn fill(&self, fd: OwnedFd, bytes: &[u8]) -> Result<(), String> {
        if let Some((uid, gid)) = self.owner {
            rfs::fchown(
                &fd,
                Some(rfs::Uid::from_raw(uid)),
                Some(rfs::Gid::from_raw(gid)),
            )
            .map_err(|e| e.to_string())?;
        }
        let mut file = std::fs::File::from(fd);
        file.write_all(bytes).map_err(|e| e.to_string())
    }

    /// Walk (creating) the directories of `rel` beneath `root`; returns the last one.
    fn make_dirs(&self, root: &OwnedFd, rel: &Path) -> Result<OwnedFd, String> {
        let mut dir = self.open(
            root,
            Path::new("."),
            OFlags::RDONLY | OFlags::DIRECTORY,
            Mode::empty(),
        )?;
        for part in rel.iter() {
            let created = match rfs::mkdirat(&dir, part, Mode::from_raw_mode(0o755)) {
                Ok(()) => true,
                Err(Errno::EXIST) => false,
                Err(e) => return Err(describe(e, &part.to_string_lossy())),
            };
            dir = self.open(
                &dir,
                Path::new(part),
                OFlags::RDONLY | OFlags::DIRECTORY,
                Mode::empty(),
            )?;
            if created && let Some((uid, gid)) = self.owner {
                rfs::fchown(
                    &dir,
                    Some(rfs::Uid::from_raw(uid)),
                    Some(rfs::Gid::from_raw(gid)),
                )
                .map_err(|e| e.to_string())?;
            }
        }
        Ok(dir)
    }

    /// Names in the directory `rel` (directories with a trailing `/`), sorted. Creates
    /// nothing: a workspace that does not exist yet lists as empty.
    pub fn list_dir(&self, rel: &str) -> Result<Vec<String>, String> {
        let rel = confine(rel)?;
        if rel.as_os_str().is_empty() && !self.path.exists() {
            return Ok(Vec::new());
        }
        let root = self.root(false)?;
        let fd = self.open(
            &root,
            &rel,
            OFlags::RDONLY | OFlags::DIRECTORY,
            Mode::empty(),
        )?;
        let dir = rfs::Dir::read_from(&fd).map_err(|e| e.to_string())?;
        let mut names = Vec::new();
        for entry in dir {
            let entry = entry.map_err(|e| e.to_string())?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == "." || name == ".." {
                continue;
            }
            let is_dir = entry.file_type() == FileType::Directory;
            names.push(if is_dir { format!("{name}/") } else { name });
        }
        names.sort();
        Ok(names)
    }
}

/// An errno from a beneath-open, in words the model can act on.
fn describe(err: Errno, rel: &str) -> String {
    match err {
        Errno::LOOP => format!("{rel:?} goes through a symlink, which is not followed"),
        Errno::XDEV => format!("{rel:?} leads outside the workspace"),
        Errno::NOENT => format!("{rel:?}: no such file or directory"),
        Errno::NOTDIR => format!("{rel:?}: not a directory"),
        Errno::NXIO => format!("{rel:?}: not a regular file; refused"),
        other => format!("{rel:?}: {}", std::io::Error::from(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(dir: &tempfile::TempDir) -> WorkspaceDir {
        WorkspaceDir::new(dir.path().to_path_buf(), None)
    }

    #[test]
    fn relative_paths_stay_inside_and_escapes_are_refused() {
        assert_eq!(confine("a/./b.txt").unwrap(), Path::new("a/b.txt"));
        assert_eq!(confine(".").unwrap(), Path::new(""));
        for bad in ["/etc/passwd", "../x", "a/../../x"] {
            assert!(confine(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn a_symlink_out_of_the_workspace_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/etc", dir.path().join("etc")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("pw")).unwrap();
        let ws = ws(&dir);
        for path in ["etc/passwd", "pw"] {
            let err = ws.read_file(path, 1 << 20).unwrap_err();
            assert!(err.contains("symlink"), "{path}: {err}");
        }
        assert!(
            ws.write_file("etc/x", b"x")
                .unwrap_err()
                .contains("symlink")
        );
        assert!(ws.list_dir("etc").unwrap_err().contains("symlink"));
    }

    #[test]
    fn writing_over_a_planted_symlink_replaces_the_link_not_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::NamedTempFile::new().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("f")).unwrap();
        ws(&dir).write_file("f", b"new").unwrap();
        assert_eq!(std::fs::read(outside.path()).unwrap(), b"");
        assert_eq!(std::fs::read(dir.path().join("f")).unwrap(), b"new");
    }

    #[test]
    fn hard_links_fifos_and_oversized_files_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), "a").unwrap();
        std::fs::hard_link(dir.path().join("a"), dir.path().join("b")).unwrap();
        let fifo = std::ffi::CString::new(dir.path().join("p").to_str().unwrap()).unwrap();
        // SAFETY: mkfifo reads the NUL-terminated path we own.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        std::fs::write(dir.path().join("big"), vec![b'x'; 100]).unwrap();
        let ws = ws(&dir);
        assert!(ws.read_file("b", 1000).unwrap_err().contains("hard links"));
        assert!(ws.write_file("a", b"x").unwrap_err().contains("hard links"));
        assert!(
            ws.read_file("p", 1000)
                .unwrap_err()
                .contains("not a regular file")
        );
        assert!(ws.read_file("big", 10).unwrap_err().contains("100 bytes"));
    }

    #[test]
    fn listing_a_missing_workspace_creates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let missing = WorkspaceDir::new(dir.path().join("nope"), None);
        assert_eq!(missing.list_dir(".").unwrap(), Vec::<String>::new());
        assert!(missing.list_dir("sub").is_err());
        assert!(!dir.path().join("nope").exists());
    }
}
