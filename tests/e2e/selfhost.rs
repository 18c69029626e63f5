//! Self-hosting checks: no OpenSSL in the binary, the Dockerfile only copies what exists and
//! runs real subcommands, `/metrics` parses and moves (to loopback or with its token, and
//! with no label the model made up), and `switchboard healthcheck` follows a channel's
//! readiness.

use std::process::Command;
use std::time::Duration;

use serde_json::json;
use switchboard::config::{Config, Secret};
use switchboard_standins::slack::{Failure, FakeSlack};
use switchboard_standins::{Reply, eventually_every};

use crate::app::Table;
use crate::helpers::{TestApp, WAIT, key, wait_transcript};

const BIN: &str = env!("CARGO_BIN_EXE_switchboard");

#[test]
fn the_binary_links_no_openssl() {
    let out = Command::new("ldd")
        .arg(BIN)
        .output()
        .expect("ldd is available");
    let libs = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{libs}");
    assert!(
        !libs.contains("libssl") && !libs.contains("libcrypto"),
        "{libs}"
    );
}

#[test]
fn the_dockerfile_copies_existing_paths_and_runs_real_subcommands() {
    let dockerfile = std::fs::read_to_string("Dockerfile").unwrap();
    let mut copies = 0;
    for line in dockerfile.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("COPY ") {
            if rest.starts_with("--from") || rest.starts_with(". ") {
                continue;
            }
            let source = rest.split_whitespace().next().unwrap();
            assert!(
                std::path::Path::new(source).exists(),
                "Dockerfile copies missing {source}"
            );
            copies += 1;
        }
    }
    assert!(copies >= 1);
    for sub in ["run", "healthcheck"] {
        assert!(dockerfile.contains(&format!("\"{sub}\"")), "{sub} not used");
        let help = Command::new(BIN).args([sub, "--help"]).output().unwrap();
        assert!(
            help.status.success(),
            "`switchboard {sub}` is not a subcommand"
        );
    }
    for ignored in ["target/", ".env"] {
        assert!(
            std::fs::read_to_string(".dockerignore")
                .unwrap()
                .contains(ignored)
        );
    }
}

#[tokio::test]
async fn metrics_parse_as_prometheus_text_and_counters_move_with_traffic() {
    let app = TestApp::spawn().await;
    let url = format!("http://{}/metrics", app.gateway().addr());
    let scrape = || async { reqwest::get(&url).await.unwrap().text().await.unwrap() };
    let value = |text: &str, name: &str| -> f64 {
        let lines = text.lines().map(|l| Ok(l.to_owned()));
        let parsed = prometheus_parse::Scrape::parse(lines).expect("valid Prometheus text");
        parsed
            .samples
            .iter()
            .filter(|s| s.metric == name)
            .map(|s| match s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                _ => 0.0,
            })
            .sum()
    };
    let before = scrape().await;
    assert_eq!(value(&before, "switchboard_turns_total"), 0.0);
    let chat = key("metrics");
    app.channel.say(&chat, "u1", "count me").await.unwrap();
    app.channel
        .say_with_id(&chat, "u1", "dup", "fixed-id")
        .await
        .unwrap();
    app.channel
        .say_with_id(&chat, "u1", "dup", "fixed-id")
        .await
        .unwrap();
    wait_transcript(&app.channel, &chat, |t| {
        t.len() == 2 && t[1] == "You said: dup"
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let after = scrape().await;
    assert_eq!(
        value(&after, "switchboard_inbound_events_total"),
        3.0,
        "{after}"
    );
    assert!(
        value(&after, "switchboard_turns_total") >= 4.0,
        "started + finished for two turns: {after}"
    );
    assert!(value(&after, "switchboard_draft_operations_total") >= 2.0);
    assert!(after.contains("outcome=\"duplicate\""));
}

#[tokio::test]
async fn healthcheck_fails_while_a_channel_cannot_receive_and_passes_once_it_can() {
    let slack = FakeSlack::start().await;
    slack.fail_next(3, Failure::ServerError);
    let builder = TestApp::builder().slack_standin(slack);
    let mut app = builder.slack(Table::open()).start().await;
    let url = app.url("/readyz");
    // tokio's Command: the gateway shares this test's runtime and must keep serving meanwhile.
    let check = || async {
        tokio::process::Command::new(BIN)
            .args(["healthcheck", "--url", &url])
            .output()
            .await
            .unwrap()
            .status
            .code()
    };
    assert_eq!(
        check().await,
        Some(1),
        "Slack's auth.test is failing, so the gateway is not ready"
    );
    // Each check runs the binary, so a slower pace.
    let every = Duration::from_millis(200);
    eventually_every(
        WAIT,
        every,
        "`healthcheck` to pass",
        async || match check().await {
            Some(0) => Ok(()),
            code => Err(code),
        },
    )
    .await;
    app.stop().await;
    assert_eq!(check().await, Some(1), "a stopped gateway is not ready");
}

#[tokio::test]
async fn with_a_metrics_token_a_scrape_needs_it_even_from_loopback() {
    let token = |c: &mut Config| c.gateway.metrics_token = Secret::new("scrape-token-123");
    let app = TestApp::builder().edit(token).start().await;
    let url = app.url("/metrics");
    let client = reqwest::Client::new();
    let bare = client.get(&url).send().await.unwrap();
    assert_eq!(bare.status().as_u16(), 403);
    let wrong = client.get(&url).bearer_auth("nope").send().await.unwrap();
    assert_eq!(wrong.status().as_u16(), 403);
    let scraped = client
        .get(&url)
        .bearer_auth("scrape-token-123")
        .send()
        .await
        .unwrap();
    assert_eq!(scraped.status().as_u16(), 200);
    assert!(scraped.text().await.unwrap().contains("switchboard_"));
    app.shutdown().await;
}

#[tokio::test]
async fn a_tool_name_the_model_invents_is_counted_as_other() {
    let app = TestApp::spawn_with("[policy]\nmode = \"autonomous\"\n").await;
    app.llm
        .push(Reply::tool_call("made_up_tool_7f3a", json!({})))
        .push(Reply::text("no such tool"));
    let chat = key("invented");
    app.channel
        .say(&chat, "u1", "use your secret tool")
        .await
        .unwrap();
    wait_transcript(&app.channel, &chat, |t| {
        t.last().is_some_and(|m| m == "no such tool")
    })
    .await;
    let url = format!("http://{}/metrics", app.gateway().addr());
    let text = reqwest::get(&url).await.unwrap().text().await.unwrap();
    assert!(!text.contains("made_up_tool_7f3a"), "{text}");
    assert!(
        text.contains("switchboard_tool_calls_total{decision="),
        "{text}"
    );
    assert!(text.contains("tool=\"other\""), "{text}");
}
