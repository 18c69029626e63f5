//! WhatsApp through the whole gateway (the real channel against the Graph API stand-in,
//! webhooks signed as Meta signs them): answers in one message or in ordered pieces, never
//! edited; redeliveries answered once; bad signatures refused; approvals as reply buttons
//! that survive a restart; the 24-hour window; rate limits slowing the channel down.

use std::time::Duration;

use serde_json::json;
use switchboard_standins::whatsapp::{
    FAKE_APP_SECRET, Failure, Notification, Sent, WebhookMessage,
};
use switchboard_standins::{Reply, eventually};

use crate::app::{Table, TestApp, quoted};
use crate::helpers::{WAIT, wait_inbox_idle};

/// The person writing, as WhatsApp writes their number.
const PERSON: &str = "16505551234";

async fn spawn(extra: &str) -> TestApp {
    TestApp::builder()
        .whatsapp(Table::open())
        .config(extra)
        .start()
        .await
}

async fn say(app: &TestApp, id: &str, text: &str) -> u16 {
    app.whatsapp_post(&Notification::message(&WebhookMessage::text(
        PERSON, id, text,
    )))
    .await
}

/// Wait until the messages sent to [`PERSON`] satisfy `done`.
async fn wait_sent(app: &TestApp, done: impl Fn(&[Sent]) -> bool) -> Vec<Sent> {
    eventually(WAIT, "messages to the person", async || {
        let sent = app.whatsapp().sent_to(PERSON);
        if done(&sent) {
            Ok(sent)
        } else {
            Err(sent.len())
        }
    })
    .await
}

#[tokio::test]
async fn a_short_dm_is_answered_once_in_one_message_after_a_typing_indicator() {
    let app = spawn("").await;
    app.llm.push(Reply::text("Hello there."));
    assert_eq!(say(&app, "wamid.DM1", "hi").await, 200);
    wait_sent(&app, |s| !s.is_empty()).await;
    wait_inbox_idle(&app.store()).await;
    let sent = app.whatsapp().sent_to(PERSON);
    assert_eq!(sent.len(), 1, "{sent:#?}");
    assert_eq!(sent[0].text(), "Hello there.");
    assert_eq!(
        app.whatsapp().typing(),
        ["wamid.DM1"],
        "marked read with the typing indicator"
    );
}

#[tokio::test]
async fn a_long_answer_arrives_in_ordered_paragraph_chunks() {
    let app = spawn("").await;
    let paragraphs: Vec<String> = (1..=6)
        .map(|i| {
            format!(
                "Paragraph {i}: {}",
                "words that take up room ".repeat(12).trim_end()
            )
        })
        .collect();
    let answer = paragraphs.join("\n\n");
    app.llm
        .push(Reply::paced(answer.clone(), 40, Duration::from_millis(10)));
    assert_eq!(say(&app, "wamid.LONG", "tell me a lot").await, 200);
    wait_inbox_idle(&app.store()).await;
    let sent = app.whatsapp().sent_to(PERSON);
    assert!(sent.len() >= 2, "pieces, not one message: {}", sent.len());
    assert!(
        sent.iter()
            .all(|s| s.kind == "text" && s.text().chars().count() <= 4096)
    );
    let joined: Vec<String> = sent.iter().map(Sent::text).collect();
    assert_eq!(
        joined.join("\n\n"),
        answer,
        "every paragraph once, in order"
    );
    assert!(
        sent[0].text().chars().count() >= 600,
        "a piece waits for ~600 characters"
    );
}

#[tokio::test]
async fn a_redelivered_webhook_is_answered_once() {
    let app = spawn("").await;
    app.llm.push(Reply::text("Only once."));
    for _ in 0..3 {
        assert_eq!(say(&app, "wamid.AGAIN", "once please").await, 200);
    }
    wait_sent(&app, |s| !s.is_empty()).await;
    wait_inbox_idle(&app.store()).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(app.whatsapp().sent_to(PERSON).len(), 1);
    assert_eq!(app.llm.requests().len(), 1);
}

