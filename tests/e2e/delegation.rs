//! The `delegate` tool end to end: sub-tasks run in parallel as child agent loops inside the
//! turn, with the parent's tools at most, through the same gate, sandbox and audit; a child's
//! approval asks in the chat and survives a restart; `/stop`, budgets and the limits hold; the
//! draft shows a line per sub-task and `/usage` counts the children.

use std::time::Duration;

use serde_json::{Value, json};
use switchboard_channel::ConversationKey;
use switchboard_standins::{Reply, eventually};

use crate::approvals::{buttons_channel, prompt};
use crate::audit::wait_audit;
use crate::helpers::{TestApp, WAIT, key, wait_inbox_idle, wait_transcript};

/// Guarded: read-only shell lines run, anything else asks an approver (`admin`) or the
/// requester in a private chat.
const CONFIG: &str = "[tools]\nenabled = [\"shell\", \"file_read\", \"delegate\"]\n[policy]\nmode = \"guarded\"\napproval_timeout_secs = 300\n[policy.approvers]\nfake = [\"admin\"]\n";

/// Every call runs unasked (the gate still judges and audits each).
const UNASKED: &str = "[tools]\nenabled = [\"shell\", \"file_read\", \"delegate\"]\n[policy]\nmode = \"autonomous\"\n";

async fn spawn(extra: &str) -> TestApp {
    TestApp::spawn_on(buttons_channel(), &format!("{CONFIG}{extra}")).await
}

/// A `delegate` call handing out one task per entry of `tasks`.
fn delegate(tasks: &[&str]) -> Reply {
    let tasks: Vec<Value> = tasks.iter().map(|t| json!({ "task": t })).collect();
    Reply::tool_call("delegate", json!({ "tasks": tasks }))
}

/// `text`, after `wait` (so replies that follow one another overlap).
fn slow_text(text: &str, wait: Duration) -> Reply {
    Reply::Stream {
        text: text.into(),
        tool_calls: Vec::new(),
        chunk_chars: 4,
        first_delay: wait,
        delay: Duration::from_millis(10),
        max_tokens: false,
    }
}

/// The messages of the last request the model received.
fn last_request(app: &TestApp) -> Vec<Value> {
    let requests = app.llm.requests();
    let last = requests.last().expect("a request");
    last["messages"].as_array().cloned().unwrap_or_default()
}

