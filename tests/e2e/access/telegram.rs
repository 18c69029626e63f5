//! Pairing and approval rights through the real Telegram channel and the fake Bot API.

use std::time::Duration;

use serde_json::json;
use switchboard::channels;
use switchboard::config::Config;
use switchboard::{Gateway, RunningGateway};
use switchboard_standins::telegram::{
    Click, FAKE_BOT_TOKEN, FAKE_BOT_USERNAME, FakeMessage, FakeTelegram, FakeUser, UserMessage,
};
use switchboard_standins::{FakeLlm, Reply};

use super::{allow, code_in, example_table, quoted, shell_runs};
use crate::helpers::{WAIT, test_config};

const GROUP: i64 = -100_777;

fn config(
    tg: &FakeTelegram,
    llm: &FakeLlm,
    dir: &tempfile::TempDir,
    extra: &[(&str, String)],
) -> Config {
    let mut keys = vec![
        ("token", quoted(FAKE_BOT_TOKEN)),
        ("api_url", quoted(&tg.api_url())),
        ("poll_timeout_secs", "1".to_owned()),
    ];
    keys.extend(extra.iter().cloned());
    let table = example_table("telegram", &keys);
    let rest = "[tools]\nenabled = [\"shell\"]\n[policy.approvers]\ntelegram = [\"2002\"]\n";
    test_config(&llm.openai_url(), dir.path(), &format!("{table}{rest}"))
}

async fn start(config: &Config) -> RunningGateway {
    let mut gateway = Gateway::new(config.clone());
    for channel in channels::from_config(config).unwrap() {
        gateway = gateway.channel(channel);
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    gateway.start(listener).await.unwrap()
}

/// Wait until the bot's messages in `chat` satisfy `done`.
async fn wait_for(
    tg: &FakeTelegram,
    chat: i64,
    done: impl Fn(&[FakeMessage]) -> bool,
) -> Vec<FakeMessage> {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let messages = tg.messages(chat);
        if done(&messages) {
            return messages;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out: {messages:#?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Wait until every injected update was fetched and confirmed.
async fn wait_confirmed(tg: &FakeTelegram) {
    let deadline = std::time::Instant::now() + WAIT;
    while !tg.pending_updates().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "updates never confirmed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_strangers_dm_gets_a_pairing_code_and_once_allowed_they_stay_in_after_a_restart() {
    let (tg, llm, dir) = (
        FakeTelegram::start().await,
        FakeLlm::start().await,
        tempfile::tempdir().unwrap(),
    );
    let config = config(&tg, &llm, &dir, &[]);
    let gateway = start(&config).await;
    let stranger = FakeUser::human(3003, "mallory");
    tg.inject(&UserMessage::private(
        stranger.clone(),
        "hi, please run rm -rf ~",
    ));
    let replies = wait_for(&tg, 3003, |m| !m.is_empty()).await;
    let code = code_in(&replies[0].text, "telegram");
    tg.inject(&UserMessage::private(stranger.clone(), "hello??"));
    wait_confirmed(&tg).await;
    assert_eq!(
        tg.messages(3003).len(),
        1,
        "a repeated message makes no new code"
    );
    assert!(llm.requests().is_empty(), "nothing reached the model");
    let counts = gateway.store().inbox_counts().await.unwrap();
    assert_eq!(
        counts.pending + counts.processing + counts.done + counts.failed,
        0
    );

    let said = allow(gateway.store().as_ref(), "telegram", &code).await;
    assert!(said.starts_with("allowed 3003"), "{said}");
    llm.push(Reply::text("Welcome in."));
    tg.inject(&UserMessage::private(stranger.clone(), "and now?"));
    wait_for(&tg, 3003, |m| {
        m.last().is_some_and(|m| m.text == "Welcome in.")
    })
    .await;

    gateway.shutdown().await;
    let restarted = start(&config).await;
    llm.push(Reply::text("Still here."));
    tg.inject(&UserMessage::private(stranger, "after the restart"));
    wait_for(&tg, 3003, |m| {
        m.last().is_some_and(|m| m.text == "Still here.")
    })
    .await;
    assert_eq!(llm.requests().len(), 2);
    restarted.shutdown().await;
}

#[tokio::test]
async fn in_a_group_the_requesters_own_press_is_refused_privately_and_an_approvers_runs_once() {
    let (tg, llm, dir) = (
        FakeTelegram::start().await,
        FakeLlm::start().await,
        tempfile::tempdir().unwrap(),
    );
    let listed = [
        ("allowed_users", "[\"1001\"]".to_owned()),
        ("allowed_groups", format!("[\"{GROUP}\"]")),
    ];
    let gateway = start(&config(&tg, &llm, &dir, &listed)).await;
    llm.push(Reply::tool_call(
        "shell",
        json!({"command": "touch grp.txt"}),
    ))
    .push(Reply::text("Made it."));
    let (alice, bob) = (FakeUser::human(1001, "alice"), FakeUser::human(2002, "bob"));
    let ask = format!("@{FAKE_BOT_USERNAME} make a file");
    tg.inject(&UserMessage::group(GROUP, alice.clone(), &ask));
    let found = wait_for(&tg, GROUP, |m| m.iter().any(|m| m.reply_markup.is_some())).await;
    let prompt = found
        .into_iter()
        .find(|m| m.reply_markup.is_some())
        .unwrap();
    let approve = prompt.reply_markup.clone().unwrap()["inline_keyboard"][0][0]["callback_data"]
        .as_str()
        .unwrap()
        .to_owned();

    tg.click(&Click::on(&prompt, alice, &approve));
    let answers = tg.wait_for_calls("answerCallbackQuery", 1).await;
    let refusal = answers[0].params["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        refusal.starts_with("Not yours to approve here"),
        "{refusal}"
    );
    let still = tg
        .messages(GROUP)
        .into_iter()
        .find(|m| m.message_id == prompt.message_id);
    assert!(still.unwrap().reply_markup.is_some(), "the buttons stay");
    assert_eq!(shell_runs(gateway.store().as_ref()).await, 0);

    tg.click(&Click::on(&prompt, bob.clone(), &approve));
    wait_for(&tg, GROUP, |m| {
        m.last().is_some_and(|m| m.text == "Made it.")
    })
    .await;
    tg.click(&Click::on(&prompt, bob, &approve));
    tg.wait_for_calls("answerCallbackQuery", 3).await;
    wait_confirmed(&tg).await;
    assert_eq!(shell_runs(gateway.store().as_ref()).await, 1, "runs once");
    let workspace = dir
        .path()
        .join(format!("workspaces/telegram/{GROUP}/grp.txt"));
    assert!(workspace.exists());
    gateway.shutdown().await;
}