#[tokio::test]
async fn a_bad_signature_is_401_and_stores_nothing() {
    let app = spawn("").await;
    let note = Notification::message(&WebhookMessage::text(PERSON, "wamid.BAD", "hi"));
    assert_eq!(
        note.post(&app.url("/whatsapp/whatsapp"), "not-the-app-secret")
            .await,
        401
    );
    assert_ne!(FAKE_APP_SECRET, "not-the-app-secret");
    let counts = app.store().inbox_counts().await.unwrap();
    assert_eq!(counts.pending + counts.processing + counts.done, 0);
    assert!(app.llm.requests().is_empty());
}

#[tokio::test]
async fn approve_once_pressed_after_a_restart_runs_the_command_exactly_once() {
    let extra = format!(
        "[tools]\nenabled = [\"shell\"]\n[policy]\nmode = \"guarded\"\n[policy.approvers]\nwhatsapp = [{}]\n",
        quoted(PERSON)
    );
    let mut app = spawn(&extra).await;
    app.llm
        .push(Reply::tool_call(
            "shell",
            json!({"command": "echo run >> log.txt"}),
        ))
        .push(Reply::text("Ran it."));
    assert_eq!(say(&app, "wamid.ASK", "log something").await, 200);
    let sent = wait_sent(&app, |s| s.iter().any(|m| m.buttons().len() == 3)).await;
    let prompt = sent
        .iter()
        .find(|m| m.buttons().len() == 3)
        .unwrap()
        .clone();
    let titles: Vec<String> = prompt.buttons().into_iter().map(|(_, t)| t).collect();
    assert_eq!(titles, ["Approve once", "Always allow", "Deny"]);
    wait_inbox_idle(&app.store()).await;
    app.restart().await;
    let (once, title) = prompt.buttons()[0].clone();
    let press = WebhookMessage::button_reply(PERSON, "wamid.PRESS", &prompt.id, &once, &title);
    for _ in 0..2 {
        assert_eq!(app.whatsapp_post(&Notification::message(&press)).await, 200);
    }
    wait_sent(&app, |s| s.iter().any(|m| m.text() == "Ran it.")).await;
    wait_inbox_idle(&app.store()).await;
    let log = app
        .config
        .gateway
        .data_dir
        .join("workspaces/whatsapp")
        .join(PERSON)
        .join("log.txt");
    assert_eq!(
        std::fs::read_to_string(log).unwrap(),
        "run\n",
        "the command ran exactly once"
    );
    assert!(app.store().pending_approvals().await.unwrap().is_empty());
}

#[tokio::test]
async fn an_answer_outside_the_24_hour_window_goes_out_as_the_template() {
    let table = Table::open().set(
        "reminder_template",
        "{ name = \"reminder\", language = \"en\" }",
    );
    let app = TestApp::builder().whatsapp(table).start().await;
    app.llm.push(Reply::text("Your reminder:\n\ncall Bob."));
    let old = WebhookMessage::text(PERSON, "wamid.OLD", "remind me").ago(25 * 3600);
    assert_eq!(app.whatsapp_post(&Notification::message(&old)).await, 200);
    let sent = wait_sent(&app, |s| !s.is_empty()).await;
    assert_eq!(sent[0].kind, "template");
    assert_eq!(sent[0].text(), "Your reminder: · call Bob.");
}

#[tokio::test]
async fn without_a_template_an_answer_outside_the_window_is_undeliverable_and_shown() {
    let app = spawn("").await;
    app.llm.push(Reply::text("Too late."));
    let old = WebhookMessage::text(PERSON, "wamid.OLD2", "hello?").ago(25 * 3600);
    assert_eq!(app.whatsapp_post(&Notification::message(&old)).await, 200);
    wait_inbox_idle(&app.store()).await;
    assert!(app.whatsapp().sent_to(PERSON).is_empty());
    let health = app.built("whatsapp").health();
    assert!(health.detail.contains("undeliverable"), "{}", health.detail);
    let url = format!("http://{}/metrics", app.gateway().addr());
    let metrics = reqwest::get(&url).await.unwrap().text().await.unwrap();
    assert!(
        metrics.contains(
            "switchboard_channel_undelivered{channel=\"whatsapp\",reason=\"outside_24h_window\"} 1"
        ),
        "{metrics}"
    );
}

