//! The escape suite: a model in `autonomous` mode (so the policy does not help) tries to
//! get out of its workspace through the real supervisor binary, in both postures this
//! machine can show: user + PID namespaces, and none (Docker's default seccomp profile,
//! forced with `namespaces = false`). Every attempt fails and the gateway stays up.

use std::sync::Once;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_standins::{Reply, eventually};

use crate::helpers::{TestApp, key, wait_transcript};

/// In the gateway's environment; must never show up in tool output.
const CANARY: &str = "SWITCHBOARD_E2E_CANARY";
const CANARY_VALUE: &str = "canary-7f3a9c-never-leak";

/// The two postures: namespaces where the kernel allows them, and none (Docker).
pub const POSTURES: [&str; 2] = ["namespaces = true", "namespaces = false"];

fn plant_canary() {
    static ONCE: Once = Once::new();
    // SAFETY: set once, before this test's gateway starts; nothing else writes it.
    ONCE.call_once(|| unsafe { std::env::set_var(CANARY, CANARY_VALUE) });
}

/// Tools without approvals and a `[sandbox]` section with `extra` in it.
pub fn config(extra: &str) -> String {
    format!(
        "[tools]\nenabled = [\"shell\", \"file_read\", \"file_write\", \"file_list\"]\n\
         [tools.shell]\ntimeout_secs = 10\n[policy]\nmode = \"autonomous\"\n\
         [sandbox]\n{extra}\n"
    )
}

/// Start a gateway with the canary planted.
pub async fn spawn(extra: &str) -> TestApp {
    plant_canary();
    TestApp::spawn_with(&config(extra)).await
}

/// Have the model call `tool` with `args` in `chat`; returns the tool message it got back.
pub async fn call(app: &TestApp, chat: &str, tool: &str, args: Value) -> String {
    let done = format!("done {chat} {}", app.llm.requests().len());
    app.llm
        .push(Reply::tool_call(tool, args))
        .push(Reply::text(done.clone()));
    let chat = key(chat);
    app.channel.say(&chat, "u1", "go").await.unwrap();
    wait_transcript(&app.channel, &chat, |t| t.contains(&done)).await;
    last_tool_message(app)
}

/// The content of the last tool message the model was sent.
pub fn last_tool_message(app: &TestApp) -> String {
    let requests = app.llm.requests();
    let messages = requests.last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .clone();
    let tool = messages.iter().rev().find(|m| m["role"] == "tool").unwrap();
    tool["content"].as_str().unwrap_or_default().to_owned()
}

/// Run `command` in the shell of `chat`.
pub async fn shell(app: &TestApp, chat: &str, command: &str) -> String {
    call(app, chat, "shell", json!({"command": command})).await
}

/// pids of live (non-zombie) processes whose NUL-joined command line contains `pattern`.
pub fn running_with_cmdline(pattern: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat
                .rsplit(')')
                .next()
                .is_some_and(|s| s.trim_start().starts_with('Z'));
            !zombie && String::from_utf8_lossy(&cmdline).contains(pattern)
        })
        .collect()
}

#[tokio::test]
async fn the_gateway_environment_never_reaches_a_tool() {
    for posture in POSTURES {
        let app = spawn(posture).await;
        for command in [
            "cat /proc/$PPID/environ",
            "grep -a CANARY /proc/*/environ",
            "env",
            "cat /proc/1/environ; cat /proc/self/environ",
        ] {
            let out = shell(&app, "env", command).await;
            assert!(
                !out.contains(CANARY_VALUE),
                "{posture}: `{command}` leaked: {out}"
            );
            assert!(
                !out.contains(CANARY),
                "{posture}: `{command}` leaked the name: {out}"
            );
        }
    }
}

