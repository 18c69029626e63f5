//! The Slack conversation model end to end, on the Slack and LLM stand-ins with the example
//! config's Slack table (only the credentials, the API URL and the test user and channel
//! allowed): a DM's top-level messages are one conversation answered at top level, with
//! memory across a restart; a thread in a DM is its own; in a channel a mention starts a
//! thread that later replies continue without a mention (after a restart too, on SQLite and
//! PostgreSQL), a mention delivered twice is one turn, and other chatter reaches nothing.
//! `lookup`: the store query behind "a thread the bot is part of", on both databases.

mod lookup;

use serde_json::Value;
use switchboard::memory::RECALL_HEADER;
use switchboard_standins::slack::{
    FAKE_BOT_USER_ID, FakeMessage, FakeSlack, SignedRequest, SlackMessage, channel_message_event,
    dm_event, mention_deliveries,
};
use switchboard_standins::{Reply, eventually};

use crate::app::{Table, TestApp, quoted};
use crate::helpers::{WAIT, drop_postgres, postgres_url, wait_inbox_idle};

const USER: &str = "U0TESTUSER";
const DM: &str = "D0TESTDM";
const CHANNEL: &str = "C0TESTCHAN";

/// A gateway with the example Slack table, open only to the test user and channel, on
/// SQLite in a temporary directory or on `database_url`.
async fn spawn_on(database_url: Option<&str>) -> TestApp {
    let table = Table::example()
        .set("allowed_users", format!("[{}]", quoted(USER)))
        .set("allowed_channels", format!("[{}]", quoted(CHANNEL)));
    let mut builder = TestApp::builder().slack(table);
    if let Some(url) = database_url {
        builder = builder.database(url);
    }
    builder.start().await
}

async fn spawn() -> TestApp {
    spawn_on(None).await
}

/// Post a signed Events API request; Slack must get its 200.
async fn send(app: &TestApp, event: &Value) {
    let status = app.slack_post("events", SignedRequest::event(event)).await;
    assert_eq!(status, 200, "event {event}");
}

/// Push `answer` to the LLM, send `events`, and wait for the answer in `channel` and the
/// inbox to drain (the turn's history and memory are stored).
async fn exchange(app: &TestApp, events: &[Value], channel: &str, answer: &str) -> FakeMessage {
    app.llm.push(Reply::text(answer));
    for event in events {
        send(app, event).await;
    }
    let posted = wait_for_answer(app.slack(), channel, answer).await;
    wait_inbox_idle(&app.store()).await;
    posted
}

/// Wait until the bot's message `answer` stands in `channel`.
async fn wait_for_answer(slack: &FakeSlack, channel: &str, answer: &str) -> FakeMessage {
    eventually(WAIT, &format!("{answer:?} in {channel}"), async || {
        let messages = slack.messages(channel);
        let found = messages.iter().find(|m| m.text.trim() == answer);
        found.cloned().ok_or(messages)
    })
    .await
}

/// A direct message from the test user: top level, or in the thread under `thread_ts`.
fn dm(event_id: &str, text: &str, ts: &str, thread_ts: Option<&str>) -> Value {
    dm_event(&SlackMessage {
        event_id,
        user: USER,
        channel: DM,
        text,
        ts,
        thread_ts,
    })
}

/// A message in the channel, as `message.channels` delivers it.
fn said(event_id: &str, text: &str, ts: &str, thread_ts: Option<&str>) -> Value {
    channel_message_event(&SlackMessage {
        event_id,
        user: USER,
        channel: CHANNEL,
        text,
        ts,
        thread_ts,
    })
}

/// Both deliveries of a message mentioning the bot in the channel.
fn mention(event_id: &str, text: &str, ts: &str, thread_ts: Option<&str>) -> [Value; 2] {
    let text = format!("<@{FAKE_BOT_USER_ID}> {text}");
    mention_deliveries(&SlackMessage {
        event_id,
        user: USER,
        channel: CHANNEL,
        text: &text,
        ts,
        thread_ts,
    })
}

