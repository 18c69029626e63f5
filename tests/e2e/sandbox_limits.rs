//! Resource limits, the network switch, Node under the sandbox, how the posture is reported
//! (`/readyz`, `switchboard check`, the shell disabled in `enforce` mode), and the shell
//! tool's own behaviour through the real supervisor (output cap, timeout, environment).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use switchboard::agent::Tool;
use switchboard::sandbox::{Sandbox, SandboxConfig};
use switchboard::tools::{ShellTool, TRUNCATED};
use switchboard_standins::{Reply, eventually};

use crate::helpers::{WAIT, key, wait_transcript};
use crate::sandbox::{POSTURES, call, running_with_cmdline, shell, spawn};

/// `b(){ b|b & }; b; exec sleep 4`, encoded: the policy's circuit breaker spots a literal
/// fork bomb, and this suite is about what holds when the policy does not.
const BOMB: &str = "YigpeyBifGIgJiB9OyBiOyBleGVjIHNsZWVwIDQK";

#[tokio::test]
async fn a_fork_bomb_is_bounded_while_another_conversation_still_runs_tools() {
    let app = spawn("[sandbox.limits]\nprocesses = 64").await;
    app.llm
        .push(Reply::tool_call(
            "shell",
            json!({"command": format!("echo {BOMB} | base64 -d > bomb.sh && exec sh bomb.sh")}),
        ))
        .push(Reply::tool_call(
            "shell",
            json!({"command": "echo second-alive"}),
        ))
        .push(Reply::text("second done"))
        .push(Reply::text("bomb done"));
    let (bomb, second) = (key("bomb"), key("second"));
    app.channel.say(&bomb, "u1", "bomb").await.unwrap();
    app.llm.wait_for_requests(1, WAIT).await;
    tokio::time::sleep(Duration::from_millis(500)).await; // the bomb is at its limit
    let started = Instant::now();
    app.channel.say(&second, "u1", "echo").await.unwrap();
    wait_transcript(&app.channel, &second, |t| t == ["second done"]).await;
    let bomb_so_far = app.channel.transcript(&bomb);
    assert!(
        !bomb_so_far.iter().any(|m| m == "bomb done"),
        "the bomb ended before the second conversation's call: {bomb_so_far:?}"
    );
    let tool_out = crate::sandbox::last_tool_message(&app);
    assert!(tool_out.contains("second-alive"), "{tool_out}");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    wait_transcript(&app.channel, &bomb, |t| t == ["bomb done"]).await;
    let after = shell(&app, "bomb", "echo still-serving").await;
    assert!(after.contains("still-serving"), "{after}");
}

