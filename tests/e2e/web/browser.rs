//! The web chat page in headless Chromium against the real gateway: an answer streams into
//! a growing draft, a reload shows the history, script in a message stays text, and a button
//! press comes back with the core's answer. A mid-stream screenshot is written to
//! `target/artifacts/web-chat-midstream.png`.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use fantoccini::{Client, Locator};
use serde_json::{Value, json};
use switchboard::agent::{Tool, ToolResult};
use switchboard_channel::{Button, Outbound};
use switchboard_standins::{Later, Reply, eventually_every};

use super::{Door, spawn, spawn_with, web_key};
use crate::helpers::WAIT;

/// What the page shows, read in one round trip.
const STATE_JS: &str = r#"
const texts = sel => Array.from(document.querySelectorAll(sel), e => e.textContent);
return {
  status: document.getElementById('status').textContent,
  users: texts('#log .msg.user .body'),
  bots: texts('#log .msg.bot .body'),
  notices: texts('#log .msg .notice'),
  buttons: texts('#log .msg .buttons button'),
  copy: document.querySelectorAll('#log .code .copy').length,
  progress: document.querySelectorAll('#log .progress .step').length,
  injected: document.querySelectorAll('#log img, #log script').length,
  pwned: typeof window.__pwned,
};
"#;

/// The answer the fake LLM streams: long enough to watch it grow, with a code block.
const ANSWER: &str = "## Streaming drafts\n\nThe gateway edits **one message** as the answer \
arrives, so you can watch it grow instead of waiting for the end.\n\n- Edits are throttled \
to the platform's pace\n- The final text replaces the draft in place\n- A reload shows the \
same history\n\n```rust\nlet draft = Draft::new(channel, key);\ndraft.drive(events).await?;\n\
```\n\nThat is the whole trick: one live message per answer. Done.";

/// A tool the model "calls" first, so the draft shows a progress line above the answer.
struct LookupDocs;

#[async_trait]
impl Tool for LookupDocs {
    fn name(&self) -> &str {
        "lookup_docs"
    }

    fn description(&self) -> &str {
        "Look up Switchboard's documentation on a topic."
    }

