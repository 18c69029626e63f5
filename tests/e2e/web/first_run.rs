//! A first run as the README describes it: the real binary on the example config with no
//! API key in the environment. The start-up log has one WARN naming the variable to set,
//! `check` says the same and still exits 0, and a web chat message gets the "no API key"
//! line with a trace id.

use std::io::{Read, Write};
use std::process::{Command, Stdio};

use serde_json::json;
use switchboard_standins::{FakeLlm, Reply, eventually};

use super::{Door, connect, json_where, new_session, press_first_button, say};
use crate::helpers::{WAIT, free_port};

const BIN: &str = env!("CARGO_BIN_EXE_switchboard");
pub(super) const EXAMPLE: &str = "config/switchboard.example.toml";
/// Variables a developer's shell may hold that would make this not a first run.
const UNSET: [&str; 8] = [
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "SWITCHBOARD_MODEL",
    "TELEGRAM_BOT_TOKEN",
    "DISCORD_BOT_TOKEN",
    "SLACK_BOT_TOKEN",
    "SWITCHBOARD_WEB_TOKEN",
    "SWITCHBOARD_CONFIG",
];

/// `switchboard <what> --config <example>` with the data directory, database and port
/// [`run_example`] gives it.
pub(super) fn example_command(what: &str, dir: &std::path::Path, port: u16) -> Command {
    let mut command = switchboard();
    command
        .args([what, "--config", EXAMPLE])
        .env("SWITCHBOARD__GATEWAY__LISTEN", format!("127.0.0.1:{port}"))
        .env(
            "SWITCHBOARD__GATEWAY__DATABASE_URL",
            format!("sqlite://{}/sb.db", dir.display()),
        )
        .env("SWITCHBOARD__GATEWAY__DATA_DIR", dir.join("data"));
    command
}

pub(super) fn switchboard() -> Command {
    switchboard_env(Command::new(BIN))
}

/// `command` without the variables that would make this not a first run.
pub(super) fn switchboard_env(mut command: Command) -> Command {
    for name in UNSET {
        command.env_remove(name);
    }
    command
}

#[test]
fn check_on_the_example_without_a_key_warns_and_exits_zero() {
    let out = switchboard()
        .args(["check", "--config", EXAMPLE])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let warning = stdout
        .lines()
        .find(|l| l.starts_with("warning: [provider]"))
        .unwrap_or_else(|| panic!("no provider warning in {stdout}"));
    assert!(warning.contains("api.openai.com"), "{warning}");
    assert!(warning.contains("set OPENAI_API_KEY"), "{warning}");
}

/// Wait until the gateway on `port` answers `/healthz` with 200.
async fn healthy(port: u16) {
    eventually(WAIT, "/healthz to answer 200", async || {
        let answer = get(port, "/healthz");
        if answer.as_ref().is_some_and(|s| s.contains(" 200")) {
            Ok(())
        } else {
            Err(answer)
        }
    })
    .await;
}

/// GET `path` on 127.0.0.1:`port`; the status line, or `None` while nothing listens.
fn get(port: u16, path: &str) -> Option<String> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    s.write_all(request.as_bytes()).ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    out.lines().next().map(str::to_owned)
}

