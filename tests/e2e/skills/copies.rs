//! A trusted skill's verified copy under `data_dir/skills/`: one planted at its (guessable)
//! name before start is refused and replaced, never served; the copy keeps each file's mode.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::json;
use switchboard::config::skills::SkillsConfig;
use switchboard::skills::Catalog;
use switchboard_standins::Reply;

use super::{AUTONOMOUS, Shelf, copy_of, tool_results};
use crate::app::TestApp;
use crate::helpers::{key, wait_transcript};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// A trusted skill `deploy` with a runbook, on a new shelf.
fn trusted_deploy() -> Shelf {
    let shelf = Shelf::new();
    shelf.add("deploy", "name: deploy\ndescription: Ships.", "Steps.");
    shelf.file("deploy", "references/runbook.md", "TRUSTED-RUNBOOK", false);
    shelf.trust("deploy");
    shelf
}

/// What someone who can write `data_dir` and read `skills.lock` plants before start: a
/// folder at the copy's name, its runbook changed.
fn plant(skills: &SkillsConfig, data_dir: &Path) {
    let catalog = Catalog::scan(skills, Path::new("/nonexistent"));
    let found = catalog.get("deploy").unwrap();
    let hash = &found.contents.as_ref().unwrap().hash;
    let name = format!("deploy@{}", &hash.trim_start_matches("sha256:")[..16]);
    let planted = data_dir.join("skills").join(name);
    std::fs::create_dir_all(planted.join("references")).unwrap();
    std::fs::copy(found.path.join("SKILL.md"), planted.join("SKILL.md")).unwrap();
    std::fs::write(planted.join("references/runbook.md"), "PLANTED-RUNBOOK").unwrap();
}

#[tokio::test]
async fn a_copy_planted_under_the_trusted_name_before_start_is_refused_and_not_served() {
    let shelf = trusted_deploy();
    let skills = shelf.settings();
    let app = TestApp::builder()
        .config(&format!("{AUTONOMOUS}{}", shelf.config()))
        .edit(move |c| plant(&skills, &c.gateway.data_dir))
        .start()
        .await;
    let copy = copy_of(&app, "deploy");
    let runbook = copy.join("references/runbook.md");
    assert_eq!(
        std::fs::read_to_string(&runbook).unwrap(),
        "TRUSTED-RUNBOOK"
    );
    app.llm
        .push(Reply::tool_call(
            "file_read",
            json!({"path": runbook.display().to_string()}),
        ))
        .push(Reply::text("Read."));
    let chat = key("planted");
    app.channel
        .say(&chat, "u1", "read the runbook")
        .await
        .unwrap();
    wait_transcript(&app.channel, &chat, |t| {
        t.last().is_some_and(|m| m == "Read.")
    })
    .await;
    let read = tool_results(&app.llm.requests().pop().unwrap())
        .pop()
        .unwrap();
    assert!(
        read.contains("TRUSTED-RUNBOOK") && !read.contains("PLANTED"),
        "{read}"
    );
}

#[tokio::test]
async fn a_skill_file_keeps_its_mode_in_the_copy_and_a_private_one_stays_private() {
    let shelf = Shelf::new();
    shelf.add(
        "keys",
        "name: keys\ndescription: Holds a private note.",
        "Body.",
    );
    shelf.file("keys", "references/private.md", "PRIVATE", false);
    shelf.file("keys", "scripts/run.sh", "#!/bin/bash\necho run\n", true);
    let private = shelf.path().join("skills/keys/references/private.md");
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o600)).unwrap();
    shelf.trust("keys");
    let app = TestApp::spawn_with(&format!("{AUTONOMOUS}{}", shelf.config())).await;
    let copy = copy_of(&app, "keys");
    assert_eq!(mode(&copy.join("references/private.md")), 0o600);
    assert_eq!(mode(&copy.join("scripts/run.sh")), 0o755);
    assert_eq!(mode(&copy.join("SKILL.md")), 0o644);
}

#[test]
fn the_running_gateway_logs_the_refused_copy() {
    let shelf = trusted_deploy();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    plant(&shelf.settings(), &data);
    let file = dir.path().join("gw.toml");
    let text = format!(
        "[gateway]\nlisten = \"127.0.0.1:0\"\ndata_dir = \"{}\"\ndatabase_url = \"sqlite://{}/gw.db\"\n{}",
        data.display(),
        dir.path().display(),
        shelf.config()
    );
    std::fs::write(&file, text).unwrap();
    let mut run = std::process::Command::new(env!("CARGO_BIN_EXE_switchboard"));
    run.args(["run", "--config"]).arg(&file);
    let lines = crate::logs::start_up_log(run);
    let refused = lines.iter().find(|l| l.contains("refusing a copy"));
    assert!(
        refused
            .is_some_and(|l| l.contains("ERROR") && l.contains("deploy") && l.contains("differs")),
        "{lines:#?}"
    );
}
