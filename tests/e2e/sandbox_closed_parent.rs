//! A root gateway's data directory under a directory its tools' user may not enter, as on a
//! VPS whose checkout is `/root/switchboard`: an approved command runs there and reaches its
//! workspace, `HOME` and `TMPDIR` by their paths. Where nothing can open a path for that user
//! (no mount namespace), the start-up probe finds it, `enforce` names the directory and the
//! doctor calls it critical.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::json;
use switchboard_standins::Reply;

use crate::app::TestApp;
use crate::approvals::{POLICY, buttons_channel, prompt};
use crate::helpers::{key, wait_transcript};

/// `parent/closed` made `0700`, and the data directory inside it.
pub(crate) fn closed_data_dir(parent: &Path) -> PathBuf {
    let closed = parent.join("closed");
    std::fs::create_dir_all(&closed).unwrap();
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).unwrap();
    closed.join("data")
}

fn is_root() -> bool {
    // SAFETY: geteuid has no arguments and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

#[tokio::test]
async fn an_approved_command_runs_when_the_data_directory_sits_under_a_closed_directory() {
    let app = TestApp::builder()
        .fake(buttons_channel())
        .config(POLICY)
        .edit(|c| c.gateway.data_dir = closed_data_dir(&c.gateway.data_dir))
        .start()
        .await;
    let command =
        "echo ran > made.txt && cat \"$HOME/made.txt\" && touch \"$TMPDIR/t\" && echo tmp-ok";
    app.llm
        .push(Reply::tool_call("shell", json!({"command": command})))
        .push(Reply::text("Ran."));
    let chat = key("closed");
    app.channel
        .say(&chat, "admin", "make a file")
        .await
        .unwrap();
    let (once, _, _) = prompt(&app.channel, &chat).await;
    app.channel.press(&chat, "admin", &once).await.unwrap();
    wait_transcript(&app.channel, &chat, |t| {
        t.last().is_some_and(|m| m == "Ran.")
    })
    .await;
    let ran = crate::sandbox::last_tool_message(&app);
    assert!(
        ran.contains("exit code: 0") && ran.contains("ran") && ran.contains("tmp-ok"),
        "{ran}"
    );
    let workspace = app.config.gateway.data_dir.join("workspaces/fake/closed");
    assert_eq!(
        std::fs::read_to_string(workspace.join("made.txt")).unwrap(),
        "ran\n"
    );
    let ready: serde_json::Value = reqwest::get(app.url("/readyz"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let checks = ready["checks"].as_array().unwrap();
    let sandbox = checks.iter().find(|c| c["name"] == "sandbox").unwrap();
    assert_eq!(sandbox["ok"], true, "{sandbox:#}");
    if is_root() {
        let posture = &sandbox["posture"];
        assert_eq!(
            posture["uid"], 65534,
            "tools dropped to the sandbox user: {posture:#}"
        );
        assert_eq!(posture["workspaces_private"], true, "{posture:#}");
    }
}

#[test]
fn without_a_mount_namespace_a_closed_directory_is_found_and_named_by_check_and_doctor() {
    if !is_root() {
        // Tools run as the gateway's own user, which entered the directory itself.
        eprintln!("NOTICE: not root; tools share the gateway's uid, nothing to find");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = closed_data_dir(dir.path());
    let file = dir.path().join("gw.toml");
    let text = format!(
        "[gateway]\nlisten = \"127.0.0.1:{}\"\ndata_dir = \"{}\"\ndatabase_url = \"sqlite://{}/gw.db\"\n\
         [sandbox]\nnamespaces = false\n",
        crate::helpers::free_port(),
        data.display(),
        dir.path().display()
    );
    std::fs::write(&file, text).unwrap();
    let closed = dir.path().join("closed").display().to_string();
    let run = |what: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .args([what, "--config"])
            .arg(&file)
            .output()
            .unwrap();
        let text = crate::helpers::output_text(&out);
        (out.status.code(), text)
    };
    let (_, check) = run("check");
    assert!(
        check.contains("the shell is disabled") && check.contains(&format!("{closed} is closed")),
        "{check}"
    );
    let (code, doctor) = run("doctor");
    assert_eq!(code, Some(1), "{doctor}");
    assert!(
        doctor.contains("CRITICAL: no tool can run on this host") && doctor.contains(&closed),
        "{doctor}"
    );
}
