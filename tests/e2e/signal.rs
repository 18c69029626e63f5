//! Signal through the whole gateway: the real channel against a stand-in of signal-cli's
//! HTTP daemon (JSON-RPC and its SSE event stream). Streamed answers by edits within Signal's
//! edit cap, long answers, style ranges, groups, approvals by reaction and by reply across a
//! restart, a daemon dying mid-answer, a message sent while the gateway was down, quotes,
//! edits, deletes, and refusals that must not loop.

use std::time::Duration;

use serde_json::json;
use switchboard_signal::MAX_EDITS;
use switchboard_standins::signal::{
    FAKE_ACCOUNT, FAKE_ACCOUNT_ACI, Failure, FakeSignal, Person, Sent,
};
use switchboard_standins::{Reply, eventually};

use crate::app::{Builder, Table, TestApp};
use crate::helpers::{WAIT, wait_inbox_idle};

const GROUP: &str = "Pmpi+EfPWmsxiomLe9Nx2XF9HOE483p6iKiFj65iMwI=";

fn builder(extra: &str) -> Builder {
    TestApp::builder().signal(Table::open()).config(extra)
}

fn alice() -> Person {
    Person::new(1, "Alice")
}

/// Wait until the bot's shown, undeleted messages to `to` satisfy `done`.
async fn wait_sent(signal: &FakeSignal, to: &str, done: impl Fn(&[Sent]) -> bool) -> Vec<Sent> {
    eventually(WAIT, &format!("the bot's messages to {to}"), async || {
        let sent: Vec<Sent> = signal.sent(to).into_iter().filter(|s| !s.deleted).collect();
        if done(&sent) { Ok(sent) } else { Err(sent) }
    })
    .await
}

/// What the model was last asked, as text.
fn last_request(app: &TestApp) -> String {
    app.llm
        .requests()
        .last()
        .map(ToString::to_string)
        .unwrap_or_default()
}

#[tokio::test]
async fn a_dm_is_answered_once_streamed_by_edits_within_signals_edit_cap() {
    let app = builder("").start().await;
    let answer: String = (1..=40)
        .map(|i| format!("Line {i} of a **streamed** answer.\n"))
        .collect();
    app.llm
        .push(Reply::paced(answer, 20, Duration::from_millis(40)));
    app.signal().dm(&alice(), "hello");
    let sent = wait_sent(app.signal(), &alice().number, |s| {
        s.len() == 1 && s[0].text.contains("Line 40")
    })
    .await;
    let msg = &sent[0];
    assert!(msg.edits >= 1, "streamed by edits: {msg:#?}");
    assert!(
        msg.edits <= MAX_EDITS,
        "{} edits, over Signal's cap",
        msg.edits
    );
    assert!(
        !msg.text.contains("**"),
        "no literal asterisks: {}",
        msg.text
    );
    assert!(
        msg.styles.iter().any(|s| s.ends_with(":BOLD")),
        "{:?}",
        msg.styles
    );
    assert!(
        !app.signal().calls_to("sendTyping").is_empty(),
        "typing while the turn ran"
    );
    wait_inbox_idle(&app.store()).await;
    assert_eq!(app.llm.requests().len(), 1, "answered once");
    app.shutdown().await;
}

