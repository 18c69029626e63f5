//! Deprecated config keys through the real binary: `check` lists each with file and line,
//! `run` warns once naming the new key, and `config migrate` shows the diff, writes only
//! with `--yes` (no terminal here), and leaves a file `check` finds current.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::helpers::free_port;

/// A config written by hand, with comments, using the old name of `edit_min_interval_ms`.
const OLD: &str = "# Our gateway.\n[gateway]\nlisten = \"127.0.0.1:0\"\n\n\
                   [streaming]\n# The group is busy: fewer edits.\n\
                   progress_min_interval_ms = 1500   # ms\nchunk_min_chars = 40\n";

/// `OLD` in its current form: only the key's name differs.
const CURRENT: &str = "# Our gateway.\n[gateway]\nlisten = \"127.0.0.1:0\"\n\n\
                       [streaming]\n# The group is busy: fewer edits.\n\
                       edit_min_interval_ms = 1500   # ms\nchunk_min_chars = 40\n";

/// Runs `switchboard <args> --config <file>` with no terminal on stdin; (exit code, stdout,
/// stderr).
fn switchboard(args: &[&str], file: &Path) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(args)
        .arg("--config")
        .arg(file)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn check_lists_a_renamed_key_and_config_migrate_yes_rewrites_it_keeping_comments_and_mode() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sb.toml");
    std::fs::write(&file, OLD).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    let shown = file.display().to_string();

    let (code, out, err) = switchboard(&["check"], &file);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains(&format!(
            "deprecated: {shown}:7:1: `streaming.progress_min_interval_ms` is deprecated: it \
             is now `streaming.edit_min_interval_ms`"
        )),
        "{out}"
    );

    let (code, out, err) = switchboard(&["config", "migrate"], &file);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains(
            "-progress_min_interval_ms = 1500   # ms\n+edit_min_interval_ms = 1500   # ms\n"
        ),
        "the diff comes first: {out}"
    );
    assert!(
        out.contains("not written") && out.contains("--yes"),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        OLD,
        "nothing written"
    );

    let (code, out, err) = switchboard(&["config", "migrate", "--yes"], &file);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("+edit_min_interval_ms"), "{out}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), CURRENT);
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640, "the file keeps its mode");
    let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(leftovers, 1, "no temporary file is left beside it");

    let (code, out, err) = switchboard(&["check"], &file);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(!out.contains("deprecated"), "{out}");
    let (code, out, _) = switchboard(&["config", "migrate", "--yes"], &file);
    assert_eq!(code, Some(0));
    assert!(out.contains("nothing to migrate"), "{out}");
}

#[test]
fn config_migrate_refuses_a_file_setting_both_names_and_leaves_it_alone() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sb.toml");
    let both = format!("{OLD}edit_min_interval_ms = 10\n");
    std::fs::write(&file, &both).unwrap();
    let (code, out, err) = switchboard(&["config", "migrate", "--yes"], &file);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.contains(":7:1: key `streaming.progress_min_interval_ms`: was renamed to"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), both);
}

#[test]
fn run_logs_one_warning_naming_the_new_key_for_a_deprecated_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sb.toml");
    let text = OLD.replace(
        "listen = \"127.0.0.1:0\"",
        &format!(
            "listen = \"127.0.0.1:{}\"\ndata_dir = \"{1}\"\ndatabase_url = \"sqlite://{1}/sb.db\"",
            free_port(),
            dir.path().display()
        ),
    );
    std::fs::write(&file, text).unwrap();
    let mut gateway = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["run", "--config"])
        .arg(&file)
        .env("NO_COLOR", "1")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let log = BufReader::new(gateway.stderr.take().unwrap());
    let mut warnings = Vec::new();
    let mut ready = false;
    for line in log.lines().take(200) {
        let line = line.unwrap();
        if line.contains("progress_min_interval_ms") {
            warnings.push(line.clone());
        }
        if line.contains("gateway ready") {
            ready = true;
            break;
        }
    }
    let _ = gateway.kill();
    let _ = gateway.wait();
    assert!(ready, "the gateway starts on the old name: {warnings:?}");
    let [warning] = warnings.as_slice() else {
        panic!("one warning expected: {warnings:?}")
    };
    assert!(
        warning.contains("WARN") && warning.contains("it is now `streaming.edit_min_interval_ms`"),
        "{warning}"
    );
    assert!(warning.contains("sb.toml:9:1"), "its line: {warning}");
}
