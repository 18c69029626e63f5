//! Confinement of tool paths to the conversation's workspace: relative paths only, no `..`,
//! and no symlinks anywhere along the way (a link could point outside).

use std::path::{Component, Path, PathBuf};

/// Resolve `relative` inside `root`, refusing anything that could leave it.
pub fn confine(root: &Path, relative: &str) -> Result<PathBuf, String> {
    let rel = Path::new(relative.trim());
    if rel.is_absolute() {
        return Err(format!(
            "{relative:?} is absolute; use a path relative to the workspace"
        ));
    }
    let mut resolved = root.to_path_buf();
    for component in rel.components() {
        match component {
            Component::Normal(part) => {
                resolved.push(part);
                if resolved
                    .symlink_metadata()
                    .is_ok_and(|m| m.file_type().is_symlink())
                {
                    return Err(format!(
                        "{relative:?} goes through a symlink, which is not followed"
                    ));
                }
            }
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(format!("{relative:?} contains `..`, which is not allowed"));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!("{relative:?} is not a relative path"));
            }
        }
    }
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_stay_inside_and_escapes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            confine(dir.path(), "a/b.txt").unwrap(),
            dir.path().join("a/b.txt")
        );
        assert_eq!(confine(dir.path(), ".").unwrap(), dir.path());
        for bad in ["/etc/passwd", "../x", "a/../../x"] {
            assert!(confine(dir.path(), bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn a_symlink_out_of_the_workspace_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/etc", dir.path().join("etc")).unwrap();
        assert!(
            confine(dir.path(), "etc/passwd")
                .unwrap_err()
                .contains("symlink")
        );
    }
}
