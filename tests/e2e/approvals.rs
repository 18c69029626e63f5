//! The policy gate and approval buttons end to end: ask → buttons → approve/deny/expire,
//! who may press, "always allow" for one conversation only, and a restart while an approval
//! is pending.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use switchboard_channel::{ConversationKey, Limits};
use switchboard_standins::{FakeChannel, Reply};

use switchboard::clock::Clock;

use crate::audit::wait_audit;
use crate::helpers::{TestApp, WAIT, key, wait_inbox_idle, wait_transcript, wall_ms};

pub(crate) const POLICY: &str = "[tools]\nenabled = [\"shell\"]\n[policy]\nmode = \"guarded\"\napproval_timeout_secs = 300\n[policy.approvers]\nfake = [\"admin\"]\n";

pub(crate) fn buttons_channel() -> Arc<FakeChannel> {
    let limits = Limits {
        supports_buttons: true,
        min_edit_interval: Duration::ZERO,
        ..Limits::default()
    };
    FakeChannel::with_limits("fake", limits, None)
}

async fn spawn(extra: &str) -> TestApp {
    TestApp::spawn_on(buttons_channel(), &format!("{POLICY}{extra}")).await
}

pub(crate) fn workspace_file(app: &TestApp, chat: &str, name: &str) -> std::path::PathBuf {
    app.config
        .gateway
        .data_dir
        .join("workspaces/fake")
        .join(chat)
        .join(name)
}

/// Wait until the prompt's buttons are posted; returns (once, always, deny) payloads.
pub(crate) async fn prompt(
    channel: &FakeChannel,
    chat: &ConversationKey,
) -> (String, String, String) {
    channel
        .wait_until(WAIT, "an approval prompt", |_| {
            channel.last_buttons(chat).len() == 3
        })
        .await;
    let b = channel.last_buttons(chat);
    assert_eq!(
        b.iter().map(|b| b.label.as_str()).collect::<Vec<_>>(),
        ["Approve once", "Always allow", "Deny"]
    );
    (
        b[0].payload.clone(),
        b[1].payload.clone(),
        b[2].payload.clone(),
    )
}

#[tokio::test]
async fn an_approved_call_runs_and_the_turn_finishes() {
    let app = spawn("").await;
    app.llm
        .push(Reply::tool_call(
            "shell",
            json!({"command": "touch made.txt"}),
        ))
        .push(Reply::text("Created it."));
    let chat = key("ok");
    app.channel
        .say(&chat, "alice", "make a file")
        .await
        .unwrap();
    let (once, _, _) = prompt(&app.channel, &chat).await;
    assert!(
        app.channel
            .transcript(&chat)
            .iter()
            .any(|m| m.contains("touch made.txt")),
        "the prompt shows the command"
    );
    assert!(
        !workspace_file(&app, "ok", "made.txt").exists(),
        "nothing runs before approval"
    );
    app.channel.press(&chat, "alice", &once).await.unwrap();
    wait_transcript(&app.channel, &chat, |t| {
        t.last().is_some_and(|m| m == "Created it.")
    })
    .await;
    assert!(workspace_file(&app, "ok", "made.txt").exists());
    assert!(
        app.channel
            .button_answers()
            .iter()
            .any(|a| a.starts_with("✅ Approved"))
    );
    wait_inbox_idle(&app.store()).await;
    let audit = app.store().audit(Some(&chat), 10).await.unwrap();
    assert_eq!(audit[0].decided_by.as_deref(), Some("alice"), "{audit:#?}");
    let history = app.store().history(&chat, 10).await.unwrap();
    assert_eq!(history.len(), 4, "user, call, result, answer: {history:#?}");
}

#[tokio::test]
async fn a_denied_call_does_not_run_and_the_model_is_told() {
    let app = spawn("").await;
    app.llm
        .push(Reply::tool_call(
            "shell",
            json!({"command": "touch nope.txt"}),
        ))
        .push(Reply::text("Understood, I won't."));
    let chat = key("deny");
    app.channel
        .say(&chat, "alice", "make a file")
        .await
        .unwrap();
    let (_, _, deny) = prompt(&app.channel, &chat).await;
    app.channel.press(&chat, "alice", &deny).await.unwrap();
    wait_transcript(&app.channel, &chat, |t| {
        t.last().is_some_and(|m| m == "Understood, I won't.")
    })
    .await;
    assert!(!workspace_file(&app, "deny", "nope.txt").exists());
    let tool_result = app.llm.requests()[1]["messages"].to_string();
    assert!(tool_result.contains("denied this action"), "{tool_result}");
    let audit = wait_audit(&app, &chat, 1).await;
    assert_eq!(
        (audit[0].status.as_str(), audit[0].decided_by.as_deref()),
        ("denied", Some("alice")),
        "{audit:#?}"
    );
    assert!(
        audit[0].decision.starts_with("deny (user alice)"),
        "{audit:#?}"
    );
}