#[tokio::test]
async fn files_outside_the_workspace_cannot_be_read_written_or_linked() {
    for posture in POSTURES {
        let app = spawn(posture).await;
        let data = app.config.gateway.data_dir.clone();
        std::fs::write(data.join("secret.txt"), "DATA-DIR-SECRET").unwrap();
        let other = data.join("workspaces/fake/other");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("note.txt"), "OTHER-CONVERSATION-SECRET").unwrap();
        let thread = data.join("workspaces/fake/me@t1");
        std::fs::create_dir_all(&thread).unwrap();
        std::fs::write(thread.join("note.txt"), "THREAD-SECRET").unwrap();
        let db = data.join("test.db");
        let attempts = format!(
            "cat ../../../test.db {db}; cat ../../../secret.txt {data}/secret.txt; ls {data}; \
             cat ../other/note.txt {other}/note.txt ../me@t1/note.txt; ls /root/.ssh ~/.ssh; \
             echo x > ../../../owned; echo x > {data}/owned2; echo x > /tmp/owned-sbx-{pid}; \
             ln {db} stolen; ln ../../../secret.txt stolen2; ls -la",
            db = db.display(),
            data = data.display(),
            other = other.display(),
            pid = std::process::id(),
        );
        let out = shell(&app, "me", &attempts).await;
        for secret in [
            "SQLite format 3",
            "DATA-DIR-SECRET",
            "OTHER-CONVERSATION-SECRET",
            "THREAD-SECRET",
        ] {
            assert!(!out.contains(secret), "{posture}: {secret} readable: {out}");
        }
        assert!(
            !data.join("owned").exists() && !data.join("owned2").exists(),
            "{posture}: wrote outside"
        );
        let tmp_owned = format!("/tmp/owned-sbx-{}", std::process::id());
        assert!(
            !std::path::Path::new(&tmp_owned).exists(),
            "{posture}: wrote /tmp"
        );
        let ws = data.join("workspaces/fake/me");
        assert!(
            !ws.join("stolen").exists() && !ws.join("stolen2").exists(),
            "{posture}: linked: {out}"
        );
        let ok = shell(&app, "me", "echo inside > mine.txt && cat mine.txt").await;
        assert!(
            ok.contains("inside"),
            "{posture}: the workspace itself is writable: {ok}"
        );
    }
}

#[tokio::test]
async fn a_symlink_planted_by_the_shell_is_not_followed_by_the_file_tools() {
    let app = spawn("").await;
    let data = app.config.gateway.data_dir.clone();
    std::fs::write(data.join("secret.txt"), "DATA-DIR-SECRET").unwrap();
    let planted = format!(
        "ln -s {d}/secret.txt link; ln -s {d} dirlink; ln -s /etc etc; ls -l",
        d = data.display()
    );
    let out = shell(&app, "sym", &planted).await;
    assert!(out.contains("link ->"), "the shell may create links: {out}");
    for path in ["link", "dirlink/secret.txt", "etc/passwd"] {
        let read = call(&app, "sym", "file_read", json!({"path": path})).await;
        assert!(
            !read.contains("DATA-DIR-SECRET") && !read.contains("root:"),
            "{path}: {read}"
        );
        assert!(read.contains("symlink"), "{path}: {read}");
    }
    let write = call(
        &app,
        "sym",
        "file_write",
        json!({"path": "link", "content": "over"}),
    )
    .await;
    assert!(write.contains("wrote"), "{write}");
    assert_eq!(
        std::fs::read_to_string(data.join("secret.txt")).unwrap(),
        "DATA-DIR-SECRET"
    );
    let list = call(&app, "sym", "file_list", json!({"path": "dirlink"})).await;
    assert!(list.contains("symlink"), "{list}");
}

#[tokio::test]
async fn background_children_are_gone_after_the_call() {
    for (i, posture) in POSTURES.iter().enumerate() {
        let app = spawn(posture).await;
        let (a, b) = (format!("97{i}.5"), format!("98{i}.5"));
        let out = shell(
            &app,
            "bg",
            &format!("setsid sleep {a} & (nohup sleep {b} > /dev/null 2>&1 &); echo started"),
        )
        .await;
        assert!(out.contains("started"), "{out}");
        let what = format!("{posture}: the background children to be gone");
        eventually(Duration::from_secs(5), &what, async || {
            let left: Vec<_> = [&a, &b]
                .iter()
                .flat_map(|s| running_with_cmdline(&format!("sleep\0{s}")))
                .collect();
            if left.is_empty() { Ok(()) } else { Err(left) }
        })
        .await;
    }
}

#[tokio::test]
async fn a_tool_cannot_signal_the_gateway() {
    for posture in POSTURES {
        let app = spawn(posture).await;
        let me = std::process::id();
        let out = shell(
            &app,
            "kill",
            &format!("kill -9 {me}; echo rc=$?; [ $PPID -gt 1 ] && kill -9 $PPID; echo ppid_rc=$?"),
        )
        .await;
        assert!(
            out.contains("rc=1") || out.contains("rc=2"),
            "{posture}: {out}"
        );
        // Still here, and still serving.
        let again = shell(&app, "kill", "echo alive").await;
        assert!(again.contains("alive"), "{again}");
    }
}