#[tokio::test]
async fn a_long_answer_arrives_whole_and_in_order_in_messages_under_signals_length() {
    let app = builder("").start().await;
    let answer: String = (1..=120)
        .map(|i| format!("Paragraph {i:03} says something worth reading.\n\n"))
        .collect();
    app.llm
        .push(Reply::paced(answer.clone(), 400, Duration::from_millis(5)));
    app.signal().dm(&alice(), "long please");
    let sent = wait_sent(app.signal(), &alice().number, |s| {
        s.last().is_some_and(|m| m.text.contains("Paragraph 120"))
    })
    .await;
    assert!(sent.len() >= 2, "{} messages", sent.len());
    let all: Vec<String> = sent
        .iter()
        .flat_map(|m| {
            m.text
                .lines()
                .filter(|l| l.starts_with("Paragraph"))
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    let expected: Vec<String> = (1..=120)
        .map(|i| format!("Paragraph {i:03} says something worth reading."))
        .collect();
    assert_eq!(all, expected, "every paragraph once, in order");
    for m in &sent {
        assert!(m.text.encode_utf16().count() <= switchboard_signal::MAX_MESSAGE_UTF16);
    }
    app.shutdown().await;
}

#[tokio::test]
async fn a_styled_span_after_an_emoji_lands_on_the_right_characters() {
    let app = builder("").start().await;
    app.llm.push(Reply::text("🎉🎉 **done** and `ls`"));
    app.signal().dm(&alice(), "style");
    let sent = wait_sent(app.signal(), &alice().number, |s| s.len() == 1).await;
    assert_eq!(sent[0].text, "🎉🎉 done and ls");
    assert_eq!(sent[0].styles, ["5:4:BOLD", "14:2:MONOSPACE"]);
    app.shutdown().await;
}

#[tokio::test]
async fn a_group_message_is_answered_only_when_the_bot_is_mentioned_by_number_or_aci_or_replied_to()
{
    let app = builder("").start().await;
    let group = format!("group.{GROUP}");
    let signal = app.signal();
    signal.group(&alice(), GROUP, "just chatting", json!([]));
    app.llm.push(Reply::text("You called?"));
    let mention = json!([{ "start": 4, "length": 1, "number": FAKE_ACCOUNT, "uuid": null, "name": FAKE_ACCOUNT }]);
    signal.group(&alice(), GROUP, "hey \u{fffc} what is up", mention);
    let sent = wait_sent(signal, &group, |s| s.len() == 1).await;
    assert_eq!(sent[0].text, "You called?");
    assert!(
        last_request(&app).contains("hey what is up"),
        "{}",
        last_request(&app)
    );
    assert!(
        !last_request(&app).contains("just chatting"),
        "unaddressed chatter is no turn"
    );
    app.llm.push(Reply::text("Still here."));
    let reply = json!({ "message": "and now?", "groupInfo": { "groupId": GROUP, "type": "DELIVER", "revision": 3 },
        "quote": { "id": sent[0].timestamp, "author": FAKE_ACCOUNT, "authorNumber": FAKE_ACCOUNT, "text": "You called?", "attachments": [] } });
    signal.data(&alice(), reply);
    wait_sent(signal, &group, |s| s.len() == 2).await;
    // Signal's apps name a mentioned account by its ACI; the number may be hidden.
    app.llm.push(Reply::text("By my ACI, yes."));
    let by_aci = json!([{ "start": 0, "length": 1, "number": null, "uuid": FAKE_ACCOUNT_ACI, "name": "Bot" }]);
    signal.group(&alice(), GROUP, "\u{fffc} are you there?", by_aci);
    wait_sent(signal, &group, |s| s.len() == 3).await;
    wait_inbox_idle(&app.store()).await;
    assert_eq!(app.llm.requests().len(), 3, "the chatter was never a turn");
    app.shutdown().await;
}

const APPROVAL: &str =
    "[tools]\nenabled = [\"shell\"]\n[policy.approvers]\nsignal = [\"+15550200001\"]\n";

/// A prompt to approve a shell call, as the person sees it.
async fn prompt(app: &TestApp) -> Sent {
    app.llm
        .push(Reply::tool_call(
            "shell",
            json!({"command": "touch sig.txt"}),
        ))
        .push(Reply::text("Made it."));
    app.signal().dm(&alice(), "make a file");
    let sent = wait_sent(app.signal(), &alice().number, |s| {
        s.iter().any(|m| m.text.contains("React with"))
    })
    .await;
    sent.into_iter()
        .find(|m| m.text.contains("React with"))
        .unwrap()
}

/// How often the approved command ran: it made the file, and each run handed its result
/// to the model once.
fn ran(app: &TestApp) -> usize {
    let file = app.config.gateway.data_dir.join(format!(
        "workspaces/signal/_{}/sig.txt",
        alice().number.trim_start_matches('+')
    ));
    if !file.exists() {
        return 0;
    }
    let tool_results = |r: &serde_json::Value| {
        r["messages"]
            .as_array()
            .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count())
    };
    app.llm
        .requests()
        .iter()
        .filter(|r| tool_results(r) > 0)
        .count()
}

#[tokio::test]
async fn an_approval_by_reaction_after_a_restart_runs_exactly_once() {
    let mut app = builder(APPROVAL).killable().start().await;
    let prompt = prompt(&app).await;
    assert!(prompt.text.contains("✅"), "{}", prompt.text);
    app.kill();
    app.start().await;
    app.signal().react(&alice(), "✅", prompt.timestamp);
    app.signal().react(&alice(), "✅", prompt.timestamp);
    wait_sent(app.signal(), &alice().number, |s| {
        s.iter().any(|m| m.text == "Made it.")
    })
    .await;
    wait_inbox_idle(&app.store()).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(ran(&app), 1, "the tool ran exactly once");
    app.shutdown().await;
}

#[tokio::test]
async fn an_approval_by_reply_text_runs_the_tool_and_a_strangers_reaction_runs_nothing() {
    let app = builder(APPROVAL).start().await;
    let prompt = prompt(&app).await;
    let stranger = Person::new(7, "Mallory");
    app.signal().react(&stranger, "✅", prompt.timestamp);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(ran(&app), 0, "a non-approver's reaction runs nothing");
    app.signal().reply(
        &alice(),
        "approve",
        prompt.timestamp,
        FAKE_ACCOUNT,
        &prompt.text,
    );
    wait_sent(app.signal(), &alice().number, |s| {
        s.iter().any(|m| m.text == "Made it.")
    })
    .await;
    assert_eq!(ran(&app), 1);
    app.shutdown().await;
}

#[tokio::test]
async fn the_daemon_dying_mid_answer_still_delivers_the_answer_once_when_it_is_back() {
    let app = builder("").start().await;
    let answer: String = (1..=30).map(|i| format!("Step {i} done.\n")).collect();
    app.llm
        .push(Reply::paced(answer.clone(), 10, Duration::from_millis(50)));
    app.signal().dm(&alice(), "work");
    wait_sent(app.signal(), &alice().number, |s| !s.is_empty()).await;
    app.signal().kill();
    tokio::time::sleep(Duration::from_secs(2)).await;
    app.signal().back();
    let sent = wait_sent(app.signal(), &alice().number, |s| {
        s.iter().any(|m| m.text.contains("Step 30"))
    })
    .await;
    assert_eq!(sent.len(), 1, "one message: {sent:#?}");
    assert_eq!(sent[0].text.trim(), answer.trim());
    app.shutdown().await;
}

#[tokio::test]
async fn a_message_sent_while_the_gateway_was_down_is_answered_when_it_is_back() {
    let mut app = builder("").killable().start().await;
    let listening = |open: bool| {
        let signal = app.signal().clone();
        async move {
            eventually(WAIT, "the event stream's state", async || {
                if signal.listening() == open {
                    Ok(())
                } else {
                    Err(())
                }
            })
            .await;
        }
    };
    listening(true).await;
    app.kill();
    // Once the daemon saw the stream close, a message waits at Signal's servers.
    let signal = app.signal().clone();
    eventually(WAIT, "the stream closed", async || {
        if signal.listening() { Err(()) } else { Ok(()) }
    })
    .await;
    app.signal().dm(&alice(), "are you there?");
    app.llm.push(Reply::text("Back and here."));
    app.start().await;
    wait_sent(app.signal(), &alice().number, |s| {
        s.len() == 1 && s[0].text == "Back and here."
    })
    .await;
    app.shutdown().await;
}

#[tokio::test]
async fn a_quote_is_read_an_edit_and_a_delete_are_no_new_turns_and_typing_is_ignored() {
    let app = builder("").start().await;
    app.llm.push(Reply::text("Noted."));
    let bob = Person::new(2, "Bob");
    let first = app.signal().dm(&alice(), "the plan is A");
    wait_sent(app.signal(), &alice().number, |s| s.len() == 1).await;
    app.signal().edit(&alice(), first, "the plan is B");
    app.signal().delete(&alice(), first);
    app.signal().typing_and_receipt(&alice());
    app.llm.push(Reply::text("Quoted."));
    app.signal()
        .reply(&alice(), "what about this?", 42, &bob.number, "Bob's idea");
    wait_sent(app.signal(), &alice().number, |s| s.len() == 2).await;
    wait_inbox_idle(&app.store()).await;
    assert_eq!(
        app.llm.requests().len(),
        2,
        "edit, delete, typing and receipt were no turns"
    );
    let asked = last_request(&app);
    assert!(
        asked.contains("> Bob's idea") && asked.contains("what about this?"),
        "{asked}"
    );
    app.shutdown().await;
}

#[tokio::test]
async fn an_unregistered_recipient_and_a_proof_required_limit_are_not_retried() {
    let app = builder("").start().await;
    let gone = Person::new(3, "Gone");
    app.signal().unregister(&gone.number);
    app.llm.push(Reply::text("You will not see this."));
    app.signal().dm(&gone, "hello?");
    wait_inbox_idle(&app.store()).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let to_gone = |app: &TestApp, who: &str| {
        app.signal()
            .calls_to("send")
            .iter()
            .filter(|c| c.params["recipient"][0] == who)
            .count()
    };
    assert_eq!(to_gone(&app, &gone.number), 1, "one attempt, no loop");
    app.signal().fail_next("send", Failure::ProofRequired);
    app.llm.push(Reply::text("Held back by a captcha."));
    app.signal().dm(&alice(), "hi");
    wait_inbox_idle(&app.store()).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        to_gone(&app, &alice().number),
        1,
        "a captcha is not retried: {:#?}",
        app.signal().calls_to("send")
    );
    app.shutdown().await;
}

