//! The config file: the example works as shipped; mistakes are reported with file, line,
//! column and key; `${VAR}` and `SWITCHBOARD__…` overrides apply; secrets stay hidden.

use std::process::Command;
use std::time::Duration;

use switchboard::config::{self, ConfigError};
use switchboard_standins::eventually_blocking;

use crate::helpers::{KilledOnDrop, free_port};

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
fn a_bad_value_in_a_list_or_a_list_of_tables_is_named_with_its_index() {
    let msg = problems(
        "[mcp.servers.files]\ncommand = \"mcp-files\"\nargs = [\"--root\", 7]\n",
        &[],
    );
    assert!(
        msg.starts_with("my.toml:3:19: key `mcp.servers.files.args[1]`"),
        "{msg}"
    );
    let msg = problems(
        "[[schedules]]\nname = \"a\"\ncron = \"0 8 * * *\"\nchannel = \"s\"\nchat = \"C1\"\n\
         prompt = \"p\"\n[[schedules]]\nname = \"b\"\ncron = 8\n",
        &[],
    );
    assert!(
        msg.starts_with("my.toml:9:8: key `schedules[1].cron`"),
        "{msg}"
    );
    // A missing key names its table, at the table's header.
    let msg = problems("[[schedules]]\nname = \"a\"\n", &[]);
    assert!(
        msg.starts_with("my.toml:1:1: key `schedules[0]`: missing field"),
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
            // A configured web chat token (without one, a public address gets a generated one).
            (
                "SWITCHBOARD__CHANNELS__WEB__ACCESS_TOKEN".into(),
                "tok-test".into(),
            ),
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
    // A public address without the web chat's token loads: the gateway generates one.
    let public = [("SWITCHBOARD__GATEWAY__LISTEN".into(), "0.0.0.0:9999".into())];
    assert!(config::parse(EXAMPLE, "example", &public).is_ok());
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
        .env_remove("DISCORD_BOT_TOKEN")
        .env_remove("SLACK_BOT_TOKEN")
        .env_remove("SIGNAL_ACCOUNT")
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let stdout = String::from_utf8_lossy(&ok.stdout);
    assert!(
        stdout.contains(
            "skipped at run: discord (token unset), email (imap.password unset), matrix (password unset), signal (account unset), slack (bot_token unset)"
        ),
        "{stdout}"
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
    let port = free_port();
    let child = Command::new(bin)
        .args(["run", "--config", "config/switchboard.example.toml"])
        .env("SWITCHBOARD__GATEWAY__LISTEN", format!("127.0.0.1:{port}"))
        .env(
            "SWITCHBOARD__GATEWAY__DATABASE_URL",
            format!("sqlite://{}/sb.db", dir.path().display()),
        )
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut child = KilledOnDrop(child);
    let answer = eventually_blocking(Duration::from_secs(20), "the gateway to listen", || {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port))?;
        s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        Ok::<_, std::io::Error>(out)
    });
    let pid = child.0.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let status = child.0.wait().unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "/healthz: {answer}");
    assert!(status.success(), "exit status after SIGTERM: {status:?}");
}

/// A Telegram webhook without its secret, and two web chats on one path.
const TWO_PROBLEMS: &str = "[gateway]\nlisten = \"127.0.0.1:0\"\n\n\
[channels.tg]\nkind = \"telegram\"\ntoken = \"123:test-not-real\"\nmode = \"webhook\"\n\
webhook_url = \"https://bot.example.com/telegram/tg\"\n\n\
[channels.web1]\nkind = \"web\"\npath = \"/chat\"\n\n\
[channels.web2]\nkind = \"web\"\npath = \"/chat\"\n";

