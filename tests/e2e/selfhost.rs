//! Self-hosting checks: no OpenSSL in the binary, the Dockerfile only copies what exists and
//! runs real subcommands, `/metrics` parses and moves (to loopback or with its token, and
//! with no label the model made up), and `switchboard healthcheck` follows a channel's
//! readiness.

use std::process::Command;
use std::time::Duration;

use serde_json::json;
use switchboard::config::{Config, Secret};
use switchboard_standins::slack::{Failure, FakeSlack};
use switchboard_standins::{FakeLlm, Reply};

use crate::app::Table;
use crate::helpers::{TestApp, WAIT, free_port, key, wait_transcript};

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
    let deadline = std::time::Instant::now() + WAIT;
    while check().await != Some(0) {
        assert!(std::time::Instant::now() < deadline, "never became ready");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
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

/// `run` turns glibc's per-thread caches off (`switchboard::allocator`): the process executes
/// itself once, keeping its pid, with `glibc.malloc.tcache_count=0` added to the operator's
/// `GLIBC_TUNABLES` (as `/proc` shows the environment it was executed with). An operator who
/// chose a cache size keeps it, and the process is not executed again.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[tokio::test]
async fn run_starts_with_glibcs_thread_caches_off_unless_the_operator_chose_a_size() {
    let llm = FakeLlm::start().await;
    for (given, reexecuted) in [
        ("glibc.malloc.arena_max=4", true),
        ("glibc.malloc.tcache_count=2", false),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let config = dir.path().join("tuned.toml");
        std::fs::write(
            &config,
            format!(
                "[gateway]\nlisten = \"127.0.0.1:{port}\"\ndatabase_url = \"sqlite://{d}/tuned.db\"\n\
                 data_dir = \"{d}\"\n[provider]\nbase_url = \"{llm}\"\napi_key = \"test-key-not-real\"\n",
                d = dir.path().display(),
                llm = llm.openai_url(),
            ),
        )
        .unwrap();
        let mut child = tokio::process::Command::new(BIN)
            .args(["run", "--config"])
            .arg(&config)
            .env("GLIBC_TUNABLES", given)
            .env_remove("SWITCHBOARD_OPERATOR_GLIBC_TUNABLES")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let pid = child.id().unwrap();
        let health = format!("http://127.0.0.1:{port}/healthz");
        let deadline = std::time::Instant::now() + WAIT;
        while !reqwest::get(&health)
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            assert!(std::time::Instant::now() < deadline, "never became healthy");
            assert!(child.try_wait().unwrap().is_none(), "the gateway exited");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // The process serving is the one spawned (an exec keeps the pid), started with this
        // environment. glibc, reading its tunables, ends each value in place with a NUL, so
        // the tunables are looked for in the whole of it.
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
        let environ = String::from_utf8_lossy(&environ).into_owned();
        child.kill().await.unwrap();
        let has = |text: &str| environ.contains(text);
        let marker = "SWITCHBOARD_OPERATOR_GLIBC_TUNABLES=";
        assert!(has(&format!("GLIBC_TUNABLES={given}")), "{environ:?}");
        if reexecuted {
            assert!(has("glibc.malloc.tcache_count=0"), "{environ:?}");
            assert!(has(&format!("{marker}{given}\0")), "{environ:?}");
        } else {
            assert!(!has("glibc.malloc.tcache_count=0"), "{environ:?}");
            assert!(!has(marker), "executed again over the operator's own size");
        }
    }
}