    fn parameters_schema(&self) -> Value {
        json!({"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]})
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn execute(&self, _args: Value) -> ToolResult {
        tokio::time::sleep(Duration::from_millis(150)).await;
        ToolResult::ok("Drafts are one message edited as the answer streams.")
    }
}

async fn state(client: &Client) -> Value {
    crate::browser::page_state(client, STATE_JS).await
}

/// Poll the page until `done` holds; returns the state that satisfied it.
async fn wait_for(client: &Client, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    crate::browser::wait_for(client, STATE_JS, what, done).await
}

fn last_bot(state: &Value) -> String {
    state["bots"]
        .as_array()
        .and_then(|b| b.last())
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

pub(super) async fn type_and_send(client: &Client, text: &str) {
    let input = client.find(Locator::Css("#input")).await.unwrap();
    input.send_keys(text).await.unwrap();
    client
        .find(Locator::Css("#send"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

/// Send a message and watch the draft grow until the full answer; screenshot mid-way.
async fn streams_a_growing_draft(browser: &crate::browser::Browser) {
    let client = &browser.client;
    type_and_send(client, "How do drafts work?").await;
    let mut partials: Vec<usize> = Vec::new();
    let mut progress_seen = false;
    let mut shot = false;
    // Read often enough to see the draft at several lengths on its way.
    let every = Duration::from_millis(30);
    eventually_every(WAIT, every, "the answer to finish", async || {
        let now = state(client).await;
        let bot = last_bot(&now);
        if bot.contains("one live message per answer. Done.") {
            return Ok(());
        }
        progress_seen |= now["progress"].as_u64().unwrap_or(0) > 0;
        let answer_started = bot.contains("The gateway");
        if answer_started && partials.last() != Some(&bot.len()) {
            partials.push(bot.len());
            if partials.len() >= 2 && bot.len() > ANSWER.len() / 2 && !shot {
                browser.screenshot("web-chat-midstream").await;
                shot = true;
            }
        }
        Err(Later(move || format!("{now:#}")))
    })
    .await;
    assert!(
        partials.len() >= 2,
        "the draft should be seen growing, saw lengths {partials:?}"
    );
    assert!(
        partials.windows(2).all(|w| w[0] < w[1]),
        "the draft only grows: {partials:?}"
    );
    assert!(shot, "a mid-stream screenshot was taken");
    assert!(
        progress_seen,
        "the tool's progress line was shown while streaming"
    );
    // The final text and the removal of the progress lines may land in two frames.
    let done = wait_for(
        client,
        "progress lines cleared from the final answer",
        |s| s["progress"] == 0,
    )
    .await;
    assert_eq!(done["users"], json!(["How do drafts work?"]));
    assert_eq!(done["bots"].as_array().unwrap().len(), 1, "{done:#}");
    assert_eq!(done["copy"], 1, "the code block has a copy button");
}

#[tokio::test]
async fn the_page_streams_reloads_keeps_script_as_text_and_answers_buttons() {
    let app = spawn_with("", vec![Arc::new(LookupDocs)]).await;
    let Some(browser) = crate::browser::launch().await else {
        app.shutdown().await;
        return;
    };
    let client = &browser.client;
    app.llm
        .push(Reply::tool_call("lookup_docs", json!({"topic": "drafts"})))
        .push(Reply::paced(ANSWER, 10, Duration::from_millis(60)));
    client.goto(&Door::of(&app).link()).await.unwrap();
    wait_for(client, "the socket", |s| s["status"] == "connected").await;

    streams_a_growing_draft(&browser).await;

    client.refresh().await.unwrap();
    let reloaded = wait_for(client, "history after a reload", |s| {
        s["status"] == "connected" && s["bots"].as_array().is_some_and(|b| !b.is_empty())
    })
    .await;
    assert_eq!(reloaded["users"], json!(["How do drafts work?"]));
    assert!(last_bot(&reloaded).contains("one live message per answer. Done."));

    let attack = "<img src=x onerror=\"window.__pwned=1\"><script>window.__pwned=2</script>";
    type_and_send(client, attack).await;
    let echoed = wait_for(client, "the echoed attack", |s| {
        last_bot(s).starts_with("You said: <img src=x")
    })
    .await;
    assert_eq!(
        echoed["users"][1], attack,
        "the typed text is shown verbatim"
    );
    assert_eq!(
        echoed["injected"], 0,
        "no element was created from message text"
    );
    assert_eq!(echoed["pwned"], "undefined", "no injected script ran");

    let session = client
        .get_named_cookie("sb_web_session")
        .await
        .expect("the page set a session cookie");
    let prompt = Outbound {
        text: "Deploy to production?".into(),
        buttons: vec![
            Button {
                label: "Approve".into(),
                payload: "web-test:approve".into(),
            },
            Button {
                label: "Deny".into(),
                payload: "web-test:deny".into(),
            },
        ],
    };
    app.built("web")
        .send(&web_key(session.value()), &prompt)
        .await
        .unwrap();
    wait_for(client, "the buttons", |s| {
        s["buttons"] == json!(["Approve", "Deny"])
    })
    .await;
    client
        .find(Locator::XPath(
            "//div[@class='buttons']/button[text()='Approve']",
        ))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let answered = wait_for(client, "the button's answer", |s| {
        s["notices"] == json!(["This button is no longer active."])
    })
    .await;
    assert_eq!(answered["buttons"], json!([]), "the buttons are gone");

    browser.close().await;
    app.shutdown().await;
}

#[tokio::test]
async fn the_page_reconnects_after_a_restart_and_sends_what_was_typed_offline_once() {
    let mut app = spawn("").await;
    let Some(browser) = crate::browser::launch().await else {
        app.shutdown().await;
        return;
    };
    let client = &browser.client;
    client.goto(&Door::of(&app).link()).await.unwrap();
    wait_for(client, "the socket", |s| s["status"] == "connected").await;
    type_and_send(client, "first").await;
    wait_for(client, "the first answer", |s| {
        last_bot(s) == "You said: first"
    })
    .await;

    app.stop().await;
    wait_for(client, "the page to notice", |s| {
        s["status"]
            .as_str()
            .unwrap_or_default()
            .starts_with("reconnecting")
    })
    .await;
    type_and_send(client, "typed while offline").await;
    app.start().await;

    let caught_up = wait_for(client, "the offline message's answer", |s| {
        s["status"] == "connected" && last_bot(s) == "You said: typed while offline"
    })
    .await;
    assert_eq!(caught_up["users"], json!(["first", "typed while offline"]));
    assert_eq!(
        caught_up["bots"],
        json!(["You said: first", "You said: typed while offline"]),
        "history from before the restart, each answer once"
    );
    assert_eq!(app.llm.requests().len(), 2);

    browser.close().await;
    app.shutdown().await;
}