#[tokio::test]
async fn a_memory_hog_and_a_huge_file_are_bounded() {
    let app = spawn("[sandbox.limits]\nmemory_mb = 256\nfile_size_mb = 16").await;
    let started = Instant::now();
    let hog = shell(
        &app,
        "hog",
        "awk 'BEGIN { s = \"x\"; for (;;) s = s s }'; echo awk_rc=$?",
    )
    .await;
    assert!(!hog.contains("awk_rc=0"), "{hog}");
    let big = shell(&app, "hog", "head -c 4G /dev/zero > big; echo head_rc=$?").await;
    assert!(!big.contains("head_rc=0"), "{big}");
    let size = std::fs::metadata(app.config.gateway.data_dir.join("workspaces/fake/hog/big"))
        .unwrap()
        .len();
    assert!(size <= 16 * 1024 * 1024, "{size} bytes written");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_node_script_runs_under_the_sandbox() {
    if !Path::new("/usr/bin/node").exists() && !Path::new("/usr/local/bin/node").exists() {
        eprintln!("skipped: node is not installed");
        return;
    }
    for posture in POSTURES {
        let app = spawn(posture).await;
        let out = shell(
            &app,
            "node",
            "echo 'const fs = require(\"fs\"); fs.writeFileSync(\"n.txt\", String(6 * 7)); console.log(\"node says\", fs.readFileSync(\"n.txt\", \"utf8\"))' > s.js && node s.js",
        )
        .await;
        assert!(out.contains("node says 42"), "{posture}: {out}");
    }
}

/// A shell command that connects to 127.0.0.1:`port` and says how it went.
fn connect(port: u16) -> String {
    format!(
        "node -e \"require('net').connect({port}, '127.0.0.1').on('connect', () => {{ console.log('connected-{port}'); process.exit(0) }}).on('error', e => {{ console.log('failed-{port}', e.code); process.exit(3) }})\""
    )
}

#[tokio::test]
async fn tcp_connects_only_where_the_network_setting_allows() {
    if !Path::new("/usr/bin/node").exists() {
        eprintln!("skipped: node (used as the TCP client) is not installed");
        return;
    }
    let allowed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let (a, b) = (
        allowed.local_addr().unwrap().port(),
        other.local_addr().unwrap().port(),
    );
    let off = spawn("network = \"off\"").await;
    let out = shell(&off, "net", &connect(a)).await;
    assert!(out.contains(&format!("failed-{a}")), "network off: {out}");
    for posture in POSTURES {
        let ports = spawn(&format!("{posture}\nnetwork = [{a}]")).await;
        let out = shell(&ports, "net", &format!("{}; {}", connect(a), connect(b))).await;
        assert!(out.contains(&format!("connected-{a}")), "{posture}: {out}");
        assert!(out.contains(&format!("failed-{b}")), "{posture}: {out}");
    }
}

#[tokio::test]
async fn readyz_states_the_posture_and_enforce_mode_disables_a_shell_it_cannot_confine() {
    let app = spawn("").await;
    let url = format!("http://{}/readyz", app.gateway().addr());
    let body: serde_json::Value = reqwest::get(&url).await.unwrap().json().await.unwrap();
    let check = body["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "sandbox")
        .unwrap()
        .clone();
    assert_eq!(check["ok"], true, "{check}");
    let detail = check["detail"].as_str().unwrap();
    assert!(
        detail.contains("mode enforce; landlock ABI") && detail.contains("seccomp on"),
        "{detail}"
    );

    let broken = spawn("supervisor = \"/nonexistent/switchboard\"").await;
    let out = shell(&broken, "x", "echo should-not-run").await;
    assert!(
        out.contains("the shell is disabled") && !out.contains("should-not-run"),
        "{out}"
    );
    let url = format!("http://{}/readyz", broken.gateway().addr());
    let response = reqwest::get(&url).await.unwrap();
    assert!(
        response.status().is_success(),
        "the sandbox never gates readiness"
    );
    let body: serde_json::Value = response.json().await.unwrap();
    assert!(
        body.to_string().contains("/nonexistent/switchboard"),
        "{body}"
    );
}

#[test]
fn check_prints_the_posture_and_warns_when_the_sandbox_is_off() {
    let dir = tempfile::tempdir().unwrap();
    for (extra, expect) in [
        ("", "sandbox: mode enforce; landlock ABI"),
        (
            "[sandbox]\nmode = \"off\"\n",
            "warning: [sandbox] mode = \"off\"",
        ),
    ] {
        let path = dir.path().join("c.toml");
        let text = format!(
            "[gateway]\ndata_dir = \"{}\"\n[provider]\nmodel = \"m\"\n{extra}",
            dir.path().display()
        );
        std::fs::write(&path, text).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .args(["check", "--config"])
            .arg(&path)
            .env_remove("SWITCHBOARD_CONFIG")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains(expect),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn shell_tool(dir: &tempfile::TempDir, max_output: usize) -> ShellTool {
    let config = SandboxConfig {
        supervisor: Some(env!("CARGO_BIN_EXE_switchboard").into()),
        ..SandboxConfig::default()
    };
    let sandbox = Arc::new(Sandbox::new(&config, dir.path()));
    let ws = dir.path().join("workspaces/ws");
    ShellTool::new(ws, Duration::from_secs(5), max_output, sandbox)
}

#[tokio::test]
async fn a_command_runs_in_the_workspace_and_reports_its_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let ok = shell_tool(&dir, 1024)
        .execute(json!({"command": "pwd; echo hi >&2"}))
        .await;
    assert!(ok.success, "{ok:?}");
    let ws = dir.path().join("workspaces/ws").display().to_string();
    assert!(
        ok.output.contains(&ws) && ok.output.contains("[stderr]\nhi"),
        "{ok:?}"
    );
    let bad = shell_tool(&dir, 1024)
        .execute(json!({"command": "exit 3"}))
        .await;
    assert_eq!(bad.error.as_deref(), Some("exit code: 3"));
    let killed = shell_tool(&dir, 1024)
        .execute(json!({"command": "sh -c 'kill -9 $$'"}))
        .await;
    assert_eq!(killed.error.as_deref(), Some("exit code: 137"));
}

#[tokio::test]
async fn output_beyond_the_cap_is_cut_with_a_marker() {
    let dir = tempfile::tempdir().unwrap();
    let out = shell_tool(&dir, 100)
        .execute(json!({"command": "yes | head -c 100000"}))
        .await;
    assert!(out.output.ends_with(TRUNCATED), "{}", out.output);
    assert!(out.output.len() < 200);
}

#[tokio::test]
async fn a_command_past_its_timeout_is_killed_with_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = shell_tool(&dir, 1024)
        .execute(
            json!({"command": "sleep 31.75 & setsid sleep 31.75 & sleep 31.75", "timeout_secs": 1}),
        )
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(out.error.unwrap().contains("timed out"));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        running_with_cmdline("sleep\x0031.75").is_empty(),
        "a child survived"
    );
}

#[tokio::test]
async fn a_cancelled_call_leaves_no_process_behind() {
    let dir = tempfile::tempdir().unwrap();
    let tool = shell_tool(&dir, 1024);
    let call = tool.execute(json!({"command": "setsid sleep 32.25 & sleep 32.25"}));
    let _ = tokio::time::timeout(Duration::from_millis(500), call).await;
    let what = "the children of the dropped call to end";
    eventually(Duration::from_secs(5), what, async || {
        let running = running_with_cmdline("sleep\x0032.25");
        if running.is_empty() {
            Ok(())
        } else {
            Err(running)
        }
    })
    .await;
}

#[tokio::test]
async fn file_tools_and_shell_share_the_workspace_as_the_sandbox_user() {
    let app = spawn("").await;
    let w = call(
        &app,
        "share",
        "file_write",
        json!({"path": "d/a.txt", "content": "from-tool"}),
    )
    .await;
    assert!(w.contains("wrote"), "{w}");
    let out = shell(
        &app,
        "share",
        "cat d/a.txt && echo more >> d/a.txt && echo ok",
    )
    .await;
    assert!(out.contains("from-tool") && out.contains("ok"), "{out}");
}

#[tokio::test]
async fn extra_read_and_extra_write_open_exactly_those_paths() {
    let outside = tempfile::tempdir().unwrap();
    let (ro, rw, no) = (
        outside.path().join("ro"),
        outside.path().join("rw"),
        outside.path().join("no"),
    );
    for dir in [&ro, &rw, &no] {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("f"), "visible").unwrap();
    }
    // The sandbox user must pass plain permissions; Landlock is what is tested.
    std::process::Command::new("chmod")
        .args(["-R", "a+rwX"])
        .arg(outside.path())
        .status()
        .unwrap();
    let app = spawn(&format!(
        "extra_read = [\"{}\"]\nextra_write = [\"{}\"]",
        ro.display(),
        rw.display()
    ))
    .await;
    let out = shell(
        &app,
        "extra",
        &format!(
            "cat {ro}/f && echo read-ok; echo x > {ro}/g || echo ro-write-denied; echo x > {rw}/g && echo rw-write-ok; cat {no}/f || echo no-read-denied",
            ro = ro.display(),
            rw = rw.display(),
            no = no.display()
        ),
    )
    .await;
    for expected in [
        "read-ok",
        "ro-write-denied",
        "rw-write-ok",
        "no-read-denied",
    ] {
        assert!(out.contains(expected), "{expected}: {out}");
    }
    assert!(rw.join("g").exists() && !ro.join("g").exists());
}

