//! The data directory and every file the gateway writes in it (database, tokens,
//! transcripts, checkpoints, skills' copies): private to the gateway's user from the first
//! run. The binary sets a `077` umask before any command runs, so whatever a library it
//! uses creates (SQLite's `-wal` file, the Matrix SDK's stores) is `0600`/`0700` too, and the
//! directory itself is made `0700`. Where a root gateway's tools must pass through a
//! directory the gateway owns and no mount namespace opens a path for them, the sandbox adds
//! search permission only (`0711`), which the doctor still counts as private.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// Make files and directories this process creates from now on private to its user (the
/// umask of every thread and child; tool processes start under it too and may change it).
pub fn private_umask() {
    // SAFETY: umask only sets this process's file creation mask and cannot fail.
    unsafe { libc::umask(0o077) };
}

/// Create `data_dir` (and any missing parent) `0700` if it is not there yet; an existing
/// one is left as the operator made it (the doctor reviews its mode).
pub fn create(data_dir: &Path) -> std::io::Result<()> {
    if data_dir.as_os_str().is_empty() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(data_dir)
}

/// The dashboard's token file (`switchboard admin-token`), read by the dashboard and checked
/// by the doctor.
pub fn admin_token(data_dir: &Path) -> PathBuf {
    data_dir.join("admin.token")
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_new_data_directory_is_private_and_an_existing_one_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let fresh = dir.path().join("a/data");
        super::create(&fresh).unwrap();
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode();
        assert_eq!(mode(&fresh) & 0o777, 0o700);
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o750)).unwrap();
        super::create(&open).unwrap();
        assert_eq!(mode(&open) & 0o777, 0o750);
    }
}
