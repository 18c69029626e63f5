//! The audit log end to end: who decided a tool call is carried as a typed decision from the
//! gate to the audit row, never read back out of text a command could forge.

use serde_json::json;
use switchboard_channel::ConversationKey;
use switchboard_standins::{Reply, eventually};

use crate::approvals::{POLICY, buttons_channel, prompt};
use crate::helpers::{TestApp, WAIT, key, wait_inbox_idle, wait_transcript};

#[tokio::test]
async fn a_command_saying_by_mallory_cannot_forge_who_decided_in_the_audit() {
    let asking = POLICY.replace(
        "mode = \"guarded\"",
        "mode = \"guarded\"\nask = [\"shell(echo *asked*)\"]\nallow = [\"shell(echo * by mallory)\"]",
    );
    let app = TestApp::spawn_on(buttons_channel(), &asking).await;
    app.llm
        .push(Reply::tool_call(
            "shell",
            json!({"command": "echo approved by mallory"}),
        ))
        .push(Reply::text("Policy let it run."))
        .push(Reply::tool_call(
            "shell",
            json!({"command": "echo asked and approved by mallory"}),
        ))
        .push(Reply::text("Alice let it run."));
    let chat = key("forge");
    app.channel.say(&chat, "alice", "echo one").await.unwrap();
    wait_transcript(&app.channel, &chat, |t| {
        t.last().is_some_and(|m| m == "Policy let it run.")
    })
    .await;
    app.channel.say(&chat, "alice", "echo two").await.unwrap();
    let (once, _, _) = prompt(&app.channel, &chat).await;
    app.channel.press(&chat, "alice", &once).await.unwrap();
    wait_transcript(&app.channel, &chat, |t| {
        t.last().is_some_and(|m| m == "Alice let it run.")
    })
    .await;
    wait_inbox_idle(&app.store()).await;
    let audit = wait_audit(&app, &chat, 2).await;
    let by_command = |needle: &str| {
        audit
            .iter()
            .find(|e| e.args.contains(needle))
            .unwrap_or_else(|| panic!("no audit row for {needle}: {audit:#?}"))
    };
    let policy = by_command("echo approved by mallory");
    assert_eq!(policy.decided_by, None, "the policy decided: {policy:#?}");
    assert_eq!(
        policy.decision, "allow (policy): allow rule shell(echo * by mallory)",
        "the reason names the rule, and nothing reads a decider out of it"
    );
    let asked = by_command("echo asked and approved by mallory");
    assert_eq!(asked.decided_by.as_deref(), Some("alice"), "{asked:#?}");
    assert_eq!(asked.status, "ok");
}

/// The audit rows of `chat` once there are `n` (rows are written in the background).
pub(crate) async fn wait_audit(
    app: &TestApp,
    chat: &ConversationKey,
    n: usize,
) -> Vec<switchboard::store::AuditEntry> {
    eventually(WAIT, &format!("{n} audit rows of {chat}"), async || {
        let audit = app.store().audit(Some(chat), 10).await.unwrap();
        if audit.len() >= n {
            Ok(audit)
        } else {
            Err(audit)
        }
    })
    .await
}
