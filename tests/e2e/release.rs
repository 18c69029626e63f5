//! What a release tells its user: `switchboard --version` names the version and the commit
//! the binary was built from (`build.rs`).

use std::process::Command;

#[test]
fn version_names_the_release_and_the_commit_it_was_built_from() {
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(out.status.success());
    let printed = String::from_utf8(out.stdout).unwrap();
    let head = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    // A source tree without git (an unpacked archive) builds as `unknown`.
    let commit = head.unwrap_or_else(|| "unknown".to_owned());
    assert_eq!(
        printed.trim(),
        format!(
            "switchboard {} (commit {commit})",
            env!("CARGO_PKG_VERSION")
        )
    );
}
