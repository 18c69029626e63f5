//! A trusted skill's verified copy: the bytes that were hashed, written under
//! `<data_dir>/skills/<name>@<hash>/`. Conversations read that copy, never the source
//! folder: the file tools through a directory handle, the shell from a read-only mount of
//! it in the sandbox. Named by content, so a copy is written once and replicas sharing
//! `data_dir` agree on it.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::pin::Contents;

/// Write `contents` as the copy of `name` under `root`, unless it is already there, and
/// return its directory. Built beside it and renamed into place, so a copy that exists is
/// whole.
pub fn ensure(root: &Path, name: &str, contents: &Contents) -> Result<PathBuf, String> {
    let digest = contents.hash.trim_start_matches("sha256:");
    let dir = root.join(format!("{name}@{}", &digest[..digest.len().min(16)]));
    if dir.is_dir() {
        return Ok(dir);
    }
    let fail = |what: &Path, e: std::io::Error| format!("{}: {e}", what.display());
    // Readable by the sandbox user tools drop to; writable by the gateway only.
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true).mode(0o755);
    builder.create(root).map_err(|e| fail(root, e))?;
    let tmp = root.join(format!(".{name}.{}", uuid::Uuid::new_v4().simple()));
    builder.create(&tmp).map_err(|e| fail(&tmp, e))?;
    let written = (|| {
        for file in &contents.files {
            let path = tmp.join(&file.path);
            if let Some(parent) = path.parent() {
                builder.create(parent).map_err(|e| fail(parent, e))?;
            }
            std::fs::write(&path, &file.bytes).map_err(|e| fail(&path, e))?;
            let mode = if file.executable { 0o755 } else { 0o644 };
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
                .map_err(|e| fail(&path, e))?;
        }
        Ok::<(), String>(())
    })();
    if let Err(err) = written {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(err);
    }
    match std::fs::rename(&tmp, &dir) {
        Ok(()) => Ok(dir),
        // Another replica (or start) put the same content there first.
        Err(_) if dir.is_dir() => {
            let _ = std::fs::remove_dir_all(&tmp);
            Ok(dir)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            Err(fail(&dir, e))
        }
    }
}
