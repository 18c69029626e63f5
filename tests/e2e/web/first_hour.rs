//! The first hour in a browser, as the README leads a newcomer through it: the real binary on
//! the example config, headless Chromium on its web chat opened by the token link
//! (`switchboard web-token`), the fake LLM behind `OPENAI_BASE_URL`. A question's answer streams in; a shell command waits for approval and
//! runs once the person presses Approve; an attached file reaches the model; `/rewind` puts
//! the workspace back. Each step leaves a screenshot in `target/artifacts/first-hour/`, and
//! every character the page shows must be drawable by a font the host has (asked of
//! fontconfig), so none of those screenshots holds a missing-glyph box.

use std::collections::BTreeSet;
use std::time::Duration;

use fantoccini::{Client, Locator};
use serde_json::{Value, json};
use switchboard_standins::files::csv;
use switchboard_standins::{FakeLlm, Reply};

use super::browser::type_and_send;
use super::browser_files::pick;
use super::first_run::{run_example, stop, web_link};
use crate::attach::request_text;
use crate::browser::Browser;
use crate::helpers::free_port;

/// What the page shows, read in one round trip. `text` is what is drawn (`innerText`: an
/// icon's `<title>` is not drawn, so it is not there).
const STATE_JS: &str = r#"
const texts = sel => Array.from(document.querySelectorAll(sel), e => e.textContent);
const last = Array.from(document.querySelectorAll('#log .msg.bot')).pop();
return {
  status: document.getElementById('status').textContent,
  bots: texts('#log .msg.bot .body'),
  buttons: last ? Array.from(last.querySelectorAll('.buttons button:not(:disabled)'), b => b.textContent) : [],
  last_icons: last ? Array.from(last.querySelectorAll('svg.icon title'), t => t.textContent) : [],
  chips: texts('#chips .chip span'),
  uploading: document.querySelectorAll('#chips .chip.uploading').length,
  text: document.body.innerText,
};
"#;

/// An answer long enough, and paced slowly enough, to be seen growing.
const ANSWER: &str = "I am **Switchboard**, a gateway between this chat and a language model.\n\n\
- I answer here, in one message that grows as I write it\n\
- I run commands in a sandboxed workspace, after you approve them\n\
- I read files you attach\n\nAsk me to do something.";

async fn state(client: &Client) -> Value {
    crate::browser::page_state(client, STATE_JS).await
}

/// Poll the page until `done` holds; returns the state that satisfied it.
async fn wait_for(client: &Client, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    crate::browser::wait_for(client, STATE_JS, what, done).await
}

