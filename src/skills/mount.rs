//! A trusted skill's verified copy: the bytes that were hashed, written under
//! `<data_dir>/skills/<name>@<hash>/`. Conversations read that copy, never the source
//! folder: the file tools through a directory handle, the shell from a read-only mount of
//! it in the sandbox. Named by content, so replicas sharing `data_dir` agree on it.
//!
//! A copy already there is never taken on its name: the name is guessable (the lock file
//! holds the hash), so one planted before start would otherwise be served as the trusted
//! skill. Each start compares it with the verified bytes (every file, its mode, nothing
//! more, nothing linked, owned by the gateway and writable by nobody else) and replaces one
//! that differs. File modes are the source's: a file its author kept private (0600) stays
//! private to the gateway's user, so with a root gateway the sandbox user's tools cannot read
//! it (the file tools, which read as the gateway, can).

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::pin::Contents;

/// Mode of the directories of a copy: the sandbox user must traverse them to reach the
/// files the source lets others read.
const DIR_MODE: u32 = 0o755;

/// Make `dir` hold exactly `contents` as the copy of `name` under `root`, and return it. A
/// copy that differs from `contents` is logged, set aside and replaced. Built beside its
/// place and renamed into it, so a copy that exists is whole.
pub fn ensure(root: &Path, name: &str, contents: &Contents) -> Result<PathBuf, String> {
    let digest = contents.hash.trim_start_matches("sha256:");
    let dir = root.join(format!("{name}@{}", &digest[..digest.len().min(16)]));
    let fail = |what: &Path, e: std::io::Error| format!("{}: {e}", what.display());
    if std::fs::symlink_metadata(&dir).is_ok() {
        match verify(&dir, contents) {
            Ok(()) => return Ok(dir),
            Err(why) => {
                tracing::error!(
                    skill = name,
                    copy = %dir.display(),
                    "skills: refusing a copy that is not the trusted skill ({why}); writing it again from the verified files"
                );
                set_aside(root, name, &dir)?;
            }
        }
    }
    // Private to the gateway: the sandbox reaches a copy through its own mount of it, or
    // through search permission given where it has none (`sandbox::workspace`).
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true).mode(0o700);
    builder.create(root).map_err(|e| fail(root, e))?;
    let tmp = root.join(format!(".{name}.{}", uuid::Uuid::new_v4().simple()));
    if let Err(err) = write(&tmp, contents) {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(err);
    }
    match std::fs::rename(&tmp, &dir) {
        Ok(()) => Ok(dir),
        // Another replica (or start) put a copy there first: used only if it verifies.
        Err(_) if verify(&dir, contents).is_ok() => {
            let _ = std::fs::remove_dir_all(&tmp);
            Ok(dir)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            Err(fail(&dir, e))
        }
    }
}

/// Write every file of `contents` under the new directory `tmp`, each with its mode.
fn write(tmp: &Path, contents: &Contents) -> Result<(), String> {
    let fail = |what: &Path, e: std::io::Error| format!("{}: {e}", what.display());
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    let open = |dir: &Path| {
        builder.create(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(DIR_MODE))
    };
    open(tmp).map_err(|e| fail(tmp, e))?;
    for file in &contents.files {
        let path = tmp.join(&file.path);
        for parent in path.ancestors().skip(1).take_while(|p| *p != tmp) {
            open(parent).map_err(|e| fail(parent, e))?;
        }
        std::fs::write(&path, &file.bytes).map_err(|e| fail(&path, e))?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(file.mode))
            .map_err(|e| fail(&path, e))?;
    }
    Ok(())
}

/// Move the refused copy `dir` out of its name, then remove it. Moved first, so no call
/// resolves the name to it again even if removing fails.
fn set_aside(root: &Path, name: &str, dir: &Path) -> Result<(), String> {
    let aside = root.join(format!(".refused-{name}.{}", uuid::Uuid::new_v4().simple()));
    std::fs::rename(dir, &aside).map_err(|e| format!("{}: {e}", dir.display()))?;
    let removed = match std::fs::symlink_metadata(&aside) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(&aside),
        _ => std::fs::remove_file(&aside),
    };
    if let Err(err) = removed {
        tracing::warn!(path = %aside.display(), "skills: could not remove a refused copy: {err}");
    }
    Ok(())
}