#[tokio::test]
async fn an_unanswered_approval_expires_and_the_model_hears_nobody_answered() {
    // The gateway's clock stands still until the test moves it past the 300 s timeout.
    let clock = Clock::manual(wall_ms());
    let app = TestApp::spawn_with_clock(buttons_channel(), POLICY, clock.clone()).await;
    app.llm
        .push(Reply::tool_call(
            "shell",
            json!({"command": "touch late.txt"}),
        ))
        .push(Reply::text("Nobody approved, so I stopped."));
    let chat = key("expire");
    app.channel
        .say(&chat, "alice", "make a file")
        .await
        .unwrap();
    let (once, _, _) = prompt(&app.channel, &chat).await;
    clock.advance(Duration::from_secs(299));
    assert_eq!(
        app.store().pending_approvals().await.unwrap().len(),
        1,
        "still pending a second before its deadline"
    );
    clock.advance(Duration::from_secs(2));
    wait_transcript(&app.channel, &chat, |t| {
        t.last()
            .is_some_and(|m| m == "Nobody approved, so I stopped.")
    })
    .await;
    let tool_result = app.llm.requests()[1]["messages"].to_string();
    assert!(
        tool_result.contains("nobody answered") && !tool_result.contains("denied this action"),
        "{tool_result}"
    );
    assert!(
        app.channel
            .transcript(&chat)
            .iter()
            .any(|m| m.starts_with("⌛ Expired"))
    );
    app.channel.press(&chat, "alice", &once).await.unwrap();
    app.channel
        .wait_until(WAIT, "the press to be answered", |_| {
            app.channel
                .button_answers()
                .iter()
                .any(|a| a == "Already expired.")
        })
        .await;
    assert!(!workspace_file(&app, "expire", "late.txt").exists());
    let audit = wait_audit(&app, &chat, 1).await;
    assert_eq!(
        (audit[0].status.as_str(), audit[0].decided_by.as_deref()),
        ("expired", None),
        "nobody decided: {audit:#?}"
    );
    assert!(audit[0].decision.starts_with("deny (system)"), "{audit:#?}");
}

#[tokio::test]
async fn only_the_requester_or_an_approver_may_press() {
    let app = spawn("").await;
    app.llm
        .push(Reply::tool_call("shell", json!({"command": "touch x.txt"})))
        .push(Reply::text("Done by admin."));
    let chat = key("who");
    app.channel
        .say(&chat, "alice", "make a file")
        .await
        .unwrap();
    let (once, _, _) = prompt(&app.channel, &chat).await;
    app.channel.press(&chat, "mallory", &once).await.unwrap();
    app.channel
        .wait_until(WAIT, "mallory's press to be refused", |_| {
            app.channel
                .button_answers()
                .contains(&"Not yours to approve.".to_owned())
        })
        .await;
    assert!(!workspace_file(&app, "who", "x.txt").exists());
    app.channel.press(&chat, "admin", &once).await.unwrap();
    wait_transcript(&app.channel, &chat, |t| {
        t.last().is_some_and(|m| m == "Done by admin.")
    })
    .await;
    app.channel.press(&chat, "admin", &once).await.unwrap();
    app.channel
        .wait_until(WAIT, "the second press to be answered", |_| {
            app.channel
                .button_answers()
                .contains(&"Already approved.".to_owned())
        })
        .await;
    assert_eq!(
        app.llm.requests().len(),
        2,
        "the tool ran once and the model was called twice"
    );
}

#[tokio::test]
async fn always_allow_applies_to_the_same_call_in_this_conversation_only() {
    let app = spawn("").await;
    let call = || Reply::tool_call("shell", json!({"command": "touch again.txt"}));
    app.llm
        .push(call())
        .push(Reply::text("first"))
        .push(call())
        .push(Reply::text("second"))
        .push(call());
    let chat = key("always");
    app.channel.say(&chat, "alice", "go").await.unwrap();
    let (_, always, _) = prompt(&app.channel, &chat).await;
    app.channel.press(&chat, "alice", &always).await.unwrap();
    wait_transcript(&app.channel, &chat, |t| {
        t.last().is_some_and(|m| m == "first")
    })
    .await;
    app.channel.say(&chat, "alice", "again").await.unwrap();
    wait_transcript(&app.channel, &chat, |t| {
        t.last().is_some_and(|m| m == "second")
    })
    .await;
    assert_eq!(
        app.channel
            .calls()
            .iter()
            .filter(|c| c.buttons.len() == 3)
            .count(),
        1,
        "no second prompt"
    );
    let other = key("elsewhere");
    app.channel.say(&other, "alice", "go").await.unwrap();
    prompt(&app.channel, &other).await;
}

