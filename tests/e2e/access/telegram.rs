//! Pairing and approval rights through the real Telegram channel and the fake Bot API.

use serde_json::json;
use switchboard_standins::telegram::{
    Click, FAKE_BOT_USERNAME, FakeMessage, FakeTelegram, FakeUser, UserMessage,
};
use switchboard_standins::{Reply, eventually};

use super::{allow, code_in, shell_runs};
use crate::app::{Table, TestApp};
use crate::helpers::WAIT;

const GROUP: i64 = -100_777;

/// A gateway with the example Telegram table (`extra` keys set over it), the shell on and
/// user 2002 its approver.
async fn spawn(extra: &[(&str, String)]) -> TestApp {
    let table = extra
        .iter()
        .fold(Table::example(), |t, (k, v)| t.set(k, v.clone()));
    let rest = "[tools]\nenabled = [\"shell\"]\n[policy.approvers]\ntelegram = [\"2002\"]\n";
    TestApp::builder()
        .telegram(table)
        .config(rest)
        .start()
        .await
}

/// Wait until the bot's messages in `chat` satisfy `done`.
async fn wait_for(
    tg: &FakeTelegram,
    chat: i64,
    done: impl Fn(&[FakeMessage]) -> bool,
) -> Vec<FakeMessage> {
    eventually(WAIT, &format!("the bot's messages in {chat}"), async || {
        let messages = tg.messages(chat);
        if done(&messages) {
            Ok(messages)
        } else {
            Err(messages)
        }
    })
    .await
}

/// Wait until every injected update was fetched and confirmed.
async fn wait_confirmed(tg: &FakeTelegram) {
    eventually(WAIT, "every update to be confirmed", async || {
        let pending = tg.pending_updates();
        if pending.is_empty() {
            Ok(())
        } else {
            Err(pending)
        }
    })
    .await;
}

#[tokio::test]
async fn a_strangers_dm_gets_a_pairing_code_and_once_allowed_they_stay_in_after_a_restart() {
    let mut app = spawn(&[]).await;
    let stranger = FakeUser::human(3003, "mallory");
    app.telegram().inject(&UserMessage::private(
        stranger.clone(),
        "hi, please run rm -rf ~",
    ));
    let replies = wait_for(app.telegram(), 3003, |m| !m.is_empty()).await;
    let code = code_in(&replies[0].text, "telegram");
    app.telegram()
        .inject(&UserMessage::private(stranger.clone(), "hello??"));
    wait_confirmed(app.telegram()).await;
    assert_eq!(
        app.telegram().messages(3003).len(),
        1,
        "a repeated message makes no new code"
    );
    assert!(app.llm.requests().is_empty(), "nothing reached the model");
    let counts = app.store().inbox_counts().await.unwrap();
    assert_eq!(
        counts.pending + counts.processing + counts.done + counts.failed,
        0
    );

    let said = allow(app.store().as_ref(), "telegram", &code).await;
    assert!(said.starts_with("allowed 3003"), "{said}");
    app.llm.push(Reply::text("Welcome in."));
    app.telegram()
        .inject(&UserMessage::private(stranger.clone(), "and now?"));
    wait_for(app.telegram(), 3003, |m| {
        m.last().is_some_and(|m| m.text == "Welcome in.")
    })
    .await;

    app.restart().await;
    app.llm.push(Reply::text("Still here."));
    app.telegram()
        .inject(&UserMessage::private(stranger, "after the restart"));
    wait_for(app.telegram(), 3003, |m| {
        m.last().is_some_and(|m| m.text == "Still here.")
    })
    .await;
    assert_eq!(app.llm.requests().len(), 2);
    app.shutdown().await;
}

#[tokio::test]
async fn in_a_group_the_requesters_own_press_is_refused_privately_and_an_approvers_runs_once() {
    let listed = [
        ("allowed_users", "[\"1001\"]".to_owned()),
        ("allowed_groups", format!("[\"{GROUP}\"]")),
    ];
    let app = spawn(&listed).await;
    app.llm
        .push(Reply::tool_call(
            "shell",
            json!({"command": "touch grp.txt"}),
        ))
        .push(Reply::text("Made it."));
    let (alice, bob) = (FakeUser::human(1001, "alice"), FakeUser::human(2002, "bob"));
    let ask = format!("@{FAKE_BOT_USERNAME} make a file");
    app.telegram()
        .inject(&UserMessage::group(GROUP, alice.clone(), &ask));
    let found = wait_for(app.telegram(), GROUP, |m| {
        m.iter().any(|m| m.reply_markup.is_some())
    })
    .await;
    let prompt = found
        .into_iter()
        .find(|m| m.reply_markup.is_some())
        .unwrap();
    let approve = prompt.reply_markup.clone().unwrap()["inline_keyboard"][0][0]["callback_data"]
        .as_str()
        .unwrap()
        .to_owned();

    app.telegram().click(&Click::on(&prompt, alice, &approve));
    let answers = app
        .telegram()
        .wait_for_calls("answerCallbackQuery", 1)
        .await;
    let refusal = answers[0].params["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        refusal.starts_with("Not yours to approve here"),
        "{refusal}"
    );
    let still = app
        .telegram()
        .messages(GROUP)
        .into_iter()
        .find(|m| m.message_id == prompt.message_id);
    assert!(still.unwrap().reply_markup.is_some(), "the buttons stay");
    assert_eq!(shell_runs(app.store().as_ref()).await, 0);

    app.telegram()
        .click(&Click::on(&prompt, bob.clone(), &approve));
    wait_for(app.telegram(), GROUP, |m| {
        m.last().is_some_and(|m| m.text == "Made it.")
    })
    .await;
    app.telegram().click(&Click::on(&prompt, bob, &approve));
    app.telegram()
        .wait_for_calls("answerCallbackQuery", 3)
        .await;
    wait_confirmed(app.telegram()).await;
    assert_eq!(shell_runs(app.store().as_ref()).await, 1, "runs once");
    let workspace = app
        .dir()
        .join(format!("workspaces/telegram/{GROUP}/grp.txt"));
    assert!(workspace.exists());
    app.shutdown().await;
}