#[tokio::test]
async fn a_tool_cannot_see_another_conversations_processes() {
    let app = spawn("namespaces = true").await;
    let marker = "hidden-marker-5e1d";
    app.llm
        .push(Reply::tool_call(
            "shell",
            json!({"command": format!("sleep 3; echo {marker}")}),
        ))
        .push(Reply::tool_call(
            "shell",
            json!({"command": "cat /proc/*/cmdline | tr '\\0' ' '; ls /proc | grep -c '^[0-9]'"}),
        ))
        .push(Reply::text("peek done"))
        .push(Reply::text("sleep done"));
    let (sleeper, peeker) = (key("sleeper"), key("peeker"));
    app.channel.say(&sleeper, "u1", "sleep").await.unwrap();
    eventually(
        Duration::from_secs(10),
        "the other command to start",
        async || {
            if running_with_cmdline(marker).is_empty() {
                Err(())
            } else {
                Ok(())
            }
        },
    )
    .await;
    app.channel.say(&peeker, "u1", "peek").await.unwrap();
    wait_transcript(&app.channel, &peeker, |t| t == ["peek done"]).await;
    let seen = last_tool_message(&app);
    assert!(seen.contains("/proc/"), "{seen}");
    assert!(
        !seen.contains(marker),
        "another conversation's command line: {seen}"
    );
    assert!(
        !running_with_cmdline(marker).is_empty(),
        "still running while peeked at"
    );
    wait_transcript(&app.channel, &sleeper, |t| t == ["sleep done"]).await;
}

#[tokio::test]
async fn a_unix_socket_outside_the_workspace_cannot_be_reached() {
    if !std::path::Path::new("/usr/bin/node").exists() {
        eprintln!("skipped: node (used as the socket client) is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("daemon.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    // Plain permissions would let anyone in, like a trust-auth database socket.
    std::process::Command::new("chmod")
        .args(["-R", "a+rwx"])
        .arg(dir.path())
        .status()
        .unwrap();
    let connect = format!(
        "node -e \"require('net').connect('{}').on('connect', () => {{ console.log('unix-connected'); process.exit(0) }}).on('error', e => {{ console.log('unix-failed', e.code); process.exit(3) }})\"",
        path.display()
    );
    for posture in POSTURES {
        for network in ["\"off\"", "[80]"] {
            let app = spawn(&format!("{posture}\nnetwork = {network}")).await;
            let out = shell(&app, "unix", &connect).await;
            assert!(
                out.contains("unix-failed"),
                "{posture}, network {network}: {out}"
            );
        }
    }
    let open = spawn("network = \"full\"").await;
    let out = shell(&open, "unix", &connect).await;
    assert!(out.contains("unix-connected"), "network full: {out}");
}

#[tokio::test]
async fn tool_processes_die_with_the_gateway() {
    for namespaces in [true, false] {
        die_with_the_gateway(namespaces).await;
    }
}

async fn die_with_the_gateway(namespaces: bool) {
    use switchboard::sandbox::{Limits, Mode, Network, SPEC_VAR, Sandbox, SandboxConfig, Spec};
    let dir = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::new(&SandboxConfig::default(), dir.path());
    let ws = sandbox
        .prepare_workspace(&dir.path().join("workspaces/orphaned"))
        .unwrap();
    let spec = Spec {
        command: Some("setsid sleep 34.5 & sleep 34.5".into()),
        workspace: ws.clone(),
        mode: Mode::Enforce,
        network: Network::Off,
        extra_read: Vec::new(),
        extra_write: Vec::new(),
        read_only: Vec::new(),
        limits: Limits::default(),
        drop_to: sandbox.owner(),
        namespaces,
        parent: -1,
        data_dir: dir.path().to_path_buf(),
        cover: dir.path().to_path_buf(),
        hidden: Vec::new(),
        cgroup: Err("not in this test".into()),
    };
    let template = serde_json::to_string(&spec).unwrap();
    // A stand-in gateway: a shell that starts the supervisor with its own pid as the parent.
    let mut gateway = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "export {SPEC_VAR}=\"$(printf '%s' \"$T\" | sed \"s/\\\"parent\\\":-1/\\\"parent\\\":$$/\")\"; \"$SB\" supervise & exec sleep 30"
        ))
        .env("T", template)
        .env("SB", env!("CARGO_BIN_EXE_switchboard"))
        .current_dir(&ws)
        .spawn()
        .unwrap();
    eventually(Duration::from_secs(10), "the tool to start", async || {
        let running = running_with_cmdline("sleep\x0034.5");
        if running.len() >= 2 {
            Ok(())
        } else {
            Err(running)
        }
    })
    .await;
    gateway.kill().unwrap(); // SIGKILL: no clean-up of its own
    gateway.wait().unwrap();
    let what = "the tool's processes to end with the gateway";
    eventually(Duration::from_secs(5), what, async || {
        let running = running_with_cmdline("sleep\x0034.5");
        if running.is_empty() {
            Ok(())
        } else {
            Err(running)
        }
    })
    .await;
}