fn check(text: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    std::fs::write(&file, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .arg("check")
        .arg("--config")
        .arg(&file)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn check_names_file_line_and_key_of_a_misspelt_telegram_mode() {
    let (code, stderr) = check(
        "[channels.tg]\nkind = \"telegram\"\ntoken = \"123:test-not-real\"\nmode = \"pollin\"\n",
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("bad.toml:4:8: key `channels.tg.mode`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("pollin") && stderr.contains("webhook"),
        "{stderr}"
    );
}

#[test]
fn check_names_file_line_and_key_of_a_webhook_without_secret_and_a_duplicate_web_path() {
    let (code, stderr) = check(TWO_PROBLEMS);
    assert_eq!(code, Some(1), "{stderr}");
    // The secret is absent, so its table's header (line 4) is where to add it.
    assert!(
        stderr.contains("bad.toml:4:1: key `channels.tg.secret_token`: is required"),
        "{stderr}"
    );
    assert!(
        stderr.contains("bad.toml:16:1: key `channels.web2.path`: route /chat/ is already served by channel `web1`"),
        "{stderr}"
    );
}

/// Two WhatsApp numbers of one app on one callback path, and a web chat claiming it too.
const SHARED_WHATSAPP_PATH: &str = "[gateway]\nlisten = \"127.0.0.1:0\"\n\n\
[channels.wa1]\nkind = \"whatsapp\"\nphone_number_id = \"1111\"\naccess_token = \"t\"\n\
app_secret = \"s\"\nverify_token = \"v\"\nwebhook_path = \"/whatsapp\"\n\n\
[channels.wa2]\nkind = \"whatsapp\"\nphone_number_id = \"2222\"\naccess_token = \"t\"\n\
app_secret = \"s\"\nverify_token = \"v\"\nwebhook_path = \"/whatsapp\"\n\n\
[channels.web]\nkind = \"web\"\npath = \"/whatsapp\"\n";

#[test]
fn whatsapp_channels_may_share_a_webhook_path_but_another_kind_may_not() {
    let (code, stderr) = check(SHARED_WHATSAPP_PATH);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(!stderr.contains("channels.wa2"), "{stderr}");
    assert!(
        stderr.contains(
            "key `channels.web.path`: route /whatsapp is already served by channel `wa1`"
        ),
        "{stderr}"
    );
    let without_web = SHARED_WHATSAPP_PATH.split("[channels.web]").next().unwrap();
    let (code, stderr) = check(without_web);
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn run_refuses_two_web_channels_on_one_path_with_the_message_instead_of_panicking() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dup.toml");
    let text = TWO_PROBLEMS.replace(
        "mode = \"webhook\"\n",
        "mode = \"webhook\"\nsecret_token = \"s3cret\"\n",
    );
    std::fs::write(&file, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .arg("run")
        .arg("--config")
        .arg(&file)
        .env(
            "SWITCHBOARD__GATEWAY__DATABASE_URL",
            format!("sqlite://{}/sb.db", dir.path().display()),
        )
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("key `channels.web2.path`: route /chat/ is already served"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_channel_secret_from_a_missing_variable_names_the_key_and_its_line() {
    let msg = problems(
        "[channels.tg]\nkind = \"telegram\"\ntoken = \"${SWITCHBOARD_TEST_SURELY_UNSET}\"\n",
        &[],
    );
    assert!(
        msg.starts_with("my.toml:3:9: key `channels.tg.token`")
            && msg.contains("SWITCHBOARD_TEST_SURELY_UNSET"),
        "{msg}"
    );
}

#[test]
fn a_channel_table_with_kind_last_still_parses_and_unknown_kinds_list_the_known_ones() {
    let text = "[channels.tg]\ntoken = \"123:test-not-real\"\nmode = \"webhook\"\n\
                webhook_url = \"https://x.example/telegram/tg\"\nsecret_token = \"s\"\n\
                kind = \"telegram\"\n";
    let config = config::parse(text, "t", &[]).unwrap();
    assert_eq!(config.channels["tg"].kind(), "telegram");
    let msg = problems("[channels.x]\nkind = \"irc\"\n", &[]);
    assert!(
        msg.contains("key `channels.x`") && msg.contains("irc") && msg.contains("telegram"),
        "{msg}"
    );
    let msg = problems("[channels.tg]\nkind = \"telegram\"\ntokn = \"1:x\"\n", &[]);
    assert!(
        msg.starts_with("my.toml:3:1: key `channels.tg.tokn`"),
        "{msg}"
    );
}

#[test]
fn every_channel_secret_reaches_the_scrubber_list() {
    let text = "[provider]\napi_key = \"sk-test-0\"\n\
                [channels.tg]\nkind = \"telegram\"\ntoken = \"123:tg-token-test\"\n\
                secret_token = \"tg-hook-secret\"\n\
                [channels.slack]\nkind = \"slack\"\nbot_token = \"xoxb-test\"\n\
                signing_secret = \"slack-signing-test\"\n\
                [channels.discord]\nkind = \"discord\"\ntoken = \"discord-token-test\"\n\
                [channels.web]\nkind = \"web\"\naccess_token = \"web-token-test\"\n";
    let mut secrets = config::parse(text, "t", &[]).unwrap().secret_values();
    secrets.sort();
    assert_eq!(
        secrets,
        [
            "123:tg-token-test",
            "discord-token-test",
            "sk-test-0",
            "slack-signing-test",
            "tg-hook-secret",
            "web-token-test",
            "xoxb-test",
        ]
    );
}

#[test]
fn a_web_chat_on_a_gateway_route_or_a_telegram_webhook_path_is_refused() {
    let msg = problems("[channels.web]\nkind = \"web\"\npath = \"/metrics\"\n", &[]);
    assert!(
        msg.contains(
            "my.toml:3:1: key `channels.web.path`: route /metrics is already served by the gateway's own route"
        ),
        "{msg}"
    );
    let msg = problems(
        "[channels.tg]\nkind = \"telegram\"\ntoken = \"1:x\"\nmode = \"webhook\"\n\
         webhook_url = \"https://x.example/telegram/tg\"\nsecret_token = \"s\"\n\
         [channels.web]\nkind = \"web\"\npath = \"/telegram/tg\"\n",
        &[],
    );
    assert!(
        msg.contains(
            "key `channels.web.path`: route /telegram/tg is already served by channel `tg`"
        ),
        "{msg}"
    );
}