/// The (role, content) pairs of the non-system messages of an LLM request.
fn turns(request: &Value) -> Vec<(String, String)> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| {
            let role = m["role"].as_str().unwrap_or_default().to_owned();
            (role, m["content"].as_str().unwrap_or_default().to_owned())
        })
        .collect()
}

fn pair(role: &str, content: &str) -> (String, String) {
    (role.to_owned(), content.to_owned())
}

#[tokio::test]
async fn two_top_level_dm_messages_are_one_conversation_answered_at_top_level() {
    let app = spawn().await;
    let first = dm("Ev1", "Hi, I am Ada.", "1700000101.000100", None);
    let answer = exchange(&app, &[first], DM, "Hello Ada.").await;
    assert_eq!(answer.thread_ts, None, "answered at top level");
    let second = dm("Ev2", "Who am I?", "1700000102.000100", None);
    let answer = exchange(&app, &[second], DM, "You are Ada.").await;
    assert_eq!(answer.thread_ts, None, "answered at top level");

    let requests = app.llm.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        turns(&requests[1]),
        [
            pair("user", "Hi, I am Ada."),
            pair("assistant", "Hello Ada."),
            pair("user", "Who am I?"),
        ]
    );
    app.shutdown().await;
}

#[tokio::test]
async fn a_fact_from_a_top_level_dm_is_recalled_in_a_later_one_after_a_restart() {
    let mut app = spawn().await;
    let fact = "My cat is called Miso and she likes turquoise blankets.";
    let told = dm("Ev1", fact, "1700000101.000100", None);
    exchange(&app, &[told], DM, "Noted.").await;
    app.restart().await;
    let asked = dm("Ev2", "What is my cat called?", "1700000102.000100", None);
    let answer = exchange(&app, &[asked], DM, "Miso.").await;
    assert_eq!(answer.thread_ts, None);

    let last = app.llm.requests().pop().unwrap();
    let recall = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "system")
        .filter_map(|m| m["content"].as_str())
        .find(|t| t.starts_with(RECALL_HEADER))
        .map(str::to_owned)
        .expect("a recall message in the later DM's request");
    assert!(recall.contains("called Miso"), "{recall}");
    app.shutdown().await;
}

#[tokio::test]
async fn a_thread_the_user_opens_in_a_dm_is_a_separate_conversation() {
    let app = spawn().await;
    let root = "1700000101.000100";
    exchange(
        &app,
        &[dm("Ev1", "First, top level", root, None)],
        DM,
        "Top one.",
    )
    .await;
    let aside = dm("Ev2", "A side question", "1700000102.000100", Some(root));
    let answer = exchange(&app, &[aside], DM, "Side answer.").await;
    assert_eq!(
        answer.thread_ts.as_deref(),
        Some(root),
        "answered in the thread"
    );
    let back = dm("Ev3", "Back at top level", "1700000103.000100", None);
    let answer = exchange(&app, &[back], DM, "Top two.").await;
    assert_eq!(answer.thread_ts, None);

    let requests = app.llm.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(turns(&requests[1]), [pair("user", "A side question")]);
    assert_eq!(
        turns(&requests[2]),
        [
            pair("user", "First, top level"),
            pair("assistant", "Top one."),
            pair("user", "Back at top level"),
        ]
    );
    app.shutdown().await;
}

#[tokio::test]
async fn in_a_channel_a_mention_and_a_reply_without_one_in_its_thread_are_one_conversation() {
    let app = spawn().await;
    let root = "1700000201.000100";
    let asked = mention("Ev1", "start here", root, None);
    let answer = exchange(&app, &asked, CHANNEL, "Started.").await;
    assert_eq!(answer.thread_ts.as_deref(), Some(root), "a thread under it");
    let reply = said(
        "Ev2",
        "and without a mention",
        "1700000202.000100",
        Some(root),
    );
    let answer = exchange(&app, &[reply], CHANNEL, "Continued.").await;
    assert_eq!(answer.thread_ts.as_deref(), Some(root));

    let requests = app.llm.requests();
    assert_eq!(
        requests.len(),
        2,
        "the top-level message.channels copy is ignored"
    );
    assert_eq!(
        turns(&requests[1]),
        [
            pair("user", "start here"),
            pair("assistant", "Started."),
            pair("user", "and without a mention"),
        ]
    );
    app.shutdown().await;
}

