//! Built-in tools through the whole gateway: shell, the iteration cap, `/stop` killing a
//! running command, prompt-guided call formats, and credentials that never leak.

use std::time::Duration;

use serde_json::json;
use switchboard::provider::Role;
use switchboard_standins::{Op, Reply, eventually};

use crate::helpers::{TestApp, WAIT, key, wait_inbox_idle, wait_transcript};

/// Tools without approvals: these tests are about the tools, not the policy gate.
const SHELL_ONLY: &str = "[tools]\nenabled = [\"shell\", \"file_read\", \"file_write\"]\n[policy]\nmode = \"autonomous\"\n";

#[tokio::test]
async fn the_model_runs_a_shell_command_and_answers_from_its_output() {
    let app = TestApp::spawn_with(SHELL_ONLY).await;
    app.llm
        .push(Reply::tool_call(
            "shell",
            json!({"command": "echo forty-two"}),
        ))
        .push(Reply::text("The shell said forty-two."));
    let chat = key("sh");
    app.channel.say(&chat, "u1", "run echo").await.unwrap();
    wait_transcript(&app.channel, &chat, |t| t == ["The shell said forty-two."]).await;
    let second = &app.llm.requests()[1]["messages"];
    let tool = second
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert!(
        tool["content"]
            .as_str()
            .unwrap()
            .contains("exit code: 0\nforty-two"),
        "{tool}"
    );
    wait_inbox_idle(&app.store()).await;
    let audit = app.store().audit(Some(&chat), 10).await.unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(
        (audit[0].tool.as_str(), audit[0].status.as_str()),
        ("shell", "ok")
    );
    assert!(audit[0].args.contains("echo forty-two"));
}

#[tokio::test]
async fn the_tenth_round_trip_without_an_answer_stops_the_turn_and_says_so() {
    let app = TestApp::spawn_with(SHELL_ONLY).await;
    for i in 0..12 {
        app.llm.push(Reply::tool_call(
            "shell",
            json!({"command": format!("echo {i}")}),
        ));
    }
    let chat = key("cap");
    app.channel.say(&chat, "u1", "loop forever").await.unwrap();
    let t = wait_transcript(&app.channel, &chat, |t| {
        t.iter().any(|m| m.contains("10 steps"))
    })
    .await;
    assert!(t[0].contains("continue"), "{t:?}");
    assert_eq!(app.llm.requests().len(), 10);
    wait_inbox_idle(&app.store()).await;
    let history = app.store().history(&chat, 100).await.unwrap();
    assert_eq!(
        history.iter().filter(|m| m.role == Role::Tool).count(),
        10,
        "tool results kept"
    );
}

#[tokio::test]
async fn slash_stop_kills_a_running_sleep() {
    let app = TestApp::spawn_with(SHELL_ONLY).await;
    app.llm.push(Reply::tool_call(
        "shell",
        json!({"command": "echo started > sleeper.pid; exec sleep 30.25"}),
    ));
    let chat = key("sleep");
    app.channel.say(&chat, "u1", "sleep please").await.unwrap();
    let pid_file = app
        .config
        .gateway
        .data_dir
        .join("workspaces/fake/sleep/sleeper.pid");
    // One allowance for both waits.
    let waiting = std::time::Instant::now();
    let pid = eventually(
        WAIT,
        "the command to start",
        async || match std::fs::read_to_string(&pid_file) {
            Ok(pid) if !pid.trim().is_empty() => Ok(pid.trim().to_owned()),
            read => Err(read),
        },
    )
    .await;
    let left = WAIT.saturating_sub(waiting.elapsed());
    eventually(left, "the sleep to start", async || {
        let running = crate::sandbox::running_with_cmdline("sleep\x0030.25");
        if running.is_empty() { Err(()) } else { Ok(()) }
    })
    .await;
    let started = std::time::Instant::now();
    app.channel.say(&chat, "u1", "/stop").await.unwrap();
    wait_transcript(&app.channel, &chat, |t| {
        t.last().is_some_and(|m| m == "⏹ Stopped.")
    })
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "stop waited for the sleep"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    // The command runs in its own PID namespace, so find it by its unique command line.
    assert_eq!(pid, "started");
    assert!(
        crate::sandbox::running_with_cmdline("sleep\x0030.25").is_empty(),
        "sleep still running"
    );
    wait_inbox_idle(&app.store()).await;
    let history = app.store().history(&chat, 10).await.unwrap();
    assert!(
        history
            .iter()
            .any(|m| m.role == Role::Tool && m.content.contains("cancelled")),
        "{history:#?}"
    );
}

#[tokio::test]
async fn prompt_guided_calls_in_every_format_are_executed_and_never_shown() {
    let builder = TestApp::builder().config(SHELL_ONLY);
    let app = builder
        .edit(|c| c.provider.native_tools = false)
        .start()
        .await;
    let formats = [
        "I'll write it.\n<tool_call>{\"name\": \"file_write\", \"arguments\": {\"path\": \"a.txt\", \"content\": \"A\"}}</tool_call>",
        "Next.\n<function_calls>\n<invoke name=\"file_write\">\n<parameter name=\"path\">b.txt</parameter>\n<parameter name=\"content\">B</parameter>\n</invoke>\n</function_calls>",
        "Then:\n```tool_call\n{\"name\": \"file_write\", \"arguments\": {\"path\": \"c.txt\", \"content\": \"C\"}}\n```",
        "Finally\nfile_write\n{\"path\": \"d.txt\", \"content\": \"D\"}",
    ];
    for text in formats {
        app.llm
            .push(Reply::paced(text, 3, Duration::from_millis(1)));
    }
    app.llm.push(Reply::text("All four files are written."));
    let channel = &app.channel;
    let chat = key("guided");
    channel.say(&chat, "u1", "write four files").await.unwrap();
    wait_transcript(channel, &chat, |t| t == ["All four files are written."]).await;
    for (name, content) in [("a", "A"), ("b", "B"), ("c", "C"), ("d", "D")] {
        let path = app.dir().join(format!("workspaces/fake/guided/{name}.txt"));
        assert_eq!(
            std::fs::read_to_string(&path).unwrap_or_default(),
            content,
            "{name}.txt"
        );
    }
    let first = &app.llm.requests()[0];
    assert!(
        first.get("tools").is_none(),
        "tools are described in the prompt, not sent natively"
    );
    assert!(
        first["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("<tool_call>")
    );
    for call in channel.writes().iter().filter(|c| c.op != Op::Delete) {
        for marker in ["<tool_call", "<invoke", "```tool_call", "\"content\""] {
            assert!(
                !call.text.contains(marker),
                "{marker} leaked into the draft: {:?}",
                call.text
            );
        }
    }
    app.shutdown().await;
}
