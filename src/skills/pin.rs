//! Pinning: a skill's content hash over every file in its folder, and the lock file that
//! records the hash of each skill the operator trusted (`switchboard skills trust`). A skill
//! whose files no longer hash to its pin is not loaded until it is trusted again.
//!
//! The files are read once: the bytes hashed are the bytes the gateway copies to the
//! skill's read-only mount ([`super::mount`]), so a file changed after the check never
//! reaches a conversation.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Most files one skill folder may hold.
pub const MAX_FILES: usize = 1000;
/// Most bytes one skill folder may hold, all files together.
pub const MAX_BYTES: u64 = 32 * 1024 * 1024;

/// One file of a skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// Path inside the folder, `/`-separated.
    pub path: String,
    /// Whether its owner may execute it (part of the hash).
    pub executable: bool,
    /// Its permission bits (`0o777` at most), kept in the copy. Not hashed beyond
    /// `executable`, so pins made before modes were kept stay valid; the copy is checked
    /// against them all the same.
    pub mode: u32,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// Every file of a skill folder, sorted by path, and their hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contents {
    /// The files.
    pub files: Vec<File>,
    /// `sha256:<hex>` over every path, mode and content.
    pub hash: String,
}

impl Contents {
    /// Read every file under `dir`. A link anywhere in the folder, a file that is neither
    /// a regular file nor a directory, a name that is not UTF-8 or a folder over the caps
    /// is refused: a pin must cover exactly what a conversation can reach.
    pub fn read(dir: &Path) -> Result<Self, String> {
        let mut files = Vec::new();
        let mut total = 0u64;
        walk(dir, "", &mut files, &mut total)?;
        files.sort_by(|a, b| a.path.cmp(&b.path));
        let hash = hash(&files);
        Ok(Self { files, hash })
    }

    /// The file at `path`, if the folder has it.
    pub fn file(&self, path: &str) -> Option<&File> {
        self.files.iter().find(|f| f.path == path)
    }
}

fn walk(dir: &Path, prefix: &str, out: &mut Vec<File>, total: &mut u64) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            return Err(format!("{}: a file name is not UTF-8", dir.display()));
        };
        let rel = format!("{prefix}{name}");
        let meta = entry
            .metadata()
            .map_err(|e| format!("{}: {e}", entry.path().display()))?;
        if meta.is_dir() {
            walk(&entry.path(), &format!("{rel}/"), out, total)?;
        } else if meta.is_file() {
            *total += meta.len();
            if out.len() >= MAX_FILES || *total > MAX_BYTES {
                return Err(format!(
                    "the folder holds more than {MAX_FILES} files or {} MiB",
                    MAX_BYTES / (1024 * 1024)
                ));
            }
            let mut bytes = Vec::with_capacity(meta.len() as usize);
            std::fs::File::open(entry.path())
                .and_then(|mut f| f.read_to_end(&mut bytes))
                .map_err(|e| format!("{rel}: {e}"))?;
            let mode = meta.permissions().mode() & 0o777;
            out.push(File {
                path: rel,
                executable: mode & 0o100 != 0,
                mode,
                bytes,
            });
        } else if meta.file_type().is_symlink() {
            return Err(format!(
                "{rel} is a symbolic link; a skill holds only its own files"
            ));
        } else {
            return Err(format!("{rel} is not a regular file"));
        }
    }
    Ok(())
}

/// The hash of `files` (sorted): each path, its mode and its length, then its bytes.
fn hash(files: &[File]) -> String {
    let mut hasher = Sha256::new();
    for file in files {
        hasher.update(file.path.as_bytes());
        hasher.update([0, u8::from(file.executable)]);
        hasher.update((file.bytes.len() as u64).to_le_bytes());
        hasher.update(&file.bytes);
    }
    format!("sha256:{:x}", hasher.finalize())
}

/// One trusted skill in the lock file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pin {
    /// The content hash the operator trusted.
    pub sha256: String,
    /// The folder it was trusted in.
    pub path: PathBuf,
}

/// The lock file: trusted skills by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pins {
    /// Where it is kept.
    pub file: PathBuf,
    /// By skill name.
    pub skills: BTreeMap<String, Pin>,
}

/// What the lock file opens with.
const HEADER: &str = "# Trusted Agent Skills: each skill's content hash, written by \
`switchboard skills trust <name>`.\n# A skill whose files no longer hash to its pin is not \
loaded until it is trusted again.\n\n";

impl Pins {
    /// The lock file at `file`; none there yet is an empty one.
    pub fn read(file: &Path) -> Result<Self, String> {
        let text = match std::fs::read_to_string(file) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(format!("{}: {e}", file.display())),
        };
        let skills = toml::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        Ok(Self {
            file: file.to_path_buf(),
            skills,
        })
    }

    /// Write the lock file whole (through a file beside it, renamed over it).
    pub fn write(&self) -> Result<(), String> {
        let body = toml::to_string(&self.skills).map_err(|e| e.to_string())?;
        if let Some(dir) = self.file.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let tmp = self.file.with_extension("lock.tmp");
        std::fs::write(&tmp, format!("{HEADER}{body}"))
            .and_then(|()| std::fs::rename(&tmp, &self.file))
            .map_err(|e| format!("{}: {e}", self.file.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_covers_every_file_its_path_and_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let skill = dir.path();
        std::fs::write(skill.join("SKILL.md"), "a").unwrap();
        std::fs::create_dir(skill.join("scripts")).unwrap();
        std::fs::write(skill.join("scripts/run.sh"), "echo hi").unwrap();
        let first = Contents::read(skill).unwrap();
        assert_eq!(first.files.len(), 2);
        assert_eq!(first.files[1].path, "scripts/run.sh");
        assert_eq!(Contents::read(skill).unwrap().hash, first.hash, "stable");
        let perms = std::fs::Permissions::from_mode(0o755);
        std::fs::set_permissions(skill.join("scripts/run.sh"), perms).unwrap();
        let exec = Contents::read(skill).unwrap();
        assert_ne!(exec.hash, first.hash, "the mode counts");
        std::fs::write(skill.join("scripts/run.sh"), "echo ho").unwrap();
        assert_ne!(
            Contents::read(skill).unwrap().hash,
            exec.hash,
            "the bytes count"
        );
        std::fs::write(skill.join("extra"), "").unwrap();
        assert_eq!(
            Contents::read(skill).unwrap().files.len(),
            3,
            "every file counts"
        );
    }

    #[test]
    fn a_link_in_the_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("SKILL.md"), "a").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("leak")).unwrap();
        let err = Contents::read(dir.path()).unwrap_err();
        assert!(err.contains("symbolic link"), "{err}");
    }

    #[test]
    fn the_lock_file_round_trips_and_a_missing_one_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sub/skills.lock");
        let mut pins = Pins::read(&file).unwrap();
        assert!(pins.skills.is_empty());
        let pin = Pin {
            sha256: "sha256:ab".into(),
            path: "/skills/pdf".into(),
        };
        pins.skills.insert("pdf".into(), pin);
        pins.write().unwrap();
        assert_eq!(Pins::read(&file).unwrap(), pins);
        std::fs::write(&file, "[pdf]\nsha = 1\n").unwrap();
        assert!(Pins::read(&file).unwrap_err().contains("skills.lock"));
    }
}