#[tokio::test]
async fn a_first_run_without_a_key_warns_once_and_the_web_chat_says_no_api_key() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let log_path = dir.path().join("stderr.log");
    let mut child = switchboard()
        .args(["run", "--config", EXAMPLE])
        .env("SWITCHBOARD__GATEWAY__LISTEN", format!("127.0.0.1:{port}"))
        .env(
            "SWITCHBOARD__GATEWAY__DATABASE_URL",
            format!("sqlite://{}/sb.db", dir.path().display()),
        )
        .env("SWITCHBOARD__GATEWAY__DATA_DIR", dir.path().join("data"))
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .map(Running)
        .unwrap();
    healthy(port).await;

    let addr = format!("127.0.0.1:{port}").parse().unwrap();
    let door = Door::at(addr, &dir.path().join("data"));
    let (mut ws, _) = connect(&door, &new_session()).await;
    say(&mut ws, "first", "hello?").await;
    let answer = json_where(&mut ws, |f| {
        f["message"]["role"] == "bot"
            && f["message"]["html"]
                .as_str()
                .is_some_and(|h| h.contains("no API key is set"))
    })
    .await;
    let html = answer["message"]["html"].as_str().unwrap();
    assert!(html.contains("(trace "), "{html}");

    stop(&mut child);
    let log = std::fs::read_to_string(&log_path).unwrap();
    let warnings: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("WARN") && l.contains("api_key is empty"))
        .collect();
    assert_eq!(warnings.len(), 1, "{log}");
    assert!(warnings[0].contains("OPENAI_API_KEY"), "{}", warnings[0]);
    assert!(
        log.contains("no API key for the LLM API"),
        "the turn's error is logged too: {log}"
    );
}

/// The real binary started by [`run_example`]: killed when dropped, so a test that fails
/// part-way leaves no gateway behind (holding its port, its files, or a build's lock).
pub(super) struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        // Gone already after `stop`; both calls then just report that.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Stop the gateway as an operator would (SIGTERM) and wait for it to exit.
pub(super) fn stop(gateway: &mut Running) {
    Command::new("kill")
        .args(["-TERM", &gateway.0.id().to_string()])
        .status()
        .unwrap();
    gateway.0.wait().unwrap();
}

/// The web chat's link as the README has a newcomer get it: `switchboard web-token` on the
/// same config and overrides as [`run_example`].
pub(super) fn web_link(dir: &std::path::Path, port: u16) -> String {
    let out = example_command("web-token", dir, port).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let link = stdout.trim().to_owned();
    assert!(
        link.starts_with(&format!("http://127.0.0.1:{port}/?token=")),
        "{link}"
    );
    link
}

/// Start the real binary on the example config with `env` set; waits for `/healthz`.
pub(super) async fn run_example(
    dir: &std::path::Path,
    port: u16,
    env: &[(&str, String)],
) -> Running {
    let mut command = switchboard();
    command
        .args(["run", "--config", EXAMPLE])
        .env("SWITCHBOARD__GATEWAY__LISTEN", format!("127.0.0.1:{port}"))
        .env(
            "SWITCHBOARD__GATEWAY__DATABASE_URL",
            format!("sqlite://{}/sb.db", dir.display()),
        )
        .env("SWITCHBOARD__GATEWAY__DATA_DIR", dir.join("data"))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    let gateway = Running(command.spawn().unwrap());
    healthy(port).await;
    gateway
}

#[tokio::test]
async fn on_the_example_config_a_shell_command_runs_once_the_person_in_the_web_chat_approves() {
    let (dir, port, llm) = (
        tempfile::tempdir().unwrap(),
        free_port(),
        FakeLlm::start().await,
    );
    llm.push(Reply::tool_call(
        "shell",
        json!({"command": "touch made.txt"}),
    ))
    .push(Reply::text("Made it."));
    let env = [
        ("OPENAI_BASE_URL", llm.openai_url()),
        ("OPENAI_API_KEY", "test-key-not-real".to_owned()),
    ];
    let mut child = run_example(dir.path(), port, &env).await;
    let session = new_session();
    let addr = format!("127.0.0.1:{port}").parse().unwrap();
    let (mut ws, _) = connect(&Door::at(addr, &dir.path().join("data")), &session).await;
    say(&mut ws, "ask", "make a file").await;
    press_first_button(&mut ws).await;
    json_where(&mut ws, |f| {
        f["message"]["html"]
            .as_str()
            .is_some_and(|h| h.contains("Made it."))
    })
    .await;
    let made = dir
        .path()
        .join("data/workspaces/web")
        .join(&session)
        .join("made.txt");
    assert!(
        made.exists(),
        "the approved command ran in the session's workspace"
    );

    stop(&mut child);
}