/// The tool names offered in every request whose last user message contains `marker`.
fn tools_offered_to(app: &TestApp, marker: &str) -> Vec<Vec<String>> {
    app.llm
        .requests()
        .iter()
        .filter(|r| {
            let messages = r["messages"].as_array().cloned().unwrap_or_default();
            let user = messages.iter().rev().find(|m| m["role"] == "user");
            user.is_some_and(|m| m["content"].as_str().unwrap_or("").contains(marker))
        })
        .map(|r| {
            let tools = r["tools"].as_array().cloned().unwrap_or_default();
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .collect()
}

/// A sub-task's workspace: the conversation's sibling.
fn sub_task_file(app: &TestApp, chat: &str, n: usize, name: &str) -> std::path::PathBuf {
    let dir = format!("workspaces/fake/{chat}~sub{n}");
    app.config.gateway.data_dir.join(dir).join(name)
}

#[tokio::test]
async fn three_sub_tasks_run_in_parallel_and_the_turn_answers_with_their_results() {
    let app = TestApp::spawn_on(buttons_channel(), UNASKED).await;
    let vendors = ["alpha", "beta", "gamma"];
    let tasks: Vec<String> = vendors
        .iter()
        .map(|v| format!("study vendor-{v}"))
        .collect();
    let tasks: Vec<&str> = tasks.iter().map(String::as_str).collect();
    app.llm.push(delegate(&tasks));
    for v in vendors {
        let marker = format!("vendor-{v}");
        let shell = Reply::tool_call("shell", json!({ "command": format!("echo {v}-facts") }));
        let answer = slow_text(&format!("{v} is fine"), Duration::from_millis(400));
        app.llm.push_for(&marker, shell).push_for(&marker, answer);
    }
    app.llm.push(Reply::text("All three compared."));
    let chat = key("three");
    app.channel
        .say(&chat, "alice", "compare the vendors")
        .await
        .unwrap();
    wait_transcript(&app.channel, &chat, |t| {
        t.last().is_some_and(|m| m == "All three compared.")
    })
    .await;
    assert_eq!(app.llm.max_in_flight(), 3, "the three answers overlapped");
    let result = last_request(&app)
        .iter()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or("").to_owned())
        .expect("the delegate call's result");
    for (n, v) in vendors.iter().enumerate() {
        assert!(
            result.contains(&format!(
                "## Sub-task {}: study vendor-{v}\n{v} is fine",
                n + 1
            )),
            "{result}"
        );
    }
    audited_under_the_turn(&app, &chat).await;
    drafted_and_counted(&app, &chat).await;
}

/// Each child's shell call of [`three_sub_tasks_run_in_parallel_and_the_turn_answers_with_their_results`]
/// was audited under the turn, its call id naming the chain: delegate call → sub-task → call.
async fn audited_under_the_turn(app: &TestApp, chat: &ConversationKey) {
    let audit = wait_audit(app, chat, 4).await;
    wait_inbox_idle(&app.store()).await;
    let inbox = audit[0].inbox_id;
    assert!(audit.iter().all(|a| a.inbox_id == inbox), "{audit:#?}");
    let delegate_id = "call_0_delegate";
    for n in 1..=3 {
        let chained = format!("{delegate_id}/{n}/call_0_shell");
        let row = audit.iter().find(|a| a.call_id == chained);
        let row = row.unwrap_or_else(|| panic!("no audit row {chained}: {audit:#?}"));
        assert_eq!((row.tool.as_str(), row.status.as_str()), ("shell", "ok"));
        assert!(row.output.contains("-facts"), "{row:?}");
    }
    assert!(
        audit
            .iter()
            .any(|a| a.call_id == delegate_id && a.tool == "delegate")
    );
}

/// The draft of the same test showed a line per sub-task while they ran, and `/usage` counts
/// the children's runs (three shells and the delegation) and tokens.
async fn drafted_and_counted(app: &TestApp, chat: &ConversationKey) {
    let writes = app.channel.writes();
    for n in 1..=3 {
        let line = format!("🧩 Sub-task {n}: study vendor-");
        assert!(
            writes
                .iter()
                .any(|w| &w.key == chat && w.text.contains(&line)),
            "no draft line for sub-task {n}: {writes:#?}"
        );
    }
    app.channel.say(chat, "alice", "/usage").await.unwrap();
    let t = wait_transcript(&app.channel, chat, |t| {
        t.last().is_some_and(|m| m.contains("Usage today"))
    })
    .await;
    assert!(t.last().unwrap().contains(" tokens, 4 tool runs"), "{t:?}");
    let child_requests = 6;
    assert_eq!(app.llm.requests().len(), 2 + child_requests);
}

#[tokio::test]
async fn a_sub_task_gets_only_the_parents_tools_whatever_its_profile_or_the_model_asks() {
    // The `wide` profile offers the shell and file writes; this conversation has neither.
    let config = "[tools]\nenabled = [\"file_read\", \"delegate\"]\n[policy]\nmode = \"autonomous\"\n[agents.wide]\ntools = [\"shell\", \"file_read\", \"file_write\"]\nsystem_prompt = \"You are wide.\"\n";
    let app = TestApp::spawn_on(buttons_channel(), config).await;
    let asks_wide = json!({"tasks": [{"task": "wide-job: look around", "profile": "wide"}]});
    app.llm.push(Reply::tool_call("delegate", asks_wide));
    app.llm
        .push_for(
            "wide-job",
            Reply::tool_call("shell", json!({"command": "touch escaped.txt"})),
        )
        .push_for("wide-job", Reply::text("I could only read."));
    // The model then asks for a tool the conversation lacks: refused before any child runs.
    let asks_shell = json!({"tasks": [{"task": "shell-job", "tools": ["shell"]}]});
    app.llm.push(Reply::tool_call("delegate", asks_shell));
    app.llm.push(Reply::text("Done narrowly."));
    let chat = key("narrow");
    app.channel.say(&chat, "alice", "go wide").await.unwrap();
    wait_transcript(&app.channel, &chat, |t| {
        t.last().is_some_and(|m| m == "Done narrowly.")
    })
    .await;
    let offered = tools_offered_to(&app, "wide-job");
    assert!(!offered.is_empty());
    for tools in &offered {
        assert_eq!(
            tools,
            &["file_read"],
            "the child saw only the parent's tools"
        );
    }
    assert!(
        tools_offered_to(&app, "shell-job").is_empty(),
        "never started"
    );
    let messages = last_request(&app);
    let results: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(
        results[0].contains("I could only read."),
        "the child's shell call was refused and it answered: {results:?}"
    );
    assert!(
        results[1].contains("`shell` is not one of your tools"),
        "{results:?}"
    );
    assert!(!sub_task_file(&app, "narrow", 1, "escaped.txt").exists());
}

#[tokio::test]
async fn the_limits_hold_two_at_a_time_and_no_delegation_below_a_sub_task() {
    let app = spawn("[delegation]\nmax_parallel = 2\n").await;
    app.llm.push(delegate(&["lim-1", "lim-2", "lim-3"]));
    for marker in ["lim-1", "lim-2", "lim-3"] {
        let answer = slow_text(&format!("{marker} done"), Duration::from_millis(300));
        app.llm.push_for(marker, answer);
    }
    app.llm.push(Reply::text("Limited."));
    let chat = key("limits");
    app.channel.say(&chat, "alice", "go").await.unwrap();
    wait_transcript(&app.channel, &chat, |t| {
        t.last().is_some_and(|m| m == "Limited.")
    })
    .await;
    assert_eq!(app.llm.max_in_flight(), 2, "at most two sub-tasks at once");
    for marker in ["lim-1", "lim-2", "lim-3"] {
        for tools in tools_offered_to(&app, marker) {
            assert!(!tools.iter().any(|t| t == "delegate"), "{tools:?}");
            assert!(tools.iter().any(|t| t == "shell"), "{tools:?}");
        }
    }
}

#[tokio::test]
async fn a_sub_tasks_shell_call_asks_in_the_chat_survives_a_crash_and_runs_once() {
    let builder = TestApp::builder().fake(buttons_channel()).config(CONFIG);
    let mut app = builder.killable().start().await;
    app.llm.push(delegate(&["logger-job: log a line"]));
    app.llm.push_for(
        "logger-job",
        Reply::tool_call("shell", json!({"command": "echo run >> log.txt"})),
    );
    let chat = key("crash");
    let channel = std::sync::Arc::clone(&app.channel);
    channel.say(&chat, "alice", "log it").await.unwrap();
    let (once, _, _) = prompt(&channel, &chat).await;
    let t = channel.transcript(&chat);
    let asked = t.iter().find(|m| m.contains("Approval needed")).unwrap();
    assert!(
        asked.contains("sub-task 1") && asked.contains("logger-job"),
        "{asked}"
    );
    assert!(asked.contains("echo run >> log.txt"), "{asked}");
    let db = switchboard::store::connect(&app.config.gateway.database_url)
        .await
        .unwrap();
    wait_inbox_idle(&db).await;
    app.kill();
    app.start().await;
    app.llm.push_for("logger-job", Reply::text("Logged it."));
    app.llm.push(Reply::text("Resumed after restart."));
    app.channel.press(&chat, "alice", &once).await.unwrap();
    app.channel.press(&chat, "alice", &once).await.unwrap();
    wait_transcript(&app.channel, &chat, |t| {
        t.last().is_some_and(|m| m == "Resumed after restart.")
    })
    .await;
    wait_inbox_idle(&app.store()).await;
    let log = std::fs::read_to_string(sub_task_file(&app, "crash", 1, "log.txt")).unwrap();
    assert_eq!(
        log, "run\n",
        "the child's call ran exactly once, in its workspace"
    );
    assert!(app.store().pending_approvals().await.unwrap().is_empty());
    let answered = app.channel.transcript(&chat);
    let finals = answered
        .iter()
        .filter(|m| *m == "Resumed after restart.")
        .count();
    assert_eq!(finals, 1, "{answered:?}");
    let result = last_request(&app)
        .iter()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or("").to_owned());
    assert!(result.is_some_and(|r| r.contains("Logged it.")));
    let audit = wait_audit(&app, &chat, 2).await;
    let shell = audit.iter().find(|a| a.tool == "shell").expect("audited");
    assert_eq!(shell.call_id, "call_0_delegate/1/call_0_shell");
    assert_eq!(shell.decided_by.as_deref(), Some("alice"));
    app.shutdown().await;
}