#[tokio::test]
async fn mode_off_runs_unconfined_and_says_so() {
    let app = spawn("mode = \"off\"").await;
    let url = format!("http://{}/readyz", app.gateway().addr());
    let body: serde_json::Value = reqwest::get(&url).await.unwrap().json().await.unwrap();
    assert!(
        body.to_string().contains("mode off: tools run unconfined"),
        "{body}"
    );
    let out = shell(&app, "off", "echo runs").await;
    assert!(out.contains("runs"), "{out}");
}

#[tokio::test]
async fn orphans_are_reaped_so_they_do_not_use_up_the_process_limit() {
    for posture in POSTURES {
        // The default limit (256): without namespaces it counts every process of the uid,
        // including other tests' (a concurrent fork bomb holds 64), so it cannot be small.
        let app = spawn(posture).await;
        let out = shell(
            &app,
            "orphans",
            "i=0; while [ $i -lt 500 ]; do (sleep 0 &); i=$((i+1)); done; echo survived-$i",
        )
        .await;
        assert!(out.contains("survived-500"), "{posture}: {out}");
        assert!(!out.contains("fork"), "{posture}: {out}");
    }
}

#[test]
fn the_example_config_spells_out_the_sandbox_defaults() {
    let example = include_str!("../../config/switchboard.example.toml");
    let config = switchboard::config::parse(example, "example", &[]).unwrap();
    assert_eq!(config.sandbox, SandboxConfig::default());
}