#[tokio::test]
async fn rate_limit_errors_slow_the_channel_down_without_losing_a_message() {
    let app = spawn("").await;
    let people: Vec<String> = (0..4).map(|i| format!("1650555000{i}")).collect();
    for (i, _) in people.iter().enumerate() {
        app.llm.push(Reply::text(format!("Answer {i}.")));
    }
    app.whatsapp().fail_next(3, Failure::rate_limited());
    app.whatsapp().fail_next(2, Failure::pair_limited());
    for (i, person) in people.iter().enumerate() {
        let msg = WebhookMessage::text(person, &format!("wamid.FLOOD{i}"), "go");
        assert_eq!(app.whatsapp_post(&Notification::message(&msg)).await, 200);
    }
    eventually(
        Duration::from_secs(60),
        "every person answered",
        async || {
            let answered = people
                .iter()
                .filter(|p| !app.whatsapp().sent_to(p).is_empty())
                .count();
            if answered == people.len() {
                Ok(())
            } else {
                Err(answered)
            }
        },
    )
    .await;
    wait_inbox_idle(&app.store()).await;
    let total: usize = people.iter().map(|p| app.whatsapp().sent_to(p).len()).sum();
    assert_eq!(total, people.len(), "each answered once");
    assert_eq!(
        app.whatsapp().refused().len(),
        5,
        "every scripted limit was met"
    );
}

#[tokio::test]
async fn an_e164_entry_admits_the_matching_wa_id() {
    let table = Table::open()
        .set("dm_policy", quoted("allowlist"))
        .set("allowed_users", "[\"+1 650 555 1234\"]");
    let app = TestApp::builder().whatsapp(table).start().await;
    app.llm.push(Reply::text("Welcome."));
    assert_eq!(say(&app, "wamid.E164", "hi").await, 200);
    let stranger = WebhookMessage::text("4915112345678", "wamid.NO", "hi");
    assert_eq!(
        app.whatsapp_post(&Notification::message(&stranger)).await,
        200
    );
    wait_sent(&app, |s| !s.is_empty()).await;
    wait_inbox_idle(&app.store()).await;
    assert!(app.whatsapp().sent_to("4915112345678").is_empty());
    assert_eq!(app.llm.requests().len(), 1);
}

#[tokio::test]
async fn a_1100_character_approval_call_arrives_as_text_then_three_buttons() {
    let extra = format!(
        "[tools]\nenabled = [\"shell\"]\n[policy]\nmode = \"guarded\"\n[policy.approvers]\nwhatsapp = [{}]\n",
        quoted(PERSON)
    );
    let app = spawn(&extra).await;
    let command = format!("echo {}", "long ".repeat(220).trim_end());
    assert!(command.len() >= 1100);
    app.llm
        .push(Reply::tool_call("shell", json!({"command": command})));
    assert_eq!(say(&app, "wamid.LONGASK", "run the long one").await, 200);
    let sent = wait_sent(&app, |s| s.iter().any(|m| m.buttons().len() == 3)).await;
    let at = sent.iter().position(|m| m.buttons().len() == 3).unwrap();
    assert!(at > 0, "the text came first: {sent:#?}");
    assert!(
        sent[at - 1].kind == "text" && sent[at - 1].text().contains("long long"),
        "{sent:#?}"
    );
    assert!(sent[at].text().chars().count() <= 1024);
}

