//! Telegram through the whole gateway (real teloxide client against the fake Bot API):
//! streamed answers, long answers split by UTF-16 length, 429 storms, restarts between
//! "update fetched" and "answer sent", and approval buttons.

use std::time::Duration;

use serde_json::json;
use switchboard_standins::telegram::{Click, Failure, FakeTelegram, FakeUser, UserMessage};
use switchboard_standins::{Reply, eventually};

use crate::app::{Builder, Table, TestApp, quoted};
use crate::helpers::{WAIT, wait_inbox_idle};

async fn spawn(extra: &str) -> TestApp {
    builder(extra).start().await
}

fn builder(extra: &str) -> Builder {
    TestApp::builder().telegram(Table::open()).config(extra)
}

fn alice() -> FakeUser {
    FakeUser::human(1001, "alice")
}

/// Wait until the bot's messages in `chat` satisfy `done` (visible text, undeleted).
async fn wait_messages(
    tg: &FakeTelegram,
    chat: i64,
    done: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    eventually(WAIT, &format!("the bot's messages in {chat}"), async || {
        let texts: Vec<String> = tg
            .messages(chat)
            .into_iter()
            .filter(|m| !m.deleted)
            .map(|m| m.text)
            .collect();
        if done(&texts) { Ok(texts) } else { Err(texts) }
    })
    .await
}

#[tokio::test]
async fn a_private_chat_gets_a_streamed_answer_in_one_edited_message() {
    let app = spawn("").await;
    let answer: String = (1..=15)
        .map(|i| format!("Line {i} of a **streamed** answer.\n"))
        .collect();
    app.llm
        .push(Reply::paced(answer, 30, Duration::from_millis(30)));
    app.telegram()
        .inject(&UserMessage::private(alice(), "hello"));
    let texts = wait_messages(app.telegram(), 1001, |t| {
        t.len() == 1 && t[0].contains("Line 15")
    })
    .await;
    assert!(
        texts[0].contains("streamed answer") && !texts[0].contains("**"),
        "rendered as HTML: {texts:?}"
    );
    let msg = &app.telegram().messages(1001)[0];
    assert!(
        msg.edits >= 1 && msg.parse_mode.as_deref() == Some("HTML"),
        "{msg:#?}"
    );
}

#[tokio::test]
async fn a_6000_character_answer_arrives_as_two_valid_messages_with_the_fence_intact() {
    let app = spawn("").await;
    let code: String = (0..120)
        .map(|i| format!("let value_{i:03} = {i};\n"))
        .collect();
    let answer = format!(
        "{}\n\n```rust\n{code}```\n\nDone.",
        "Intro text. ".repeat(250)
    );
    assert!(answer.chars().count() > 5000);
    app.llm
        .push(Reply::paced(answer, 500, Duration::from_millis(5)));
    app.telegram()
        .inject(&UserMessage::private(alice(), "long please"));
    let texts = wait_messages(app.telegram(), 1001, |t| {
        t.last().is_some_and(|m| m.ends_with("Done."))
    })
    .await;
    assert!(texts.len() >= 2, "{} messages", texts.len());
    let lines: usize = texts
        .iter()
        .map(|t| t.lines().filter(|l| l.starts_with("let value_")).count())
        .sum();
    assert_eq!(lines, 120, "every code line arrived once");
    for m in app.telegram().messages(1001) {
        assert!(m.text.encode_utf16().count() <= 4096);
        assert_eq!(
            m.raw.matches("<pre>").count(),
            m.raw.matches("</pre>").count(),
            "{}",
            m.raw
        );
    }
    assert!(
        app.telegram()
            .calls()
            .iter()
            .all(|c| c.outcome.is_ok() || c.method == "getUpdates"),
        "the fake refused nothing"
    );
}

#[tokio::test]
async fn a_429_storm_during_streaming_still_delivers_the_final_answer() {
    let app = spawn("").await;
    let answer: String = (1..=20)
        .map(|i| format!("Sentence {i} arrives slowly. "))
        .collect();
    app.llm
        .push(Reply::paced(answer.clone(), 20, Duration::from_millis(20)));
    for _ in 0..6 {
        app.telegram()
            .fail_next("editMessageText", Failure::RetryAfter(1));
    }
    app.telegram()
        .inject(&UserMessage::private(alice(), "stream"));
    let texts = wait_messages(app.telegram(), 1001, |t| {
        t.len() == 1 && t[0].contains("Sentence 20")
    })
    .await;
    assert_eq!(texts[0].trim(), answer.trim());
}

