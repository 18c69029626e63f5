//! The Docker setup without a Docker engine: `compose` reads the compose files and the
//! Dockerfile as a fresh clone has them (what they mount and copy is tracked by git; the
//! PostgreSQL override really points the gateway at a healthy `postgres` service); `run`
//! starts the binary exactly as the image does (its ENV, a `/data`-like working directory,
//! the baked config, a non-root user) and follows the generated web chat token through
//! `switchboard web-token`, a restart and a rotation.

mod compose;
mod run;

use std::path::{Path, PathBuf};

/// The repository root (tests run from the package directory, which is the root).
fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Dockerfile's final stage: the instructions after its last `FROM`, continuation lines
/// joined, comments dropped.
fn runtime_stage() -> Vec<String> {
    let text = std::fs::read_to_string(repo().join("Dockerfile")).expect("Dockerfile");
    let mut instructions: Vec<String> = Vec::new();
    let mut open = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let (body, continues) = match line.strip_suffix('\\') {
            Some(body) => (body.trim(), true),
            None => (line, false),
        };
        match instructions.last_mut() {
            Some(last) if open => {
                last.push(' ');
                last.push_str(body);
            }
            _ => instructions.push(body.to_owned()),
        }
        open = continues;
    }
    let last_from = instructions
        .iter()
        .rposition(|i| i.starts_with("FROM "))
        .expect("a FROM");
    instructions.split_off(last_from + 1)
}

/// `ENV` of the runtime image, in order (`KEY=value` pairs, no quoting used).
fn image_env() -> Vec<(String, String)> {
    runtime_stage()
        .iter()
        .filter_map(|i| i.strip_prefix("ENV "))
        .flat_map(str::split_whitespace)
        .map(|pair| {
            let (key, value) = pair.split_once('=').expect("ENV KEY=value");
            (key.to_owned(), value.to_owned())
        })
        .collect()
}

/// The runtime image's `COPY` of a file from the build context: (source, destination).
fn image_copies() -> Vec<(String, String)> {
    runtime_stage()
        .iter()
        .filter_map(|i| i.strip_prefix("COPY "))
        .filter(|rest| !rest.starts_with("--from"))
        .map(|rest| {
            let parts: Vec<&str> = rest.split_whitespace().collect();
            assert_eq!(parts.len(), 2, "COPY <src> <dest>: {rest}");
            (parts[0].to_owned(), parts[1].to_owned())
        })
        .collect()
}

/// Whether `path` (relative to the root, a file or a directory) is in a fresh clone: git
/// tracks it, or a file under it.
fn tracked(path: &Path) -> bool {
    let out = std::process::Command::new("git")
        .arg("ls-files")
        .arg("--")
        .arg(path)
        .current_dir(repo())
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git ls-files: {out:?}");
    !out.stdout.is_empty()
}
