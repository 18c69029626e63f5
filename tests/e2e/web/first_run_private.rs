//! The data directory a first run leaves behind is private: the real binary on the example
//! config makes `data_dir` `0700` and every file in it its own user's alone, and its doctor
//! then has nothing to say about the data directory. Loosened by hand, the doctor says so.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use super::first_run::{example_command, run_example, stop};
use crate::helpers::free_port;

/// `switchboard doctor` on the example config with `dir`'s data directory (as `run_example`
/// sets it): its exit code and output.
fn doctor(dir: &Path, port: u16) -> (Option<i32>, String) {
    let out = example_command("doctor", dir, port).output().unwrap();
    let text = crate::helpers::output_text(&out);
    (out.status.code(), text)
}

/// Every entry under `dir` whose mode lets its group or others read or write it.
fn shared_entries(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let meta = std::fs::symlink_metadata(entry.path()).unwrap();
        if meta.mode() & 0o066 != 0 {
            out.push(format!(
                "{} {:o}",
                entry.path().display(),
                meta.mode() & 0o7777
            ));
        }
        if meta.is_dir() {
            out.extend(shared_entries(&entry.path()));
        }
    }
    out
}

#[tokio::test]
async fn a_first_run_leaves_a_private_data_directory_that_the_doctor_does_not_warn_about() {
    let (dir, port) = (tempfile::tempdir().unwrap(), free_port());
    let mut gateway = run_example(dir.path(), port, &[]).await;
    stop(&mut gateway);
    let data = dir.path().join("data");
    let mode = std::fs::metadata(&data).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode & 0o066, 0, "data_dir is {mode:o}");
    assert_eq!(shared_entries(&data), Vec::<String>::new());
    assert!(
        std::fs::metadata(dir.path().join("sb.db")).unwrap().mode() & 0o077 == 0,
        "the database is private"
    );
    let (code, out) = doctor(dir.path(), free_port());
    assert_eq!(code, Some(0), "{out}");
    assert!(!out.contains("data directory"), "{out}");

    for (bits, label) in [(0o770, "warning: "), (0o777, "CRITICAL: ")] {
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(bits)).unwrap();
        let (code, out) = doctor(dir.path(), free_port());
        let line = out
            .lines()
            .find(|l| l.contains("the data directory"))
            .unwrap_or_default();
        assert!(
            line.starts_with(label) && line.contains("-writable"),
            "{bits:o}: {out}"
        );
        assert_eq!(code, Some(i32::from(bits == 0o777)), "{out}");
    }
}