#[tokio::test]
async fn two_channels_on_one_callback_path_each_get_only_their_numbers_messages() {
    use switchboard_standins::whatsapp::FAKE_PHONE_NUMBER_ID;
    let shared = |number: &str| {
        Table::open()
            .set("webhook_path", quoted("/whatsapp/app"))
            .set("phone_number_id", quoted(number))
    };
    let app = TestApp::builder()
        .whatsapp(shared(FAKE_PHONE_NUMBER_ID))
        .whatsapp_also("sales", shared("2222222222"))
        .start()
        .await;
    app.llm
        .push(Reply::text("Support here."))
        .push(Reply::text("Sales here."));
    let url = app.url("/whatsapp/app");
    let to_support = Notification::message(&WebhookMessage::text(PERSON, "wamid.SUP", "help"));
    assert_eq!(to_support.post(&url, FAKE_APP_SECRET).await, 200);
    wait_inbox_idle(&app.store()).await;
    let to_sales = Notification::messages(
        "2222222222",
        &[WebhookMessage::text(PERSON, "wamid.SAL", "buy")],
    );
    assert_eq!(to_sales.post(&url, FAKE_APP_SECRET).await, 200);
    let nobody = Notification::messages(
        "3333333333",
        &[WebhookMessage::text(PERSON, "wamid.NOB", "?")],
    );
    assert_eq!(
        nobody.post(&url, FAKE_APP_SECRET).await,
        200,
        "no channel owns it: acknowledged"
    );
    wait_inbox_idle(&app.store()).await;
    let (support, sales) = (said(&app, "whatsapp").await, said(&app, "sales").await);
    assert!(
        support.contains("help") && !support.contains("buy"),
        "{support}"
    );
    assert!(sales.contains("buy") && !sales.contains("help"), "{sales}");
    assert_eq!(
        app.llm.requests().len(),
        2,
        "the unowned number's message was not stored"
    );
}

/// Everything stored in [`PERSON`]'s conversation on `channel`, for matching.
async fn said(app: &TestApp, channel: &str) -> String {
    let key = switchboard_channel::ConversationKey::new(channel, PERSON);
    let history = app.store().history(&key, 10).await.unwrap();
    history
        .iter()
        .map(|m| format!("{m:?}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A gateway on a manual clock whose model makes a one-hour reminder when [`PERSON`] writes
/// a message 25 hours old (so the window is closed when it fires), and the reminder's text.
async fn reminder_outside_the_window(table: Table) -> (TestApp, switchboard::clock::Clock) {
    use switchboard::schedule::when::rfc3339;
    let clock = switchboard::clock::Clock::manual(crate::helpers::wall_ms());
    let app = TestApp::builder()
        .whatsapp(table)
        .clock(clock.clone())
        .start()
        .await;
    let due = clock.now_ms() + 3_600_000;
    let args = json!({"action": "create", "prompt": "Remind them to call the bank", "at": rfc3339(due, "UTC")});
    app.llm
        .push(Reply::tool_call("schedule", args))
        .push(Reply::text("I'll remind you."))
        .push(Reply::text("Time to call the bank!"));
    let old = WebhookMessage::text(PERSON, "wamid.REMIND", "remind me in an hour").ago(25 * 3600);
    assert_eq!(app.whatsapp_post(&Notification::message(&old)).await, 200);
    wait_inbox_idle(&app.store()).await;
    clock.advance(Duration::from_secs(3600));
    eventually(WAIT, "the reminder to fire", async || {
        let n = app.llm.requests().len();
        if n == 3 { Ok(()) } else { Err(n) }
    })
    .await;
    wait_inbox_idle(&app.store()).await;
    (app, clock)
}

#[tokio::test]
async fn a_reminder_due_outside_the_window_goes_out_as_the_template() {
    let table = Table::open().set(
        "reminder_template",
        "{ name = \"reminder\", language = \"en\" }",
    );
    let (app, _clock) = reminder_outside_the_window(table).await;
    let sent = wait_sent(&app, |s| s.len() == 2).await;
    assert!(sent.iter().all(|s| s.kind == "template"), "{sent:#?}");
    assert_eq!(sent[1].text(), "Time to call the bank!");
    assert!(app.whatsapp().refused().is_empty(), "chosen before sending");
}

#[tokio::test]
async fn a_reminder_due_outside_the_window_without_a_template_is_undeliverable_and_shown() {
    let (app, _clock) = reminder_outside_the_window(Table::open()).await;
    assert!(app.whatsapp().sent_to(PERSON).is_empty());
    let health = app.built("whatsapp").health();
    assert!(
        health.detail.contains("2 message(s) undeliverable"),
        "{}",
        health.detail
    );
}
