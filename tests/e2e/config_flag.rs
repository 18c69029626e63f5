//! `--config` through the real binary: one global option, accepted before the subcommand,
//! after it, and after a nested subcommand's name or arguments, so writing it last (the habit
//! most command lines allow) works for every subcommand. Each run starts in a directory
//! without `config/`, so the file given is the only one it can have read.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::helpers::{free_port, output_text};

/// Runs the binary with `args` in `cwd`, with no config named by the environment.
fn switchboard(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .current_dir(cwd)
        .env_remove("SWITCHBOARD_CONFIG")
        .env_remove("SWITCHBOARD_FALLBACK_CONFIG")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// `args` with `--config file` first, then last.
fn placements<'a>(args: &[&'a str], file: &'a str) -> [Vec<&'a str>; 2] {
    let before = [&["--config", file][..], args].concat();
    let after = [args, &["--config", file][..]].concat();
    [before, after]
}

#[test]
fn config_is_accepted_before_or_after_every_subcommand_and_nested_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let data = dir.path().join("data");
    let file = dir.path().join("x.toml");
    std::fs::write(
        &file,
        format!(
            "[gateway]\nlisten = \"127.0.0.1:{port}\"\ndatabase_url = \"sqlite://{0}/sb.db\"\n\
             data_dir = \"{0}\"\n[provider]\nkind = \"openai\"\n\
             base_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\napi_key = \"not-used\"\n\
             [channels.web]\nkind = \"web\"\n",
            data.display()
        ),
    )
    .unwrap();
    let x = file.to_str().unwrap();
    let archive = dir.path().join("b.tar");
    let archive = archive.to_str().unwrap();
    let cases: [(&[&str], String); 11] = [
        (&["check"], format!("{x}: ok")),
        (&["migrate"], "migrations applied".into()),
        (&["config", "migrate"], format!("{x}: no deprecated keys")),
        (&["web-token"], format!("http://127.0.0.1:{port}/?token=")),
        (
            &["admin-token"],
            format!("http://127.0.0.1:{port}/admin/?token="),
        ),
        (&["schedules"], "no [[schedules]] in the config".into()),
        (&["access", "pending"], "nobody is waiting".into()),
        (&["memory", "list"], "no memories".into()),
        (&["audit"], "no audit entries".into()),
        (&["approvals", "--pending"], "no approvals".into()),
        (&["backup", archive], format!("wrote {archive}")),
    ];
    for (args, expected) in &cases {
        for line in placements(args, x) {
            let out = switchboard(dir.path(), &line);
            let text = output_text(&out);
            assert!(out.status.success(), "switchboard {line:?}: {text}");
            assert!(
                text.contains(expected.as_str()),
                "switchboard {line:?}: {text}"
            );
        }
    }
    // `doctor` exits 1 on a critical finding, 2 (clap) on a refused argument.
    for line in placements(&["doctor", "--json"], x) {
        let out = switchboard(dir.path(), &line);
        assert_ne!(out.status.code(), Some(2), "{}", output_text(&out));
        let findings: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(findings.is_array(), "{findings}");
    }
    // Without it there is no config here: the runs above read the file given.
    let out = switchboard(dir.path(), &["check"]);
    assert!(!out.status.success(), "{}", output_text(&out));
}
