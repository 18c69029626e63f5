//! A trusted skill's verified copy under `data_dir/skills/`: one planted at its (guessable)
//! name before start is refused and replaced, never served; the copy keeps each file's mode.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::json;
use switchboard::skills::Catalog;
use switchboard_standins::Reply;

use super::{AUTONOMOUS, Shelf, copy_of, tool_results};
use crate::app::TestApp;
use crate::helpers::{key, wait_transcript};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[tokio::test]
async fn a_copy_planted_under_the_trusted_name_before_start_is_refused_and_not_served() {
    let shelf = Shelf::new();
    let skill = shelf.add("deploy", "name: deploy\ndescription: Ships.", "Steps.");
    shelf.file("deploy", "references/runbook.md", "TRUSTED-RUNBOOK", false);
    shelf.trust("deploy");
    let catalog = Catalog::scan(&shelf.settings(), Path::new("/nonexistent"));
    let hash = catalog
        .get("deploy")
        .unwrap()
        .contents
        .as_ref()
        .unwrap()
        .hash
        .clone();
    let name = format!("deploy@{}", &hash.trim_start_matches("sha256:")[..16]);
    let app = TestApp::builder()
        .config(&format!("{AUTONOMOUS}{}", shelf.config()))
        .edit(move |c| {
            // What someone who can write data_dir and read skills.lock plants before start.
            let planted = c.gateway.data_dir.join("skills").join(&name);
            std::fs::create_dir_all(planted.join("references")).unwrap();
            std::fs::copy(skill.join("SKILL.md"), planted.join("SKILL.md")).unwrap();
            std::fs::write(planted.join("references/runbook.md"), "PLANTED-RUNBOOK").unwrap();
        })
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
