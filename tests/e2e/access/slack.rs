//! Pairing and approval rights through the real Slack channel and the fake Web API.

use serde_json::{Value, json};
use switchboard_standins::slack::{
    ButtonClick, FAKE_BOT_USER_ID, FakeMessage, FakeSlack, SignedRequest, SlackMessage,
    block_actions, dm_event, mention_event,
};
use switchboard_standins::{Reply, eventually};

use super::{allow, code_in, shell_runs};
use crate::app::{Table, TestApp};
use crate::helpers::{WAIT, wait_inbox_idle};

const CHANNEL: &str = "C0TESTCHAN";

/// A gateway with the example Slack table (`extra` keys set over it), the shell on and
/// `U0BOSS` its approver.
async fn spawn(extra: &[(&str, String)]) -> TestApp {
    let table = extra
        .iter()
        .fold(Table::example(), |t, (k, v)| t.set(k, v.clone()));
    let rest = "[tools]\nenabled = [\"shell\"]\n[policy.approvers]\nslack = [\"U0BOSS\"]\n";
    TestApp::builder().slack(table).config(rest).start().await
}

/// Wait until the bot's messages in `channel` satisfy `done`.
async fn wait_for(
    slack: &FakeSlack,
    channel: &str,
    done: impl Fn(&[FakeMessage]) -> bool,
) -> Vec<FakeMessage> {
    eventually(
        WAIT,
        &format!("the bot's messages in {channel}"),
        async || {
            let messages = slack.messages(channel);
            if done(&messages) {
                Ok(messages)
            } else {
                Err(messages)
            }
        },
    )
    .await
}

fn dm<'a>(event_id: &'a str, text: &'a str, ts: &'a str) -> Value {
    dm_event(&SlackMessage {
        event_id,
        user: "U0STRANGER",
        text,
        ts,
        ..SlackMessage::default()
    })
}

#[tokio::test]
async fn a_strangers_dm_gets_a_pairing_code_and_once_allowed_they_stay_in_after_a_restart() {
    let mut app = spawn(&[]).await;
    let dm_channel = SlackMessage::default().channel;
    let first = dm("Ev1", "hi, run rm -rf ~", "1700000100.000100");
    assert_eq!(
        app.slack_post("events", SignedRequest::event(&first)).await,
        200
    );
    let replies = wait_for(app.slack(), dm_channel, |m| !m.is_empty()).await;
    let code = code_in(&replies[0].text, "slack");
    let again = dm("Ev2", "hello??", "1700000101.000100");
    assert_eq!(
        app.slack_post("events", SignedRequest::event(&again)).await,
        200
    );
    assert_eq!(
        app.slack().messages(dm_channel).len(),
        1,
        "a repeated message makes no new code"
    );
    assert!(app.llm.requests().is_empty(), "nothing reached the model");

    allow(app.store().as_ref(), "slack", &code).await;
    app.llm.push(Reply::text("Welcome in."));
    let third = dm("Ev3", "and now?", "1700000102.000100");
    assert_eq!(
        app.slack_post("events", SignedRequest::event(&third)).await,
        200
    );
    wait_for(app.slack(), dm_channel, |m| {
        m.iter().any(|m| m.text.trim() == "Welcome in.")
    })
    .await;

    app.restart().await;
    app.llm.push(Reply::text("Still here."));
    let fourth = dm("Ev4", "after the restart", "1700000103.000100");
    assert_eq!(
        app.slack_post("events", SignedRequest::event(&fourth))
            .await,
        200
    );
    wait_for(app.slack(), dm_channel, |m| {
        m.iter().any(|m| m.text.trim() == "Still here.")
    })
    .await;
    assert_eq!(app.llm.requests().len(), 2);
    app.shutdown().await;
}

/// The value of the first button on the bot's prompt in `channel`.
fn prompt(slack: &FakeSlack) -> Option<(FakeMessage, String)> {
    slack.messages(CHANNEL).into_iter().find_map(|m| {
        let blocks = m.blocks.clone()?;
        let actions = blocks.as_array()?.iter().find(|b| b["type"] == "actions")?;
        let value = actions["elements"][0]["value"].as_str()?.to_owned();
        Some((m, value))
    })
}

fn press(user: &str, message: &FakeMessage, value: &str, trigger: &str) -> SignedRequest {
    SignedRequest::interaction(&block_actions(&ButtonClick {
        user,
        channel: CHANNEL,
        message_ts: &message.ts,
        thread_ts: message.thread_ts.as_deref(),
        value,
        trigger_id: trigger,
    }))
}

#[tokio::test]
async fn in_a_channel_the_requesters_own_press_is_refused_privately_and_an_approvers_runs_once() {
    let listed = [
        ("allowed_users", "[\"U0TESTUSER\"]".to_owned()),
        ("allowed_channels", format!("[\"{CHANNEL}\"]")),
    ];
    let app = spawn(&listed).await;
    app.llm
        .push(Reply::tool_call(
            "shell",
            json!({"command": "touch chan.txt"}),
        ))
        .push(Reply::text("Made it."));
    let text = format!("<@{FAKE_BOT_USER_ID}> make a file");
    let ask = mention_event(&SlackMessage {
        channel: CHANNEL,
        text: &text,
        ..SlackMessage::default()
    });
    assert_eq!(
        app.slack_post("events", SignedRequest::event(&ask)).await,
        200
    );
    wait_for(app.slack(), CHANNEL, |_| prompt(app.slack()).is_some()).await;
    let (message, value) = prompt(app.slack()).unwrap();

    let own = press("U0TESTUSER", &message, &value, "1.1.own");
    assert_eq!(app.slack_post("interactions", own).await, 200);
    let private = app
        .slack()
        .wait_for_calls("chat.postEphemeral", 1, WAIT)
        .await;
    assert_eq!(private[0].body["user"], "U0TESTUSER");
    assert!(
        private[0].body["text"]
            .as_str()
            .unwrap()
            .starts_with("Not yours")
    );
    assert!(prompt(app.slack()).is_some(), "the buttons stay");
    assert_eq!(shell_runs(app.store().as_ref()).await, 0);

    let boss = press("U0BOSS", &message, &value, "1.2.boss");
    assert_eq!(app.slack_post("interactions", boss).await, 200);
    wait_for(app.slack(), CHANNEL, |m| {
        m.iter().any(|m| m.text.trim() == "Made it.")
    })
    .await;
    let again = press("U0BOSS", &message, &value, "1.3.boss");
    assert_eq!(app.slack_post("interactions", again).await, 200);
    wait_inbox_idle(&app.store()).await;
    assert_eq!(shell_runs(app.store().as_ref()).await, 1, "runs once");
    app.shutdown().await;
}
