//! `switchboard doctor` through the real binary: the example config passes, and an exposed
//! one fails naming each exposure with its fix, never the secret itself.

use std::process::Command;

fn doctor(config: &std::path::Path) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["doctor", "--config"])
        .arg(config)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    (out.status.code(), format!("{stdout}{stderr}"))
}

#[test]
fn doctor_passes_the_example_config() {
    let example =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/switchboard.example.toml");
    let (code, out) = doctor(&example);
    assert_eq!(code, Some(0), "{out}");
    assert!(!out.contains("CRITICAL"), "{out}");
    assert!(
        out.contains("web chat `web` opens only with its generated token, from loopback too"),
        "{out}"
    );
    assert!(!out.contains("loopback only"), "loopback is no door: {out}");
}

#[test]
fn doctor_warns_about_allowed_origins_on_a_chat_without_a_token_and_metrics_behind_a_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("proxied.toml");
    let text = format!(
        "[gateway]\nlisten = \"127.0.0.1:8080\"\ndata_dir = \"{}\"\n\
         [admin]\nloopback_without_token = true\n\
         [channels.web]\nkind = \"web\"\npublic_hosts = [\"chat.example.com\"]\n\
         allowed_origins = [\"https://chat.example.com\"]\n",
        dir.path().join("data").display()
    );
    std::fs::write(&file, text).unwrap();
    let (_, out) = doctor(&file);
    assert!(
        out.contains(
            "warning: web chat `web` has allowed_origins (https://chat.example.com) but no token"
        ),
        "{out}"
    );
    assert!(
        out.contains("`admin.loopback_without_token` no longer does anything"),
        "{out}"
    );
    assert!(
        out.contains("/metrics answers every loopback peer without a token"),
        "{out}"
    );
    assert!(!out.contains("loopback only"), "{out}");
}

#[test]
fn doctor_fails_an_exposed_config_naming_each_exposure_with_its_fix_and_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("exposed.toml");
    let text = format!(
        "[gateway]\nlisten = \"0.0.0.0:8080\"\ndata_dir = \"{}\"\n\
         [provider]\napi_key = \"sk-plaintext-key-1234567890\"\n\
         [tools]\nenabled = [\"shell\"]\n\
         [channels.tg]\nkind = \"telegram\"\ntoken = \"\"\ndm_policy = \"open\"\nallowed_users = [\"*\"]\n",
        dir.path().join("data").display()
    );
    std::fs::write(&file, text).unwrap();
    let (code, out) = doctor(&file);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("gateway.listen = 0.0.0.0:8080"), "{out}");
    assert!(
        out.contains("CRITICAL: channels.tg: dm_policy = \"open\""),
        "{out}"
    );
    assert!(out.contains("shell"), "{out}");
    assert!(
        out.contains("CRITICAL: provider.api_key is written in plain text"),
        "{out}"
    );
    assert_eq!(
        out.matches("    fix: ").count(),
        out.lines().count() / 2,
        "{out}"
    );
    assert!(
        !out.contains("sk-plaintext-key-1234567890"),
        "the secret leaked: {out}"
    );
}

#[test]
fn doctor_reports_the_sandbox_as_the_running_gateway_measured_it() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let file = dir.path().join("gw.toml");
    let text = format!(
        "[gateway]\nlisten = \"127.0.0.1:{port}\"\ndata_dir = \"{0}\"\n\
         database_url = \"sqlite://{0}/gw.db\"\n",
        dir.path().display()
    );
    std::fs::write(&file, text).unwrap();
    let mut gateway = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["run", "--config"])
        .arg(&file)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let log = BufReader::new(gateway.stderr.take().unwrap());
    for line in log.lines().take(200) {
        if line.unwrap().contains("gateway ready") {
            break;
        }
    }
    let (code, out) = doctor(&file);
    let _ = gateway.kill();
    let _ = gateway.wait();
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("the running gateway reports sandbox: "),
        "{out}"
    );
}

#[test]
fn doctor_warns_about_a_browser_allowed_a_whole_top_level_domain() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("browser.toml");
    let text = format!(
        "[gateway]\ndata_dir = \"{}\"\n[tools]\nenabled = [\"browser\"]\n\
         [tools.browser]\nallowed_hosts = [\"*.com\", \"docs.rs\"]\n",
        dir.path().join("data").display()
    );
    std::fs::write(&file, text).unwrap();
    let (_, out) = doctor(&file);
    assert!(
        out.contains(
            "warning: [tools.browser] allowed_hosts: \"*.com\" allows every host under .com"
        ),
        "{out}"
    );
    assert!(!out.contains("\"docs.rs\" allows"), "{out}");
    // The posture line says what the browser runs with.
    assert!(
        out.contains("Chromium's own sandbox off")
            && out.contains("network only through the gateway's checking proxy")
            && out.contains("memory 1024 MiB"),
        "{out}"
    );
}
