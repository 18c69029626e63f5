//! `max_in_flight`: a provider's calls at once across conversations, the rest waiting their
//! turn, shown on `/metrics` and the dashboard while they wait, and every one answered.

use std::time::Duration;

use switchboard_standins::{FakeLlm, Reply, eventually};

use crate::helpers::{TestApp, key, wait_transcript};

/// The value of the gauge `name{provider="default"}` in a Prometheus text scrape.
fn gauge(text: &str, name: &str) -> Option<f64> {
    let lines = text.lines().map(|l| Ok(l.to_owned()));
    let parsed = prometheus_parse::Scrape::parse(lines).ok()?;
    parsed
        .samples
        .iter()
        .find(|s| s.metric == name && s.labels.get("provider") == Some("default"))
        .map(|s| match s.value {
            prometheus_parse::Value::Gauge(v) | prometheus_parse::Value::Untyped(v) => v,
            _ => f64::NAN,
        })
}

#[tokio::test]
async fn five_conversations_over_a_limit_of_two_wait_their_turn_visibly_and_all_are_answered() {
    let llm = FakeLlm::start().await;
    for _ in 0..5 {
        // Four chunks 150 ms apart: each call stays in flight for about 600 ms.
        llm.push(Reply::paced(
            "slow and steady answer",
            6,
            Duration::from_millis(150),
        ));
    }
    let app = TestApp::builder()
        .llm(llm)
        .edit(|config| config.provider.max_in_flight = 2)
        .start()
        .await;
    let chats: Vec<_> = (0..5).map(|n| key(&format!("bound-{n}"))).collect();
    for chat in &chats {
        app.channel.say(chat, "u1", "hello").await.unwrap();
    }

    let url = app.url("/metrics");
    let seen = eventually(
        Duration::from_secs(10),
        "two calls in flight and the rest waiting, on /metrics",
        async || {
            let text = reqwest::get(&url).await.unwrap().text().await.unwrap();
            let in_flight = gauge(&text, "switchboard_llm_calls_in_flight");
            let waiting = gauge(&text, "switchboard_llm_calls_waiting");
            match (in_flight, waiting) {
                (Some(2.0), Some(w)) if w >= 1.0 => Ok(w),
                other => Err(other),
            }
        },
    )
    .await;
    assert!(seen <= 3.0, "at most the three others wait: {seen}");
    let (status, page) = crate::admin::get(&app, "/").await;
    assert_eq!(status, 200);
    assert!(
        page.contains("<dt>LLM calls in flight (default, of 2)</dt>")
            && page.contains("<dt>LLM calls waiting (default)</dt>"),
        "{page}"
    );

    for chat in &chats {
        wait_transcript(&app.channel, chat, |t| {
            t.last().is_some_and(|l| l == "slow and steady answer")
        })
        .await;
    }
    assert_eq!(
        app.llm.max_in_flight(),
        2,
        "never more than two at the endpoint"
    );
    let text = reqwest::get(&url).await.unwrap().text().await.unwrap();
    assert_eq!(gauge(&text, "switchboard_llm_calls_in_flight"), Some(0.0));
    assert_eq!(gauge(&text, "switchboard_llm_calls_waiting"), Some(0.0));
}
