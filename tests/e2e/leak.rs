//! No credential leaves: the real binary, talking to the Slack and LLM stand-ins, reads a file
//! full of secrets with a tool and the model repeats them; the secrets must appear in none of
//! chat, history, audit log or the process's own log output.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;
use switchboard::store;
use switchboard_channel::ConversationKey;
use switchboard_standins::slack::{
    FAKE_SIGNING_SECRET, FakeSlack, SignedRequest, SlackMessage, dm_event,
};
use switchboard_standins::{FakeLlm, Later, Reply, eventually};

use crate::helpers::{KilledOnDrop, WAIT, free_port};

/// Shapes the scrubber knows, none of them real credentials.
const PLANTED: &[&str] = &[
    "sk-proj-TESTONLYabcdefghijklmnopqrstuv",
    "ghp_TESTONLYabcdefghijklmnopqrstuvwxyz0123",
    "xoxb-9999999999-TESTONLYfake",
];
/// The configured bot token: an exact value the scrubber must know from the config.
const BOT_TOKEN: &str = "xoxb-test-fake-configured-value";

#[tokio::test]
async fn a_secret_read_by_a_tool_reaches_neither_chat_history_audit_nor_logs() {
    let slack = FakeSlack::start_with_token(BOT_TOKEN).await;
    let llm = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let config = leak_config(port, dir.path(), &llm.openai_url(), &slack.api_url());
    let config_path = dir.path().join("leak.toml");
    std::fs::write(&config_path, config).unwrap();
    let msg = SlackMessage {
        text: "what is in secrets.env?",
        ..SlackMessage::default()
    };
    let planted = plant_secrets(dir.path(), &msg);
    llm.push(Reply::tool_call(
        "file_read",
        json!({"path": "secrets.env"}),
    ))
    .push(Reply::text(format!("The file contains:\n{planted}")));

    let log = dir.path().join("gateway.log");
    let mut child = KilledOnDrop(spawn_gateway(&config_path, &log));
    deliver_and_wait(&slack, port, &msg, &log).await;
    tokio::time::sleep(Duration::from_millis(300)).await; // let the turn commit
    Command::new("kill")
        .args(["-TERM", &child.0.id().to_string()])
        .status()
        .unwrap();
    child.0.wait().unwrap();
    let logs = std::fs::read_to_string(&log).unwrap();
    assert!(
        logs.contains("answer delivered"),
        "debug logs were captured:\n{logs}"
    );

    let db = store::connect(&format!("sqlite://{}/leak.db", dir.path().display()))
        .await
        .unwrap();
    let key = ConversationKey::new("slack", msg.channel);
    let history = format!("{:?}", db.history(&key, 100).await.unwrap());
    let audit = format!("{:?}", db.audit(None, 100).await.unwrap());
    let chat = format!("{:?}", slack.calls());
    assert!(
        audit.contains("file_read")
            && history.contains("[REDACTED]")
            && chat.contains("[REDACTED]")
    );
    assert_no_secret_in(&[
        ("chat", &chat),
        ("history", &history),
        ("audit", &audit),
        ("logs", &logs),
    ]);
}

/// The gateway's config: one Slack channel and the file tool, secrets through the env.
fn leak_config(port: u16, dir: &Path, llm: &str, api: &str) -> String {
    format!(
        r#"
[gateway]
listen = "127.0.0.1:{port}"
database_url = "sqlite://{d}/leak.db"
data_dir = "{d}"
[provider]
base_url = "{llm}"
api_key = "test-key-not-real"
[tools]
enabled = ["file_read"]
[channels.slack]
kind = "slack"
bot_token = "${{LEAK_TEST_BOT_TOKEN}}"
signing_secret = "{FAKE_SIGNING_SECRET}"
api_url = "{api}"
allowed_users = ["*"]
dm_policy = "open"
group_policy = "open"
"#,
        d = dir.display(),
    )
}

/// Write `secrets.env` into the workspace of `msg`'s conversation; returns its text.
fn plant_secrets(dir: &Path, msg: &SlackMessage<'_>) -> String {
    let workspace = dir.join("workspaces/slack").join(msg.channel);
    std::fs::create_dir_all(&workspace).unwrap();
    let planted = format!(
        "OPENAI_API_KEY={}\nGITHUB={}\nSLACK={}\nBOT={BOT_TOKEN}\n",
        PLANTED[0], PLANTED[1], PLANTED[2]
    );
    std::fs::write(workspace.join("secrets.env"), &planted).unwrap();
    planted
}

/// Send `msg` until the gateway (still starting) accepts it, then wait for the answer; the
/// gateway's `log` is shown if either does not come.
async fn deliver_and_wait(slack: &FakeSlack, port: u16, msg: &SlackMessage<'_>, log: &Path) {
    let url = format!("http://127.0.0.1:{port}/slack/slack/events");
    let client = reqwest::Client::new();
    let logs = move || std::fs::read_to_string(log).unwrap_or_default();
    // One allowance for both waits.
    let waiting = std::time::Instant::now();
    eventually(WAIT, "the gateway to accept the event", async || {
        let sent = SignedRequest::event(&dm_event(msg))
            .build(&client, &url, FAKE_SIGNING_SECRET)
            .send()
            .await;
        if sent.is_ok_and(|r| r.status() == 200) {
            Ok(())
        } else {
            Err(Later(logs))
        }
    })
    .await;
    let left = WAIT.saturating_sub(waiting.elapsed());
    eventually(left, "the answer", async || {
        let answered = slack
            .messages(msg.channel)
            .iter()
            .any(|m| m.text.contains("The file contains"));
        if answered { Ok(()) } else { Err(Later(logs)) }
    })
    .await;
}

/// No planted secret (past its kept prefix) appears in any of `places`.
fn assert_no_secret_in(places: &[(&str, &String)]) {
    for secret in PLANTED.iter().chain([&BOT_TOKEN]) {
        for (place, text) in places {
            let body = &secret[6..]; // past the kept prefix
            assert!(!text.contains(body), "{secret} leaked into {place}");
        }
    }
}

/// The real binary on `config`, debug logs written to `log`, the bot token only in its
/// environment.
fn spawn_gateway(config: &Path, log: &Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["run", "--config"])
        .arg(config)
        .env("LEAK_TEST_BOT_TOKEN", BOT_TOKEN)
        .env("RUST_LOG", "debug")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap()
}