#[tokio::test]
async fn a_dropped_event_stream_is_reopened_and_a_rate_limit_is_waited_out() {
    let app = builder("").start().await;
    let signal = app.signal().clone();
    eventually(WAIT, "the event stream open", async || {
        if signal.listening() { Ok(()) } else { Err(()) }
    })
    .await;
    signal.drop_streams();
    signal.fail_next("send", Failure::RateLimited(1));
    app.llm.push(Reply::text("Still answering."));
    signal.dm(&alice(), "after the drop");
    let sent = wait_sent(&signal, &alice().number, |s| s.len() == 1).await;
    assert_eq!(sent[0].text, "Still answering.");
    assert_eq!(
        signal.calls_to("send").len(),
        2,
        "the limited send, then one more"
    );
    app.shutdown().await;
}

#[tokio::test]
async fn a_file_a_person_sends_is_fetched_through_the_daemon() {
    let app = builder("").start().await;
    let signal = app.signal();
    let file = signal.attachment("att-1.txt", "text/plain", Some("notes.txt"), b"the notes");
    app.llm.push(Reply::text("Read it."));
    signal.data(
        &alice(),
        json!({ "message": "see the file", "attachments": [file] }),
    );
    wait_sent(signal, &alice().number, |s| s.len() == 1).await;
    let fetched = signal.calls_to("getAttachment");
    assert_eq!(fetched.len(), 1, "{fetched:#?}");
    assert_eq!(fetched[0].params["id"], "att-1.txt");
    assert_eq!(fetched[0].params["recipient"], alice().number.as_str());
    assert!(
        last_request(&app).contains("notes.txt"),
        "{}",
        last_request(&app)
    );
    app.shutdown().await;
}

