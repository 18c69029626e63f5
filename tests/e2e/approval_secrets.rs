//! A tool call whose arguments hold a configured secret: the prompt, the stored approval,
//! the audit row and the history show it redacted, and approving still runs the command
//! exactly as the model wrote it (the raw call lives only in the approval's `state`).

use serde_json::json;
use switchboard::command::ApprovalButton;
use switchboard_standins::{Reply, eventually};

use crate::approvals::{POLICY, buttons_channel, prompt};
use crate::audit::wait_audit;
use crate::helpers::{TestApp, WAIT, key, wait_inbox_idle, wait_transcript};

/// The provider key `test_config` configures.
const SECRET: &str = "test-key-not-real";

#[tokio::test]
async fn a_secret_in_tool_arguments_is_redacted_everywhere_but_the_approved_call_still_uses_it() {
    let app = TestApp::spawn_on(buttons_channel(), POLICY).await;
    let command = format!("echo {SECRET} > token.txt");
    app.llm
        .push(Reply::tool_call("shell", json!({ "command": command })))
        .push(Reply::text("Saved."));
    let chat = key("argsecret");
    app.channel.say(&chat, "alice", "save it").await.unwrap();
    let (once, _, _) = prompt(&app.channel, &chat).await;
    let id = once.parse::<ApprovalButton>().unwrap().id;
    let stored = app.store().approval(&id).await.unwrap().unwrap();
    for shown in [&stored.args, &stored.rule, &stored.reason] {
        assert!(
            !shown.contains(SECRET),
            "stored approval shows it: {stored:#?}"
        );
    }
    assert!(stored.args.contains("echo test*[REDACTED]"), "{stored:#?}");

    app.channel.press(&chat, "alice", &once).await.unwrap();
    wait_transcript(&app.channel, &chat, |t| {
        t.last().is_some_and(|m| m == "Saved.")
    })
    .await;
    let written = app
        .config
        .gateway
        .data_dir
        .join("workspaces/fake/argsecret/token.txt");
    assert_eq!(std::fs::read_to_string(written).unwrap().trim(), SECRET);

    wait_inbox_idle(&app.store()).await;
    let audit = wait_audit(&app, &chat, 1).await;
    let history = app.store().history(&chat, 10).await.unwrap();
    let texts: Vec<String> = app.channel.calls().into_iter().map(|c| c.text).collect();
    for (place, text) in [
        ("chat", format!("{texts:?}")),
        (
            "button answers",
            format!("{:?}", app.channel.button_answers()),
        ),
        ("audit", format!("{audit:?}")),
        ("history", format!("{history:?}")),
    ] {
        assert!(!text.contains(SECRET), "{place} shows the secret: {text}");
    }
    assert!(
        format!("{history:?}").contains("[REDACTED]"),
        "{history:#?}"
    );
    eventually(
        WAIT,
        "the raw call to be forgotten after it ran",
        async || {
            let approval = app.store().approval(&id).await.unwrap().unwrap();
            approval.state.is_empty().then_some(()).ok_or(())
        },
    )
    .await;
}