fn last_bot(state: &Value) -> &str {
    state["bots"]
        .as_array()
        .and_then(|b| b.last())
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Whether some installed font has `c`, asked of fontconfig (which Chromium uses on Linux to
/// pick a font for each character); `None` when `fc-list` is not installed.
fn host_font_has(c: char) -> Option<bool> {
    let out = std::process::Command::new("fc-list")
        .arg(format!(":charset={:x}", c as u32))
        .arg("family")
        .output()
        .ok()?;
    Some(out.status.success() && !out.stdout.trim_ascii().is_empty())
}

/// The screenshot of `step`, after checking that the page draws nothing as a missing glyph.
async fn shot(browser: &Browser, step: &str) {
    let now = state(&browser.client).await;
    let shown: BTreeSet<char> = now["text"]
        .as_str()
        .unwrap_or_default()
        .chars()
        .filter(|c| !c.is_ascii() && !c.is_whitespace())
        .collect();
    let missing: Vec<char> = shown
        .into_iter()
        .filter(|&c| host_font_has(c) == Some(false))
        .collect();
    assert!(
        missing.is_empty(),
        "at {step} the page shows {missing:?}, which no font on this host has: {:#}",
        now["text"]
    );
    browser.screenshot(&format!("first-hour/{step}")).await;
}

/// Press the last message's button whose label contains `label`.
async fn press(client: &Client, label: &str) {
    let xpath = format!(
        "(//article[contains(@class,'bot')])[last()]//div[@class='buttons']\
         /button[contains(., '{label}')]"
    );
    client
        .find(Locator::XPath(&xpath))
        .await
        .unwrap_or_else(|e| panic!("no button {label:?}: {e}"))
        .click()
        .await
        .unwrap();
}

#[tokio::test]
async fn a_newcomer_asks_approves_a_command_attaches_a_file_and_rewinds_in_the_browser() {
    first_hour(tempfile::tempdir().unwrap()).await;
}

/// The first hour with the checkout's database and data directory in `dir` (the variant in
/// `first_hour_closed` puts `dir` under a directory the tools' user may not enter).
pub(super) async fn first_hour(dir: tempfile::TempDir) {
    let (port, llm) = (free_port(), FakeLlm::start().await);
    let env = [
        ("OPENAI_BASE_URL", llm.openai_url()),
        ("OPENAI_API_KEY", "test-key-not-real".to_owned()),
    ];
    let Some(browser) = crate::browser::launch().await else {
        return;
    };
    let mut gateway = run_example(dir.path(), port, &env).await;
    let client = &browser.client;
    // The page without its token is refused, even from this host; the link opens it and
    // leaves the address bar without the token.
    client
        .goto(&format!("http://127.0.0.1:{port}/"))
        .await
        .unwrap();
    let refused = crate::browser::page_state(client, "return document.body.innerText;").await;
    assert!(
        refused
            .as_str()
            .is_some_and(|t| t.contains("switchboard web-token")),
        "{refused:#}"
    );
    client.goto(&web_link(dir.path(), port)).await.unwrap();
    let shown = client.current_url().await.unwrap();
    assert_eq!(shown.as_str(), format!("http://127.0.0.1:{port}/"));
    wait_for(client, "the socket", |s| s["status"] == "connected").await;
    shot(&browser, "1-open").await;

    // A question: the answer is seen part-way, then whole.
    llm.push(Reply::paced(ANSWER, 8, Duration::from_millis(60)));
    type_and_send(client, "What can you do?").await;
    wait_for(client, "part of the answer", |s| {
        let bot = last_bot(s);
        bot.contains("Switchboard") && !bot.contains("Ask me to do something.")
    })
    .await;
    shot(&browser, "2-streaming").await;
    wait_for(client, "the whole answer", |s| {
        last_bot(s).contains("Ask me to do something.")
    })
    .await;

    // A shell command: the approval card, drawn icons, Approve once, the result.
    llm.push(Reply::tool_call(
        "shell",
        json!({"command": "echo 'hello from the sandbox' > greeting.txt && cat greeting.txt"}),
    ))
    .push(Reply::text(
        "Done: `greeting.txt` says *hello from the sandbox*.",
    ));
    type_and_send(client, "Write a greeting into a file").await;
    let card = wait_for(client, "the approval card", |s| {
        s["buttons"]
            .as_array()
            .is_some_and(|b| b.iter().any(|l| l == "Approve once"))
    })
    .await;
    assert!(
        last_bot(&card).contains("Approval needed") && last_bot(&card).contains("greeting.txt"),
        "{card:#}"
    );
    assert_eq!(
        card["last_icons"],
        json!(["🔐"]),
        "the card's lock is drawn, not a font's emoji"
    );
    shot(&browser, "3-approval").await;
    press(client, "Approve once").await;
    let ran = wait_for(client, "the command's result", |s| {
        last_bot(s).contains("greeting.txt says hello from the sandbox")
    })
    .await;
    shot(&browser, "4-approved").await;
    let workspace = dir.path().join("data/workspaces/web");
    let session = std::fs::read_dir(&workspace)
        .unwrap()
        .flatten()
        .next()
        .expect("the session's workspace")
        .path();
    assert_eq!(
        std::fs::read_to_string(session.join("greeting.txt")).unwrap(),
        "hello from the sandbox\n"
    );
    let requests = llm.requests();
    let after_tool = requests.last().unwrap().to_string();
    assert!(
        after_tool.contains("hello from the sandbox"),
        "the command's output went back to the model: {after_tool}"
    );
    assert!(
        ran["text"].as_str().unwrap().contains("Approved by you"),
        "the card says who approved: {ran:#}"
    );

    // A file: uploaded from the picker, sent with a question, read by the model.
    let files = tempfile::tempdir().unwrap();
    let figures = files.path().join("figures.csv");
    std::fs::write(&figures, csv()).unwrap();
    pick(client, &figures).await;
    wait_for(client, "the upload", |s| {
        s["uploading"] == 0 && s["chips"] == json!(["📎 figures.csv"])
    })
    .await;
    llm.push(Reply::text(
        "`figures.csv` is a small table of monthly figures.",
    ));
    type_and_send(client, "What is in this file?").await;
    wait_for(client, "the file's description", |s| {
        last_bot(s).contains("small table of monthly figures")
    })
    .await;
    let request = request_text(&llm.requests(), llm.requests().len() - 1);
    assert!(
        request.contains("figures.csv") && request.contains("inbox/"),
        "the file reached the model as a workspace file: {request}"
    );
    shot(&browser, "5-file").await;

    // /rewind: the checkpoint taken before the command, and the workspace put back.
    type_and_send(client, "/rewind").await;
    wait_for(client, "the checkpoints", |s| {
        last_bot(s).contains("Checkpoints")
            && s["buttons"].as_array().is_some_and(|b| !b.is_empty())
    })
    .await;
    shot(&browser, "6-rewind").await;
    press(client, "#0").await;
    wait_for(client, "the restore", |s| {
        s["text"]
            .as_str()
            .is_some_and(|t| t.contains("Restored the files to checkpoint #0"))
    })
    .await;
    shot(&browser, "7-restored").await;
    assert!(
        !session.join("greeting.txt").exists(),
        "the file the command made is gone after rewinding to before it"
    );

    browser.close().await;
    stop(&mut gateway);
}