#[tokio::test]
async fn a_mention_inside_the_bots_thread_delivered_twice_in_either_order_is_one_turn_each() {
    let app = spawn().await;
    let root = "1700000201.000100";
    exchange(
        &app,
        &mention("Ev1", "start here", root, None),
        CHANNEL,
        "Started.",
    )
    .await;
    let again = mention("Ev2", "once more", "1700000202.000100", Some(root));
    exchange(&app, &again, CHANNEL, "Once.").await;
    let [app_mention, message] = mention("Ev3", "and again", "1700000203.000100", Some(root));
    exchange(&app, &[message, app_mention], CHANNEL, "Again.").await;

    let requests = app.llm.requests();
    assert_eq!(requests.len(), 3, "one LLM call per message");
    let last = turns(&requests[2]);
    assert_eq!(
        last.iter().filter(|(_, c)| c == "once more").count(),
        1,
        "{last:?}"
    );
    assert_eq!(last.last(), Some(&pair("user", "and again")));
    let answers = app.slack().messages(CHANNEL);
    assert_eq!(answers.len(), 3, "{answers:#?}");
    app.shutdown().await;
}

#[tokio::test]
async fn a_channel_message_without_a_mention_outside_the_bots_threads_reaches_nothing() {
    let app = spawn().await;
    let root = "1700000201.000100";
    exchange(
        &app,
        &mention("Ev1", "start here", root, None),
        CHANNEL,
        "Started.",
    )
    .await;
    let elsewhere = "1700000300.000100";
    let chatter = [
        said("Ev2", "just chatting", "1700000301.000100", None),
        said(
            "Ev3",
            "a thread of people",
            "1700000302.000100",
            Some(elsewhere),
        ),
        said("Ev4", "the root of the bot's thread", root, Some(root)),
    ];
    for event in &chatter {
        send(&app, event).await;
    }
    wait_inbox_idle(&app.store()).await;

    assert_eq!(
        app.llm.requests().len(),
        1,
        "only the mention reached the model"
    );
    assert_eq!(app.slack().calls_to("chat.postMessage").len(), 1);
    let counts = app.store().inbox_counts().await.unwrap();
    assert_eq!(
        counts.pending + counts.processing + counts.done + counts.failed,
        1,
        "chatter was never stored: {counts:?}"
    );
    app.shutdown().await;
}

/// A mention, a restart, then a reply without a mention in the bot's thread is answered.
async fn thread_survives_a_restart(database_url: Option<&str>) {
    let mut app = spawn_on(database_url).await;
    let root = "1700000201.000100";
    exchange(
        &app,
        &mention("Ev1", "start here", root, None),
        CHANNEL,
        "Started.",
    )
    .await;
    app.restart().await;
    let reply = said("Ev2", "still there?", "1700000202.000100", Some(root));
    let answer = exchange(&app, &[reply], CHANNEL, "Still here.").await;
    assert_eq!(answer.thread_ts.as_deref(), Some(root));
    let last = turns(&app.llm.requests()[1]);
    assert_eq!(last.first(), Some(&pair("user", "start here")), "{last:?}");
    app.shutdown().await;
}

#[tokio::test]
async fn after_a_restart_a_reply_in_the_bots_thread_still_continues_it() {
    thread_survives_a_restart(None).await;
}

#[tokio::test]
async fn after_a_restart_a_reply_in_the_bots_thread_still_continues_it_on_postgres() {
    let Some(url) = postgres_url().await else {
        return;
    };
    thread_survives_a_restart(Some(&url)).await;
    drop_postgres(&url).await;
}