/// A process in signal-cli's place for `command`: forwards where `daemon_url` points to the
/// stand-in, and exits (its last line on stderr) when the event stream it carried ends.
const FORWARDER: &str = include_str!("../signal/forward.py");

#[tokio::test]
async fn a_supervised_daemon_that_exits_is_started_again_and_its_last_words_are_in_the_health() {
    let fake = FakeSignal::start().await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port();
    let fake_port = fake
        .daemon_url()
        .rsplit(':')
        .next()
        .unwrap_or_default()
        .to_owned();
    let command =
        serde_json::to_string(&["python3", "-c", FORWARDER, &port.to_string(), &fake_port])
            .expect("a TOML array of strings");
    let table = Table::open()
        .set("daemon_url", format!("\"http://127.0.0.1:{port}\""))
        .set("command", command);
    let app = TestApp::builder()
        .signal_standin(fake)
        .signal(table)
        .start()
        .await;
    app.llm.push(Reply::text("Through the supervised daemon."));
    app.signal().dm(&alice(), "hello");
    wait_sent(app.signal(), &alice().number, |s| {
        s.len() == 1 && s[0].text == "Through the supervised daemon."
    })
    .await;

    // The daemon's stream ends: the process exits, is started again, and the stream resumes.
    app.signal().drop_streams();
    let channel = app.built("signal");
    let detail = eventually(WAIT, "the restart in the channel's health", async || {
        let health = channel.health();
        if health.ready && health.detail.contains("restarted 1 time") {
            Ok(health.detail)
        } else {
            Err(health)
        }
    })
    .await;
    assert!(
        detail.contains("the event stream ended; exiting"),
        "the daemon's last words: {detail}"
    );
    app.llm.push(Reply::text("Still here after the restart."));
    app.signal().dm(&alice(), "again");
    wait_sent(app.signal(), &alice().number, |s| {
        s.len() == 2 && s[1].text == "Still here after the restart."
    })
    .await;
    let workspace = app.dir().join("workspaces/.signal-signal");
    assert!(workspace.is_dir(), "the daemon ran in its own directory");
    app.shutdown().await;
}
