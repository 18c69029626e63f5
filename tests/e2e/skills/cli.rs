//! `switchboard check`, `skills list`, `skills trust` and `doctor` about skills, through the
//! real binary: an invalid skill named with its path and reason, trust recorded and shown,
//! a changed skill reported with how to trust it again, `--config` before or after `skills list`.

use std::path::PathBuf;
use std::process::Command;

use super::Shelf;
use crate::helpers::output_text;

/// A config holding `shelf`'s `[skills]` and a profile `ops` that may use `deploy`.
fn config(shelf: &Shelf) -> PathBuf {
    let config = shelf.path().join("switchboard.toml");
    let data = shelf.path().join("data");
    let text = format!(
        "[gateway]\ndata_dir = \"{}\"\n{}[agents.ops]\nskills = [\"deploy\"]\n",
        data.display(),
        shelf.config()
    );
    std::fs::write(&config, text).unwrap();
    config
}

/// Run the binary with `args` on a config holding `shelf`'s `[skills]`; exit code and output.
fn run(shelf: &Shelf, args: &[&str]) -> (Option<i32>, String) {
    let config = config(shelf);
    let (command, rest) = args.split_first().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .arg(command)
        .arg("--config")
        .arg(&config)
        .args(rest)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    (out.status.code(), format!("{stdout}{stderr}"))
}

#[test]
fn check_reports_an_invalid_skill_with_its_path_and_reason_and_fails() {
    let shelf = Shelf::new();
    let bad = shelf.add("Deploy_Tool", "name: Deploy_Tool\ndescription: x", "");
    shelf.add("deploy", "name: deploy\ndescription: Ships.", "");
    shelf.trust("deploy");
    let (code, out) = run(&shelf, &["check"]);
    assert_eq!(code, Some(1), "{out}");
    let line = out
        .lines()
        .find(|l| l.starts_with("skill Deploy_Tool"))
        .unwrap_or_default();
    assert!(
        line.contains("invalid, not loaded") && line.contains(&bad.display().to_string()),
        "{out}"
    );
    assert!(line.contains("must be lowercase"), "{out}");
    assert!(out.contains("skill deploy: trusted (1 files)"), "{out}");
}

#[test]
fn skills_trust_pins_a_skill_and_list_shows_states_and_profiles() {
    let shelf = Shelf::new();
    shelf.add("deploy", "name: deploy\ndescription: Ships.", "");
    shelf.add("notes", "name: notes\ndescription: Notes.", "");
    let (code, out) = run(&shelf, &["skills", "list"]);
    assert_eq!(code, Some(0), "{out}");
    let deploy = out.lines().find(|l| l.starts_with("deploy")).unwrap();
    assert!(
        deploy.contains("untrusted") && deploy.contains("profiles: default, ops"),
        "{out}"
    );
    assert!(out.contains("switchboard skills trust deploy"), "{out}");
    let (code, out) = run(&shelf, &["skills", "trust", "deploy"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("trusted deploy (sha256:"), "{out}");
    let lock = std::fs::read_to_string(shelf.path().join("skills.lock")).unwrap();
    assert!(
        lock.contains("[deploy]") && lock.contains("sha256 = \"sha256:"),
        "{lock}"
    );
    let (_, out) = run(&shelf, &["skills", "list"]);
    let deploy = out.lines().find(|l| l.starts_with("deploy")).unwrap();
    assert!(
        deploy.contains("trusted") && !deploy.contains("untrusted"),
        "{out}"
    );
    let notes = out.lines().find(|l| l.starts_with("notes")).unwrap();
    assert!(notes.contains("profiles: default"), "{out}");
    let (code, out) = run(&shelf, &["skills", "trust", "nope"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("no skill folder named \"nope\""), "{out}");
}

#[test]
fn skills_list_reads_the_config_given_before_or_after_the_subcommand() {
    let shelf = Shelf::new();
    shelf.add("deploy", "name: deploy\ndescription: Ships.", "");
    let config = config(&shelf);
    let x = config.to_str().unwrap();
    for line in [
        ["skills", "list", "--config", x],
        ["--config", x, "skills", "list"],
        ["skills", "--config", x, "list"],
    ] {
        // No `config/` where it runs: the file given is the only config it can read.
        let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .current_dir(shelf.path())
            .env_remove("SWITCHBOARD_CONFIG")
            .env_remove("SWITCHBOARD_FALLBACK_CONFIG")
            .args(line)
            .output()
            .unwrap();
        let text = output_text(&out);
        assert!(out.status.success(), "{line:?}: {text}");
        let deploy = text.lines().find(|l| l.starts_with("deploy"));
        assert!(
            deploy.is_some_and(|l| l.contains("profiles: default, ops")),
            "{line:?}: {text}"
        );
    }
}

#[test]
fn check_and_doctor_say_a_changed_skill_is_not_loaded_and_how_to_trust_it_again() {
    let shelf = Shelf::new();
    shelf.add("deploy", "name: deploy\ndescription: Ships.", "v1");
    shelf.trust("deploy");
    shelf.file("deploy", "scripts/run.sh", "echo changed", true);
    let (code, out) = run(&shelf, &["check"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("skill deploy: changed, not loaded"), "{out}");
    assert!(out.contains("`switchboard skills trust deploy`"), "{out}");
    let (_, out) = run(&shelf, &["doctor", "--json"]);
    let json = &out[out.find('[').unwrap_or(0)..=out.rfind(']').unwrap_or(0)];
    let findings: serde_json::Value =
        serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {out}"));
    let changed = findings
        .as_array()
        .unwrap()
        .iter()
        .find(|f| {
            f["what"]
                .as_str()
                .unwrap_or_default()
                .contains("skill `deploy` changed")
        })
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(changed["severity"], "warning");
    assert!(
        changed["fix"]
            .as_str()
            .unwrap()
            .contains("switchboard skills trust deploy")
    );
}