#[tokio::test]
async fn two_sub_tasks_wait_at_once_and_each_prompt_decides_only_its_own() {
    let app = spawn("").await;
    app.llm.push(delegate(&["left-job", "right-job"]));
    for (marker, file) in [("left-job", "left.txt"), ("right-job", "right.txt")] {
        let write = json!({"command": format!("echo x > {file}")});
        app.llm
            .push_for(marker, Reply::tool_call("shell", write))
            .push_for(marker, Reply::text(format!("{marker} finished")));
    }
    app.llm.push(Reply::text("Both settled."));
    let chat = key("two");
    app.channel.say(&chat, "alice", "both").await.unwrap();
    let prompts = |t: &[String]| t.iter().filter(|m| m.contains("Approval needed")).count();
    let t = wait_transcript(&app.channel, &chat, |t| prompts(t) == 2).await;
    assert_eq!(
        t[0], "⏸ Waiting for approval: `shell` (sub-task 1), `shell` (sub-task 2)…",
        "the draft says which sub-tasks wait"
    );
    let pending = app.store().pending_approvals().await.unwrap();
    assert_eq!(pending.len(), 2);
    let reason_of = |marker: &str| pending.iter().find(|a| a.reason.contains(marker)).unwrap();
    let (left, right) = (reason_of("left-job"), reason_of("right-job"));
    // Deny the right one: the left still waits, and the turn has not answered.
    let deny = payload_like(&app, &chat, right.id.as_str(), "Deny").expect("right's buttons");
    app.channel.press(&chat, "alice", &deny).await.unwrap();
    eventually(WAIT, "one approval left", async || {
        let n = app.store().pending_approvals().await.unwrap().len();
        if n == 1 { Ok(()) } else { Err(n) }
    })
    .await;
    assert!(
        !app.channel
            .transcript(&chat)
            .iter()
            .any(|m| m == "Both settled.")
    );
    let once = payload_like(&app, &chat, left.id.as_str(), "Approve once").expect("left's buttons");
    app.channel.press(&chat, "alice", &once).await.unwrap();
    wait_transcript(&app.channel, &chat, |t| {
        t.last().is_some_and(|m| m == "Both settled.")
    })
    .await;
    assert!(sub_task_file(&app, "two", 1, "left.txt").exists());
    assert!(!sub_task_file(&app, "two", 2, "right.txt").exists());
    let result = last_request(&app)
        .iter()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or("").to_owned())
        .unwrap();
    assert!(result.contains("left-job finished") && result.contains("right-job finished"));
}

