//! The config file: the example works as shipped; mistakes are reported with file, line,
//! column and key; `${VAR}` and `SWITCHBOARD__…` overrides apply; secrets stay hidden.

use std::process::Command;

use switchboard::config::{self, ConfigError};

const EXAMPLE: &str = include_str!("../../config/switchboard.example.toml");

fn problems(text: &str, overrides: &[(&str, &str)]) -> String {
    let overrides: Vec<(String, String)> = overrides
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    match config::parse(text, "my.toml", &overrides) {
        Err(err @ ConfigError::Invalid { .. }) => err.to_string(),
        other => panic!("expected problems, got {other:?}"),
    }
}

#[test]
fn the_example_config_is_valid_as_shipped() {
    let config = config::parse(EXAMPLE, "example", &[]).unwrap();
    assert!(config.gateway.database_url.starts_with("sqlite:"));
    assert_eq!(config.agent.max_tool_iterations, 10);
    assert_eq!(config.streaming.chunk_min_chars, 80);
}

#[test]
fn an_unknown_key_is_reported_with_file_line_and_key() {
    let msg = problems("[gateway]\nlisten = \"127.0.0.1:1\"\nlisen = 2\n", &[]);
    assert!(msg.starts_with("my.toml:3:1: key `gateway.lisen`"), "{msg}");
    assert!(msg.contains("unknown field"), "{msg}");
}

#[test]
fn a_bad_type_is_reported_with_its_position() {
    let msg = problems("[streaming]\nchunk_min_chars = \"lots\"\n", &[]);
    assert!(
        msg.starts_with("my.toml:2:19: key `streaming.chunk_min_chars`"),
        "{msg}"
    );
}

#[test]
fn a_missing_environment_variable_names_the_key_and_the_variable() {
    let msg = problems(
        "[provider]\napi_key = \"${SWITCHBOARD_TEST_SURELY_UNSET}\"\n",
        &[],
    );
    assert!(
        msg.contains("key `provider.api_key`") && msg.contains("SWITCHBOARD_TEST_SURELY_UNSET"),
        "{msg}"
    );
}

#[test]
fn semantic_problems_are_all_listed() {
    let msg = problems(
        "[gateway]\nlisten = \"nowhere\"\ndatabase_url = \"mysql://x\"\n[agent]\nmax_tool_iterations = 0\n",
        &[],
    );
    for key in [
        "gateway.listen",
        "gateway.database_url",
        "agent.max_tool_iterations",
    ] {
        assert!(msg.contains(key), "{key} missing in {msg}");
    }
}

#[test]
fn environment_overrides_replace_keys_and_are_named_when_wrong() {
    let config = config::parse(
        EXAMPLE,
        "example",
        &[
            ("SWITCHBOARD__GATEWAY__LISTEN".into(), "0.0.0.0:9999".into()),
            ("SWITCHBOARD__AGENT__MAX_TOOL_ITERATIONS".into(), "4".into()),
        ],
    )
    .unwrap();
    assert_eq!(&*config.gateway.listen, "0.0.0.0:9999");
    assert_eq!(config.agent.max_tool_iterations, 4);
    let msg = problems(
        EXAMPLE,
        &[("SWITCHBOARD__STREAMING__CHUNK_MIN_CHARS", "many")],
    );
    assert!(
        msg.contains("SWITCHBOARD__STREAMING__CHUNK_MIN_CHARS"),
        "{msg}"
    );
}

#[test]
fn secrets_are_redacted_in_debug_output() {
    let text = "[provider]\napi_key = \"sk-test-not-a-real-key-0000\"\n";
    let config = config::parse(text, "t", &[]).unwrap();
    let debug = format!("{config:?}");
    assert!(!debug.contains("sk-test-not-a-real-key"), "{debug}");
    assert_eq!(
        config.provider.api_key.expose(),
        Some("sk-test-not-a-real-key-0000")
    );
}

#[test]
fn the_check_command_exits_zero_for_the_example_and_one_for_a_bad_file() {
    let bin = env!("CARGO_BIN_EXE_switchboard");
    let ok = Command::new(bin)
        .args(["check", "--config", "config/switchboard.example.toml"])
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[gateway]\nport = 1\n").unwrap();
    let out = Command::new(bin)
        .arg("check")
        .arg("--config")
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bad.toml:2:1: key `gateway.port`"),
        "{stderr}"
    );
}

#[test]
fn run_serves_health_and_stops_cleanly_on_sigterm() {
    let bin = env!("CARGO_BIN_EXE_switchboard");
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(bin)
        .args(["run", "--config", "config/switchboard.example.toml"])
        .env("SWITCHBOARD__GATEWAY__LISTEN", format!("127.0.0.1:{port}"))
        .env(
            "SWITCHBOARD__GATEWAY__DATABASE_URL",
            format!("sqlite://{}/sb.db", dir.path().display()),
        )
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let healthy = loop {
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            use std::io::{Read, Write};
            s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .unwrap();
            let mut out = String::new();
            let _ = s.read_to_string(&mut out);
            break out.starts_with("HTTP/1.1 200");
        }
        if std::time::Instant::now() > deadline {
            break false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let pid = child.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let status = child.wait().unwrap();
    assert!(healthy, "/healthz never answered 200");
    assert!(status.success(), "exit status after SIGTERM: {status:?}");
}