/// Whether `dir` holds exactly `contents`: the same files with the same bytes and modes, no
/// other entry, no link, and everything owned by this process's user and writable by no
/// other (else its owner could change it after this check).
pub fn verify(dir: &Path, contents: &Contents) -> Result<(), String> {
    let mut seen = 0usize;
    check_dir(dir, "", contents, &mut seen)?;
    if seen != contents.files.len() {
        return Err("files are missing".to_owned());
    }
    Ok(())
}

fn check_dir(
    dir: &Path,
    prefix: &str,
    contents: &Contents,
    seen: &mut usize,
) -> Result<(), String> {
    owned(dir, prefix)?;
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
        let rel = format!("{prefix}{}", entry.file_name().to_string_lossy());
        let meta = std::fs::symlink_metadata(entry.path()).map_err(|e| format!("{rel}: {e}"))?;
        if meta.is_dir() {
            check_dir(&entry.path(), &format!("{rel}/"), contents, seen)?;
            continue;
        }
        let Some(file) = contents.file(&rel).filter(|_| meta.is_file()) else {
            return Err(format!("{rel} is not a file of the skill"));
        };
        owned(&entry.path(), &rel)?;
        if meta.permissions().mode() & 0o7777 != file.mode {
            return Err(format!(
                "{rel} has mode {:o}, not {:o}",
                meta.permissions().mode() & 0o7777,
                file.mode
            ));
        }
        let bytes = std::fs::read(entry.path()).map_err(|e| format!("{rel}: {e}"))?;
        if bytes != file.bytes {
            return Err(format!("{rel} differs"));
        }
        *seen += 1;
    }
    Ok(())
}

/// `path` is owned by this process's user, not a link, and not writable by others.
fn owned(path: &Path, rel: &str) -> Result<(), String> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    // SAFETY: geteuid has no arguments and cannot fail.
    let me = unsafe { libc::geteuid() };
    let what = if rel.is_empty() { "the copy" } else { rel };
    if meta.file_type().is_symlink() {
        return Err(format!("{what} is a link"));
    }
    if meta.uid() != me {
        return Err(format!("{what} is owned by uid {}", meta.uid()));
    }
    if meta.permissions().mode() & 0o022 != 0 {
        return Err(format!("{what} is writable by others"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill() -> (tempfile::TempDir, Contents) {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::create_dir_all(src.join("scripts")).unwrap();
        std::fs::write(src.join("SKILL.md"), "a").unwrap();
        std::fs::write(src.join("scripts/run.sh"), "echo").unwrap();
        let exec = std::fs::Permissions::from_mode(0o750);
        std::fs::set_permissions(src.join("scripts/run.sh"), exec).unwrap();
        let contents = Contents::read(&src).unwrap();
        (dir, contents)
    }

    #[test]
    fn a_copy_that_differs_in_any_way_is_refused_and_written_again() {
        let (dir, contents) = skill();
        let root = dir.path().join("skills");
        let copy = ensure(&root, "s", &contents).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        assert_eq!(
            mode(&copy.join("scripts/run.sh")),
            0o750,
            "the source's mode"
        );
        verify(&copy, &contents).unwrap();
        let tamper: [&dyn Fn(&Path); 4] = [
            &|c| std::fs::write(c.join("extra"), "").unwrap(),
            &|c| std::fs::write(c.join("SKILL.md"), "b").unwrap(),
            &|c| {
                let p = std::fs::Permissions::from_mode(0o755);
                std::fs::set_permissions(c.join("scripts/run.sh"), p).unwrap();
            },
            &|c| {
                std::fs::remove_file(c.join("SKILL.md")).unwrap();
                std::os::unix::fs::symlink("/etc/passwd", c.join("SKILL.md")).unwrap();
            },
        ];
        for (i, change) in tamper.iter().enumerate() {
            change(&copy);
            assert!(verify(&copy, &contents).is_err(), "change {i} went unseen");
            assert_eq!(ensure(&root, "s", &contents).unwrap(), copy);
            verify(&copy, &contents).unwrap();
            assert_eq!(std::fs::read(copy.join("SKILL.md")).unwrap(), b"a");
        }
        let left: Vec<_> = std::fs::read_dir(&root).unwrap().flatten().collect();
        assert_eq!(left.len(), 1, "refused copies are removed: {left:?}");
    }
}