/// The payload of the button labelled `label` on the prompt of approval `id`.
fn payload_like(app: &TestApp, chat: &ConversationKey, id: &str, label: &str) -> Option<String> {
    app.channel
        .writes()
        .into_iter()
        .filter(|w| &w.key == chat)
        .flat_map(|w| w.buttons)
        .find(|b| b.label == label && b.payload.contains(id))
        .map(|b| b.payload)
}

/// How many of the three sleeps of [`slash_stop_during_the_sub_tasks_ends_them_all`] run.
fn sleeps_running() -> usize {
    (0..3)
        .filter(|n| {
            let line = format!("sleep\x0030.3{n}");
            !crate::sandbox::running_with_cmdline(&line).is_empty()
        })
        .count()
}

#[tokio::test]
async fn slash_stop_during_the_sub_tasks_ends_them_all() {
    let config = "[tools]\nenabled = [\"shell\", \"delegate\"]\n[policy]\nmode = \"autonomous\"\n";
    let app = TestApp::spawn_on(buttons_channel(), config).await;
    let tasks = ["sleep-1", "sleep-2", "sleep-3"];
    app.llm.push(delegate(&tasks));
    for (n, marker) in tasks.iter().enumerate() {
        let command = format!("exec sleep 30.3{n}");
        let call = Reply::tool_call("shell", json!({ "command": command }));
        app.llm.push_for(marker, call);
    }
    let chat = key("stop");
    app.channel
        .say(&chat, "alice", "sleep thrice")
        .await
        .unwrap();
    eventually(
        WAIT,
        "the three sleeps to start",
        async || match sleeps_running() {
            3 => Ok(()),
            n => Err(n),
        },
    )
    .await;
    let started = std::time::Instant::now();
    app.channel.say(&chat, "alice", "/stop").await.unwrap();
    wait_transcript(&app.channel, &chat, |t| {
        t.last().is_some_and(|m| m == "⏹ Stopped.")
    })
    .await;
    eventually(WAIT, "every sleep to end", async || {
        match sleeps_running() {
            0 => Ok(()),
            n => Err(n),
        }
    })
    .await;
    assert!(started.elapsed() < Duration::from_secs(10), "stop waited");
    wait_inbox_idle(&app.store()).await;
    let requests = app.llm.requests().len();
    assert_eq!(requests, 4, "nothing asked the model after the stop");
}