#[tokio::test]
async fn text_commands_approve_where_there_are_no_buttons() {
    let app = TestApp::spawn_with(POLICY).await; // FakeChannel::new has no buttons
    app.llm
        .push(Reply::tool_call(
            "shell",
            json!({"command": "touch typed.txt"}),
        ))
        .push(Reply::text("Typed approval worked."));
    let chat = key("typed");
    app.channel
        .say(&chat, "alice", "make a file")
        .await
        .unwrap();
    let t = wait_transcript(&app.channel, &chat, |t| {
        t.iter().any(|m| m.contains("/approve "))
    })
    .await;
    let prompt = t.iter().find(|m| m.contains("/approve ")).unwrap();
    let id = prompt
        .split("/approve ")
        .nth(1)
        .unwrap()
        .split('`')
        .next()
        .unwrap()
        .to_owned();
    app.channel
        .say(&chat, "alice", &format!("/approve {id}"))
        .await
        .unwrap();
    wait_transcript(&app.channel, &chat, |t| {
        t.last().is_some_and(|m| m == "Typed approval worked.")
    })
    .await;
}

#[tokio::test]
async fn messages_sent_while_an_approval_waits_are_answered_after_it_in_order() {
    let app = spawn("").await;
    app.llm
        .push(Reply::tool_call("shell", json!({"command": "touch q.txt"})))
        .push(Reply::text("Approved answer."));
    let chat = key("queue");
    app.channel
        .say(&chat, "alice", "make a file")
        .await
        .unwrap();
    let (once, _, _) = prompt(&app.channel, &chat).await;
    app.channel
        .say(&chat, "alice", "later message")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        app.llm.requests().len(),
        1,
        "the queued message waits behind the approval"
    );
    app.channel.press(&chat, "alice", &once).await.unwrap();
    let t = wait_transcript(&app.channel, &chat, |t| {
        t.last().is_some_and(|m| m == "You said: later message")
    })
    .await;
    assert!(t.iter().any(|m| m == "Approved answer."));
}

/// An app whose first life can be killed, with buttons and the guarded shell.
async fn killable_app() -> TestApp {
    let builder = TestApp::builder().fake(buttons_channel()).config(POLICY);
    builder.killable().start().await
}

/// The app's killable life killed once `chat`'s turn is suspended on an approval and stored
/// (its inbox row done), not at an arbitrary time; the model runs a shell command, then
/// answers "Resumed after restart." Returns the approval's "Approve once" payload.
async fn crash_while_waiting(app: &mut TestApp, chat: &ConversationKey) -> String {
    app.llm
        .push(Reply::tool_call(
            "shell",
            json!({"command": "echo run >> log.txt"}),
        ))
        .push(Reply::text("Resumed after restart."));
    let channel = Arc::clone(&app.channel);
    channel.say(chat, "alice", "log something").await.unwrap();
    let (once, _, _) = prompt(&channel, chat).await;
    let db = switchboard::store::connect(&app.config.gateway.database_url)
        .await
        .unwrap();
    wait_inbox_idle(&db).await;
    app.kill();
    once
}

/// After [`crash_while_waiting`] and a restart: the turn resumed once, and its command ran
/// exactly once.
async fn resumed_once(app: TestApp, chat: &ConversationKey) {
    wait_transcript(&app.channel, chat, |t| {
        t.last().is_some_and(|m| m == "Resumed after restart.")
    })
    .await;
    wait_inbox_idle(&app.store()).await;
    let log = std::fs::read_to_string(workspace_file(&app, &chat.chat, "log.txt")).unwrap();
    assert_eq!(log, "run\n", "the tool ran exactly once");
    assert!(app.store().pending_approvals().await.unwrap().is_empty());
    app.shutdown().await;
}

#[tokio::test]
async fn a_pending_approval_survives_a_crash_and_completes_exactly_once() {
    let mut app = killable_app().await;
    let chat = key("crash");
    let once = crash_while_waiting(&mut app, &chat).await;
    app.start().await;
    app.channel.press(&chat, "alice", &once).await.unwrap();
    app.channel.press(&chat, "alice", &once).await.unwrap();
    resumed_once(app, &chat).await;
}

#[tokio::test]
async fn a_prompt_nobody_saw_before_a_crash_is_posted_at_the_next_start() {
    use sqlx::Connection;
    let mut app = killable_app().await;
    let chat = key("unseen");
    crash_while_waiting(&mut app, &chat).await;
    // As if it had died between storing the request and posting its prompt.
    let url = &app.config.gateway.database_url;
    let mut conn = sqlx::SqliteConnection::connect(url).await.unwrap();
    let unseen = sqlx::query("UPDATE approvals SET prompt_ref = NULL WHERE status = 'pending'")
        .execute(&mut conn)
        .await
        .unwrap();
    assert_eq!(unseen.rows_affected(), 1);
    drop(conn);
    let prompts = |t: &[String]| t.iter().filter(|m| m.contains("Approval needed")).count();
    app.start().await;
    // Posted at start-up, with nothing else arriving in the conversation.
    wait_transcript(&app.channel, &chat, |t| prompts(t) == 2).await;
    let (once, _, _) = prompt(&app.channel, &chat).await;
    app.channel.press(&chat, "alice", &once).await.unwrap();
    resumed_once(app, &chat).await;
}
