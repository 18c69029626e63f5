//! Budgets through the whole gateway on a manual clock: the turn that crosses a daily
//! budget stops with one line saying which and when it resets; the next message is refused
//! until the UTC day turns; `/usage` and `/metrics` show the figures.

use std::time::Duration;

use serde_json::json;
use switchboard::clock::Clock;
use switchboard_standins::{FakeChannel, Reply};

use crate::helpers::{TestApp, key, wait_inbox_idle, wait_transcript};

/// 2026-11-30 20:00:00 UTC: four hours before the budgets reset.
const EVENING_MS: i64 = 1_796_068_800_000;

const CONFIG: &str = "[agent]\nmax_tool_iterations = 100\n[memory]\nenabled = false\n[tools]\nenabled = [\"todo\"]\n[policy]\nmode = \"autonomous\"\n";

fn empty_plan() -> Reply {
    Reply::tool_call("todo", json!({"items": []}))
}

#[tokio::test]
async fn a_1000_token_daily_budget_stops_the_turn_refuses_until_midnight_and_shows_in_usage() {
    let config = format!("{CONFIG}[budgets]\nuser_tokens_per_day = 1000\n");
    let clock = Clock::manual(EVENING_MS);
    let app = TestApp::spawn_with_clock(FakeChannel::new("fake"), &config, clock.clone()).await;
    // The fake LLM reports 15 tokens a round-trip: the 67th crosses 1,000.
    for _ in 0..67 {
        app.llm.push(empty_plan());
    }
    let chat = key("budget");
    app.channel.say(&chat, "u1", "work a lot").await.unwrap();
    let t = wait_transcript(&app.channel, &chat, |t| t.len() == 1 && t[0].contains("🛑")).await;
    assert_eq!(
        t[0],
        "🛑 Stopped: your daily token budget (1000 tokens) is used up. It resets at 00:00 UTC, in 4 h 0 min."
    );
    wait_inbox_idle(&app.store()).await;
    assert_eq!(
        app.llm.requests().len(),
        67,
        "no step after the crossing one"
    );
    let history = app.store().history(&chat, 1000).await.unwrap();
    let last_result = history
        .iter()
        .rev()
        .find(|m| m.tool_call_id.is_some())
        .unwrap();
    assert!(
        last_result.content.contains("cancelled"),
        "the crossing response's call did not run: {}",
        last_result.content
    );

    clock.advance(Duration::from_secs(90 * 60));
    app.channel.say(&chat, "u1", "one more?").await.unwrap();
    let t = wait_transcript(&app.channel, &chat, |t| t.len() == 2).await;
    assert!(
        t[1].contains("your daily token budget") && t[1].ends_with("in 2 h 30 min."),
        "{t:?}"
    );
    assert_eq!(
        app.llm.requests().len(),
        67,
        "a refused message never reaches the model"
    );

    app.channel.say(&chat, "u1", "/usage").await.unwrap();
    let t = wait_transcript(&app.channel, &chat, |t| t.len() == 3).await;
    assert!(
        t[2].contains("you: 1005 / 1000 tokens, 66 tool runs"),
        "{}",
        t[2]
    );
    assert!(
        t[2].contains("this conversation: 1005 tokens, 66 tool runs"),
        "{}",
        t[2]
    );

    let url = format!("http://{}/metrics", app.gateway().addr());
    let metrics = reqwest::get(&url).await.unwrap().text().await.unwrap();
    assert!(
        metrics.contains("switchboard_llm_tokens_total{channel=\"fake\"} 1005"),
        "{metrics}"
    );
    assert!(metrics.contains("switchboard_tool_runs_total{channel=\"fake\"} 66"));
    assert!(
        metrics
            .contains("switchboard_budget_stops_total{budget=\"user_tokens\",channel=\"fake\"} 2")
    );

    // Past midnight UTC the budget is fresh again.
    clock.advance(Duration::from_secs(150 * 60));
    wait_inbox_idle(&app.store()).await;
    app.llm.push(Reply::text("A fresh day."));
    app.channel.say(&chat, "u1", "good morning").await.unwrap();
    wait_transcript(&app.channel, &chat, |t| {
        t.len() == 4 && t[3] == "A fresh day."
    })
    .await;
}

#[tokio::test]
async fn a_tool_run_budget_stops_before_the_next_step_and_survives_a_restart() {
    let config = format!("{CONFIG}[budgets]\nconversation_tool_runs_per_day = 2\n");
    let clock = Clock::manual(EVENING_MS);
    let mut app = TestApp::spawn_with_clock(FakeChannel::new("fake"), &config, clock).await;
    // Two steps are scripted: a third request would be answered by the fake's echo.
    app.llm.push(empty_plan()).push(empty_plan());
    let chat = key("runs");
    app.channel.say(&chat, "u1", "plan").await.unwrap();
    let t = wait_transcript(&app.channel, &chat, |t| t.len() == 1 && t[0].contains("🛑")).await;
    assert!(
        t[0].contains("this conversation's daily tool-run budget (2 tool runs)"),
        "{t:?}"
    );
    wait_inbox_idle(&app.store()).await;
    assert_eq!(app.llm.requests().len(), 2);
    app.restart().await;
    app.channel.say(&chat, "u1", "again").await.unwrap();
    let t = wait_transcript(&app.channel, &chat, |t| t.len() == 2).await;
    assert!(
        t[1].contains("tool-run budget"),
        "still refused after a restart: {t:?}"
    );
    // Another conversation of the same user has its own conversation budget.
    app.llm.push(Reply::text("Hello there."));
    let other = key("runs-2");
    app.channel.say(&other, "u1", "hi").await.unwrap();
    wait_transcript(&app.channel, &other, |t| t == ["Hello there."]).await;
}

/// Usage adds up per scope and day on both databases (one transaction for both scopes).
async fn usage_adds_up(store: &dyn switchboard::store::Store) {
    use switchboard::store::Used;
    let scopes = ["conversation:a".to_owned(), "user:fake:u1".to_owned()];
    let used = Used {
        tokens: 400,
        tool_runs: 2,
        ..Used::default()
    };
    store.add_usage(&scopes, 20_000, used).await.unwrap();
    store.add_usage(&scopes[1..], 20_000, used).await.unwrap();
    store.add_usage(&scopes[1..], 20_001, used).await.unwrap();
    assert_eq!(store.usage("conversation:a", 20_000).await.unwrap(), used);
    let user = store.usage("user:fake:u1", 20_000).await.unwrap();
    assert_eq!((user.tokens, user.tool_runs), (800, 4));
    assert_eq!(
        store.usage("user:fake:u1", 19_999).await.unwrap(),
        Used::default()
    );
}

#[tokio::test]
async fn budget_usage_adds_up_per_scope_and_day_on_sqlite_and_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/usage.db", dir.path().display());
    usage_adds_up(switchboard::store::connect(&url).await.unwrap().as_ref()).await;
    let Some(url) = crate::helpers::postgres_url().await else {
        return;
    };
    usage_adds_up(switchboard::store::connect(&url).await.unwrap().as_ref()).await;
    crate::helpers::drop_postgres(&url).await;
}