#[tokio::test]
async fn a_gateway_killed_while_sub_tasks_run_answers_the_turn_once_after_restart() {
    let builder = TestApp::builder().fake(buttons_channel()).config(CONFIG);
    let mut app = builder.killable().start().await;
    app.llm.push(delegate(&["slow-a", "slow-b"]));
    for marker in ["slow-a", "slow-b"] {
        app.llm
            .push_for(marker, Reply::Stall(Duration::from_secs(20)));
    }
    let chat = key("rerun");
    let channel = std::sync::Arc::clone(&app.channel);
    channel.say(&chat, "alice", "two slow ones").await.unwrap();
    // Killed while both children wait for their model.
    app.llm.wait_for_requests(3, WAIT).await;
    app.kill();
    // The restarted turn runs again from its stored event: the children run anew.
    app.llm.push(delegate(&["slow-a", "slow-b"]));
    for marker in ["slow-a", "slow-b"] {
        app.llm
            .push_for(marker, Reply::text(format!("{marker} ok")));
    }
    app.llm.push(Reply::text("Answered once."));
    app.start().await;
    wait_transcript(&app.channel, &chat, |t| {
        t.last().is_some_and(|m| m == "Answered once.")
    })
    .await;
    wait_inbox_idle(&app.store()).await;
    let t = app.channel.transcript(&chat);
    assert_eq!(
        t.iter().filter(|m| *m == "Answered once.").count(),
        1,
        "{t:?}"
    );
    let history = app.store().history(&chat, 20).await.unwrap();
    let users = history
        .iter()
        .filter(|m| m.content == "two slow ones")
        .count();
    assert_eq!(users, 1, "stored once: {history:#?}");
    app.shutdown().await;
}

#[tokio::test]
async fn a_budget_the_sub_tasks_use_up_stops_the_turn_cleanly() {
    let config = format!("{UNASKED}[budgets]\nconversation_tool_runs_per_day = 2\n");
    let app = TestApp::spawn_on(buttons_channel(), &config).await;
    app.llm.push(delegate(&["spend-1", "spend-2", "spend-3"]));
    for (n, marker) in ["spend-1", "spend-2", "spend-3"].iter().enumerate() {
        let call = Reply::tool_call("shell", json!({"command": format!("echo {n}")}));
        app.llm
            .push_for(marker, call)
            .push_for(marker, slow_text("spent", Duration::from_millis(300)));
    }
    app.llm.push(Reply::text("Never shown."));
    let chat = key("budget");
    app.channel.say(&chat, "alice", "spend").await.unwrap();
    let t = wait_transcript(&app.channel, &chat, |t| {
        t.last().is_some_and(|m| m.contains("🛑"))
    })
    .await;
    assert!(t.last().unwrap().contains("tool-run budget"), "{t:?}");
    wait_inbox_idle(&app.store()).await;
    assert!(!t.iter().any(|m| m.contains("Never shown.")));
    let history = app.store().history(&chat, 20).await.unwrap();
    let delegate_result = history
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("call_0_delegate"));
    assert!(
        delegate_result.is_some_and(|m| m.content.contains("cancelled")),
        "the stored history stays usable: {history:#?}"
    );
}

#[tokio::test]
async fn a_long_sub_task_result_is_offloaded_to_the_conversations_workspace() {
    let app = spawn("[memory]\noffload_threshold_bytes = 2048\n").await;
    app.llm.push(delegate(&["long-job"]));
    let long: String = (1..=2000).map(|i| format!("line {i}\n")).collect();
    app.llm.push_for("long-job", Reply::text(long.clone()));
    app.llm.push(Reply::text("Read the summary."));
    let chat = key("long");
    app.channel.say(&chat, "alice", "go long").await.unwrap();
    wait_transcript(&app.channel, &chat, |t| {
        t.last().is_some_and(|m| m == "Read the summary.")
    })
    .await;
    let result = last_request(&app)
        .iter()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or("").to_owned())
        .unwrap();
    assert!(result.len() < 4096, "bounded: {} bytes", result.len());
    let at = result
        .find("tool-output/delegate-")
        .expect("the file is named");
    let path = &result[at..at + result[at..].find('`').unwrap()];
    let file = app
        .config
        .gateway
        .data_dir
        .join("workspaces/fake/long")
        .join(path);
    let saved = std::fs::read_to_string(file).unwrap();
    assert!(saved.contains("line 1\n") && saved.contains("line 2000"));
}
