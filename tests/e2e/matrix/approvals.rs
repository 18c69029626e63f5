//! Approvals by reaction: the prompt offers its choices as reactions, a press survives a
//! restart (read back from the prompt itself), runs the call exactly once however often it is
//! pressed, and the choices go once decided.

use std::time::Duration;

use serde_json::json;
use switchboard_standins::{Reply, eventually_every};

use super::{bot_messages, dm, synapse, wait_bot, wait_prompt};

pub(super) fn policy(approver: &str) -> String {
    format!(
        "[tools]\nenabled = [\"shell\"]\n[policy]\nmode = \"guarded\"\napproval_timeout_secs = 300\n[policy.approvers]\nmatrix = [\"{approver}\"]\n"
    )
}

/// How many times the shell tool ran, from the audit log.
pub(super) async fn shell_runs(app: &crate::app::TestApp) -> usize {
    let entries = app.store().audit(None, 50).await.expect("audit reads");
    entries
        .iter()
        .filter(|e| e.tool == "shell" && e.status == "ok")
        .count()
}

#[tokio::test]
async fn a_reaction_after_a_restart_approves_the_call_exactly_once() {
    let Some(hs) = synapse() else { return };
    let t = dm(&hs, false, policy).await;
    let (mut app, alice, room, me) = (t.app, t.alice, t.room, &t.bot.account.id);

    app.llm
        .push(Reply::tool_call(
            "shell",
            json!({"command": "touch made.txt"}),
        ))
        .push(Reply::text("Created it."));
    alice.say(&room, "make a file").await;
    let prompt = wait_prompt(&room, me).await;
    assert!(prompt.text.contains("Approval needed"), "{prompt:#?}");
    assert!(
        prompt
            .text
            .contains("React with ✅ Approve once · ♾️ Always allow · ❌ Deny"),
        "{}",
        prompt.text
    );

    let what = "the bot's three reactions under the prompt";
    let offered = eventually_every(super::WAIT, super::ASK_EVERY, what, async || {
        let mut offered = super::reactions(&room, &prompt.id, me).await;
        offered.sort();
        if offered.len() == 3 {
            Ok(offered)
        } else {
            Err(offered)
        }
    })
    .await;
    assert_eq!(offered, ["♾️", "✅", "❌"], "one tap each");

    app.restart().await;
    alice.react(&room, &prompt.id, "✅").await;
    wait_bot(&room, me, |s| {
        s.iter().any(|m| m.text.contains("Created it."))
    })
    .await;
    assert_eq!(shell_runs(&app).await, 1);

    // Pressed again, by reaction and by reply: the decision stands, nothing runs twice.
    alice.react(&room, &prompt.id, "♾️").await;
    alice
        .send(&room, json!({"msgtype": "m.text", "body": "1", "m.relates_to": {"m.in_reply_to": {"event_id": prompt.id}}}))
        .await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(shell_runs(&app).await, 1);
    let after = bot_messages(&room, me).await;
    assert_eq!(
        after
            .iter()
            .filter(|m| m.text.contains("Created it."))
            .count(),
        1,
        "{after:#?}"
    );
    let decided = after.iter().find(|m| m.id == prompt.id).unwrap();
    assert!(
        decided.content.get("ch.switchboard.choices").is_none(),
        "the choices are gone: {decided:#?}"
    );
    assert!(
        super::reactions(&room, &prompt.id, me).await.is_empty(),
        "and so are the bot's reactions"
    );
}

#[tokio::test]
async fn a_reply_naming_deny_refuses_the_call() {
    let Some(hs) = synapse() else { return };
    let t = dm(&hs, false, policy).await;
    let (app, alice, room, me) = (t.app, t.alice, t.room, &t.bot.account.id);
    app.llm
        .push(Reply::tool_call(
            "shell",
            json!({"command": "touch nope.txt"}),
        ))
        .push(Reply::text("Understood, not doing it."));
    alice.say(&room, "make a file").await;
    let prompt = wait_prompt(&room, me).await;
    alice
        .send(&room, json!({"msgtype": "m.text", "body": "deny", "m.relates_to": {"m.in_reply_to": {"event_id": prompt.id}}}))
        .await;
    wait_bot(&room, me, |s| {
        s.iter().any(|m| m.text.contains("not doing it"))
    })
    .await;
    assert_eq!(shell_runs(&app).await, 0);
}
