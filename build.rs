//! Two things the build must know that cargo does not track by itself:
//!
//! - `sqlx::migrate!` embeds the files of `migrations/` at compile time, and cargo does not
//!   otherwise notice a new file there.
//! - `switchboard --version` names the commit it was built from (`SWITCHBOARD_COMMIT` in
//!   the crate's environment): `git rev-parse --short HEAD` where the source is a git
//!   checkout, else the `SWITCHBOARD_COMMIT` the build was given (the Docker build has no
//!   `.git` and passes it as a build argument), else `unknown`. Cargo runs this again when
//!   HEAD moves (a commit, a checkout), watching only files that exist, so an ordinary
//!   rebuild does not rerun it.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=migrations");
    println!("cargo::rerun-if-env-changed=SWITCHBOARD_COMMIT");
    let from_git = Path::new(".git").exists().then(git_head).flatten();
    let commit = from_git
        .or_else(|| std::env::var("SWITCHBOARD_COMMIT").ok())
        .filter(|c| !c.trim().is_empty())
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo::rustc-env=SWITCHBOARD_COMMIT={}", commit.trim());
}

/// The short hash of HEAD, after asking cargo to watch the files that say where HEAD is.
fn git_head() -> Option<String> {
    // HEAD itself (which branch), that branch's ref file, and packed refs, wherever this
    // checkout (or worktree) keeps them.
    let branch = git(&["symbolic-ref", "-q", "HEAD"]);
    let watched = ["HEAD", "packed-refs"]
        .into_iter()
        .map(str::to_owned)
        .chain(branch);
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--git-path", &name])
            && Path::new(&path).exists()
        {
            println!("cargo::rerun-if-changed={path}");
        }
    }
    git(&["rev-parse", "--short", "HEAD"])
}

/// `git args…` in the package's folder: its trimmed output, when it succeeded.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_owned())
}
