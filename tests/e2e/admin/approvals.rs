//! An approval pressed on the dashboard: the call runs once, the chat is told who decided,
//! the audit names the operator, and the decided approval's call is no longer shown.

use serde_json::json;
use switchboard::admin::OPERATOR_USER;
use switchboard_standins::Reply;

use super::{act, csrf, get};
use crate::approvals::{POLICY, buttons_channel, prompt};
use crate::audit::wait_audit;
use crate::helpers::{TestApp, key, wait_inbox_idle, wait_transcript};

#[tokio::test]
async fn an_approval_pressed_on_the_dashboard_runs_once_and_is_audited_as_the_operator() {
    let app = TestApp::spawn_on(buttons_channel(), POLICY).await;
    app.llm
        .push(Reply::tool_call(
            "shell",
            json!({"command": "echo ran >> ran.txt"}),
        ))
        .push(Reply::text("Done."));
    let chat = key("dash");
    app.channel
        .say(&chat, "alice", "append a line")
        .await
        .unwrap();
    prompt(&app.channel, &chat).await;
    let pending = app.store().pending_approvals().await.unwrap();
    let id = pending[0].id.to_string();
    let (_, page) = get(&app, "/approvals").await;
    assert!(
        page.contains("echo ran &gt;&gt; ran.txt"),
        "the call, escaped: {page}"
    );
    assert!(page.contains("asked by alice"), "{page}");

    let csrf = csrf(&app).await;
    let approve = [
        ("csrf", csrf.as_str()),
        ("id", id.as_str()),
        ("action", "approve"),
    ];
    let (status, location) = act(&app, "/approvals/decide", &approve).await;
    assert_eq!(status, 303, "{location}");
    // A second press (a double click, another tab) and a late Deny change nothing.
    act(&app, "/approvals/decide", &approve).await;
    let deny = [
        ("csrf", csrf.as_str()),
        ("id", id.as_str()),
        ("action", "deny"),
    ];
    act(&app, "/approvals/decide", &deny).await;

    wait_transcript(&app.channel, &chat, |t| {
        t.last().is_some_and(|m| m == "Done.")
    })
    .await;
    wait_inbox_idle(&app.store()).await;
    let transcript = app.channel.transcript(&chat);
    assert!(
        transcript
            .iter()
            .any(|m| m.contains("Approved by the operator (dashboard)")),
        "the chat sees who decided: {transcript:#?}"
    );
    let audit = wait_audit(&app, &chat, 1).await;
    let runs: Vec<_> = audit.iter().filter(|e| e.tool == "shell").collect();
    assert_eq!(runs.len(), 1, "{audit:#?}");
    assert_eq!(runs[0].decided_by.as_deref(), Some(OPERATOR_USER));
    let file = app
        .config
        .gateway
        .data_dir
        .join("workspaces/fake/dash/ran.txt");
    assert_eq!(
        std::fs::read_to_string(file).unwrap(),
        "ran\n",
        "ran exactly once"
    );

    let (_, page) = get(&app, "/approvals").await;
    assert!(page.contains("Nothing waits for approval."), "{page}");
    assert!(
        !page.contains("echo ran"),
        "a decided call is not shown: {page}"
    );
    assert!(page.contains(OPERATOR_USER), "who decided is: {page}");
    let (_, audit_page) = get(&app, "/audit?who=switchboard%3Aoperator").await;
    assert!(audit_page.contains("<code>shell</code>"), "{audit_page}");
    let (_, none) = get(&app, "/audit?who=alice").await;
    assert!(none.contains("No audit entries match."), "{none}");
    app.shutdown().await;
}