#[tokio::test]
async fn a_restart_between_fetching_and_answering_produces_exactly_one_answer() {
    let mut app = builder("").killable().start().await;
    let (tg, llm) = (app.telegram(), &app.llm);
    llm.push(Reply::Stall(Duration::from_secs(30)));
    tg.inject(&UserMessage::private(alice(), "are you there?"));
    llm.wait_for_requests(1, WAIT).await; // the update was fetched
    app.kill();
    app.llm.push(Reply::text("Yes, here."));
    app.start().await;
    let (tg, llm) = (app.telegram(), &app.llm);
    wait_messages(tg, 1001, |t| t == ["Yes, here."]).await;
    wait_inbox_idle(&app.store()).await;
    tokio::time::sleep(Duration::from_millis(1500)).await; // another poll round: nothing new
    assert_eq!(tg.messages(1001).len(), 1, "exactly one answer");
    assert_eq!(llm.requests().len(), 2, "the stalled call, then one answer");
    app.shutdown().await;
}

#[tokio::test]
async fn an_approval_button_press_through_telegram_runs_the_tool() {
    // These tests open access (dm_policy = "open"), where only an approver may approve.
    let extra = "[tools]\nenabled = [\"shell\"]\n[policy.approvers]\ntelegram = [\"1001\"]\n";
    let app = spawn(extra).await;
    app.llm
        .push(Reply::tool_call(
            "shell",
            json!({"command": "touch tg.txt"}),
        ))
        .push(Reply::text("Made it."));
    app.telegram()
        .inject(&UserMessage::private(alice(), "make a file"));
    let prompt = eventually(WAIT, "a prompt with buttons", async || {
        let messages = app.telegram().messages(1001);
        let prompt = messages.iter().find(|m| m.reply_markup.is_some());
        prompt.cloned().ok_or(messages)
    })
    .await;
    let keyboard = prompt.reply_markup.clone().unwrap();
    let approve = keyboard["inline_keyboard"][0][0]["callback_data"]
        .as_str()
        .unwrap()
        .to_owned();
    let pressed = app.telegram().click(&Click::on(&prompt, alice(), &approve));
    wait_messages(app.telegram(), 1001, |t| {
        t.last().is_some_and(|m| m == "Made it.")
    })
    .await;
    let answers = app.telegram().calls_to("answerCallbackQuery");
    assert!(
        answers.iter().any(|c| c
            .params
            .to_string()
            .contains(pressed.query_id.as_deref().unwrap())),
        "{answers:#?}"
    );
    let workspace = app
        .config
        .gateway
        .data_dir
        .join("workspaces/telegram/1001/tg.txt");
    assert!(workspace.exists());
    app.shutdown().await;
}

#[tokio::test]
async fn draft_transport_streams_through_send_message_draft_and_sends_the_final_answer_once() {
    let table = Table::open().set("draft_transport", quoted("draft"));
    let app = TestApp::builder().telegram(table).start().await;
    let (tg, llm) = (app.telegram(), &app.llm);
    let answer: String = (1..=12).map(|i| format!("Draft line {i}.\n")).collect();
    llm.push(Reply::paced(answer, 20, Duration::from_millis(40)));
    tg.inject(&UserMessage::private(alice(), "draft please"));
    let texts = wait_messages(tg, 1001, |t| t.len() == 1 && t[0].contains("Draft line 12")).await;
    assert_eq!(texts.len(), 1);
    assert!(
        !tg.drafts().is_empty(),
        "intermediate text went out as drafts"
    );
    assert!(
        tg.calls_to("editMessageText").is_empty(),
        "no edit-in-place while drafts work"
    );
    assert_eq!(
        tg.calls_to("sendMessage").len(),
        1,
        "the final answer is sent once"
    );
    app.shutdown().await;
}
