//! The live plan: a scripted model writes a three-item checklist with the `todo` tool and
//! ticks it off; the draft shows the checklist changing at its top and the final answer
//! keeps it — on the fake channel and on the Telegram stand-in (native drafts, HTML).

use std::time::Duration;

use serde_json::{Value, json};
use switchboard_standins::telegram::{FakeUser, UserMessage};
use switchboard_standins::{FakeLlm, Op, Reply, eventually};

use crate::app::Table;
use crate::helpers::{TestApp, WAIT, key, wait_transcript};

const TOOLS: &str = "[tools]\nenabled = [\"shell\", \"todo\"]\n[policy]\nmode = \"autonomous\"\n";

/// A `todo` call with three steps in the given states, answered after `gap`: long enough
/// for the draft to show the previous state within the platform's edit rate.
fn plan(states: [&str; 3], gap: Duration) -> Reply {
    let items: Vec<Value> = ["Read the logs", "Find the bug", "Fix it"]
        .iter()
        .zip(states)
        .map(|(text, status)| json!({"text": text, "status": status}))
        .collect();
    slow(vec![("todo".into(), json!({ "items": items }))], gap)
}

fn slow(tool_calls: Vec<(String, Value)>, gap: Duration) -> Reply {
    Reply::Stream {
        text: String::new(),
        tool_calls,
        chunk_chars: 8,
        first_delay: gap,
        delay: Duration::ZERO,
        max_tokens: false,
    }
}

fn script(llm: &FakeLlm, gap: Duration) {
    let shell = ("shell".to_owned(), json!({"command": "echo reading"}));
    llm.push(plan(["in_progress", "pending", "pending"], gap))
        .push(slow(vec![shell], gap))
        .push(plan(["done", "in_progress", "pending"], gap))
        .push(plan(["done", "done", "in_progress"], gap))
        .push(plan(["done", "done", "done"], gap))
        .push(Reply::paced("Finished all three steps.", 8, gap));
}

const FIRST: &str = "📋 Plan (0/3 done)\n🔄 Read the logs\n⬜ Find the bug\n⬜ Fix it";
const MIDDLE: &str = "📋 Plan (1/3 done)\n✅ Read the logs\n🔄 Find the bug\n⬜ Fix it";
const LAST: &str = "📋 Plan (3/3 done)\n✅ Read the logs\n✅ Find the bug\n✅ Fix it";

/// `shown` has the states in order: first, middle, and (last) the finished list.
fn assert_ticked_off(shown: &[String]) {
    let at = |needle: &str| shown.iter().position(|t| t.starts_with(needle));
    let (first, middle) = (at(FIRST), at(MIDDLE));
    assert!(
        first.is_some() && middle.is_some() && first < middle,
        "the checklist changes at the top of the draft: {shown:#?}"
    );
}

#[tokio::test]
async fn a_three_item_plan_is_ticked_off_at_the_top_of_the_draft_and_kept_in_the_answer() {
    let app = TestApp::spawn_with(TOOLS).await;
    script(&app.llm, Duration::from_millis(250));
    let chat = key("plan");
    app.channel.say(&chat, "u1", "fix the bug").await.unwrap();
    let t = wait_transcript(&app.channel, &chat, |t| {
        t.last()
            .is_some_and(|m| m.ends_with("Finished all three steps."))
    })
    .await;
    assert_eq!(t, [format!("{LAST}\n\nFinished all three steps.")]);
    let shown: Vec<String> = app
        .channel
        .calls()
        .into_iter()
        .filter(|c| c.key == chat && matches!(c.op, Op::Send | Op::Edit))
        .map(|c| c.text)
        .collect();
    assert_ticked_off(&shown);
    assert!(
        !shown.iter().any(|t| t.contains("⏳ todo")),
        "plan calls are not progress lines"
    );
    let first = &app.llm.requests()[0];
    let todo = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "todo")
        .expect("the model is offered the tool");
    assert!(
        todo["function"]["description"]
            .as_str()
            .unwrap()
            .contains("checklist")
    );
    let system = first["messages"][0]["content"].as_str().unwrap();
    assert!(!system.contains("todo"), "the system prompt does not grow");
}

#[tokio::test]
async fn the_plan_is_drafted_and_kept_on_the_telegram_stand_in() {
    let app = TestApp::builder()
        .config(TOOLS)
        .telegram(Table::open())
        .start()
        .await;
    let (tg, llm) = (app.telegram(), &app.llm);
    // Telegram allows about one edit a second per chat.
    script(llm, Duration::from_millis(1300));
    tg.inject(&UserMessage::private(
        FakeUser::human(1001, "alice"),
        "fix it",
    ));
    let final_text = eventually(WAIT, "the final answer", async || {
        let messages = tg.messages(1001);
        let done = messages
            .iter()
            .find(|m| !m.deleted && m.text.contains("Finished all three steps."));
        done.map(|m| m.text.clone()).ok_or(messages)
    })
    .await;
    assert!(final_text.starts_with(LAST), "{final_text}");
    let shown: Vec<String> = tg
        .calls()
        .into_iter()
        .filter(|c| c.method == "sendMessage" || c.method == "editMessageText")
        .filter_map(|c| c.params["text"].as_str().map(str::to_owned))
        .collect();
    assert_ticked_off(&shown);
}
