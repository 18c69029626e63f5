//! Approvals across replicas: a turn suspended on replica A is one stored request (the
//! message's inbox row done in the same transaction), so after `kill -9` of A the button
//! pressed through replica B resumes it there and the tool runs exactly once; a request whose
//! prompt nobody saw is prompted by the replica that next holds the conversation; and a
//! request whose replica died still expires, by another replica's timer.

use std::time::Duration;

use serde_json::json;
use switchboard::store::Store;
use switchboard_standins::slack::{
    ButtonClick, FakeMessage, FakeSlack, SlackMessage, block_actions, dm_event,
};
use switchboard_standins::{Later, Reply, eventually};

use super::harness::Cluster;

/// Shell on, asked about (it writes a file), and one approver.
const POLICY: &str = "[tools]\nenabled = [\"shell\"]\n[policy]\napproval_timeout_secs = 300\n[policy.approvers]\nslack = [\"U0BOSS\"]\n";
const ANSWER: &str = "Appended the line.";

/// The approval prompts in `chat`: each message with buttons, and its first button's value.
fn prompts(slack: &FakeSlack, chat: &str) -> Vec<(FakeMessage, String)> {
    slack
        .messages(chat)
        .into_iter()
        .filter_map(|m| {
            let blocks = m.blocks.clone()?;
            let actions = blocks.as_array()?.iter().find(|b| b["type"] == "actions")?;
            let value = actions["elements"][0]["value"].as_str()?.to_owned();
            Some((m, value))
        })
        .collect()
}

/// Wait until `chat` shows `n` prompts; the newest.
async fn wait_prompts(cluster: &Cluster, chat: &str, n: usize) -> (FakeMessage, String) {
    let what = format!("{n} prompt(s) in {chat}");
    eventually(Duration::from_secs(30), &what, async || {
        let found = prompts(&cluster.slack, chat);
        if found.len() >= n {
            Ok(found.last().cloned().expect("n > 0"))
        } else {
            Err(cluster.and_logs(cluster.slack.messages(chat)))
        }
    })
    .await
}

/// Ask for a shell call in DM `chat` through replica 0; wait for its prompt; the replica
/// that suspended the turn (and posted the prompt).
async fn ask(cluster: &Cluster, chat: &str) -> usize {
    let command = format!("echo ran >> {chat}.txt");
    cluster
        .llm
        .push(Reply::tool_call("shell", json!({ "command": command })))
        .push(Reply::text(ANSWER));
    let event = dm_event(&SlackMessage {
        event_id: &format!("Ev{chat}"),
        channel: chat,
        user: "U0BOSS",
        text: "append a line to the file",
        ..SlackMessage::default()
    });
    assert_eq!(cluster.post_slack(0, &event).await, 200);
    wait_prompts(cluster, chat, 1).await;
    // Logged once the prompt's id is recorded, a moment after the stand-in shows it.
    eventually(
        Duration::from_secs(10),
        "a replica to suspend the turn",
        async || {
            (0..cluster.replicas.len())
                .find(|&i| cluster.replicas[i].log_contains("turn waits for approval"))
                .ok_or(Later(move || cluster.logs()))
        },
    )
    .await
}

/// U0BOSS presses "Approve once" on `prompt` through replica `i`.
async fn press(cluster: &Cluster, i: usize, chat: &str, prompt: &(FakeMessage, String)) {
    let trigger = format!("{i}.{}.press", prompt.0.ts);
    let click = block_actions(&ButtonClick {
        user: "U0BOSS",
        channel: chat,
        message_ts: &prompt.0.ts,
        thread_ts: None,
        value: &prompt.1,
        trigger_id: &trigger,
    });
    assert_eq!(cluster.post_interaction(i, &click).await, 200);
}

/// Successful shell runs in the audit.
async fn shell_runs(store: &dyn Store) -> usize {
    let entries = store.audit(None, 50).await.expect("audit reads");
    entries
        .iter()
        .filter(|e| e.tool == "shell" && e.status == "ok")
        .count()
}

/// The answer, once: one message holds it, the command ran once (audit and its file), and
/// the model was asked twice (the call, then the answer after it).
async fn assert_ran_once(cluster: &Cluster, chat: &str) {
    cluster.wait_answered(2, Duration::from_secs(60)).await;
    eventually(Duration::from_secs(20), "the answer", async || {
        let messages = cluster.slack.messages(chat);
        if messages.iter().any(|m| m.text.contains(ANSWER)) {
            Ok(())
        } else {
            Err(cluster.and_logs(messages))
        }
    })
    .await;
    let answers = cluster.slack.messages(chat);
    let answers: Vec<_> = answers.iter().filter(|m| m.text.contains(ANSWER)).collect();
    assert_eq!(answers.len(), 1, "{answers:#?}");
    assert_eq!(
        shell_runs(cluster.store().as_ref()).await,
        1,
        "{}",
        cluster.logs()
    );
    let file = find(&cluster.data_dir(), &format!("{chat}.txt")).expect("the file was written");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap_or_default(),
        "ran\n",
        "{file:?}"
    );
    assert_eq!(cluster.llm.requests().len(), 2, "{}", cluster.logs());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_approval_prompted_on_a_killed_replica_and_pressed_on_two_others_runs_once() {
    let Some(mut cluster) = Cluster::start_with(3, POLICY, false).await else {
        return;
    };
    let chat = "D0APPROVE";
    let prompter = ask(&cluster, chat).await;
    let prompt = wait_prompts(&cluster, chat, 1).await;
    cluster.replicas[prompter].kill();
    let others: Vec<usize> = (0..3).filter(|&i| i != prompter).collect();
    // Both survivors get a press at once: one decides, the other is told it is decided.
    tokio::join!(
        press(&cluster, others[0], chat, &prompt),
        press(&cluster, others[1], chat, &prompt)
    );
    assert_ran_once(&cluster, chat).await;
    cluster.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_approval_whose_prompt_nobody_saw_is_prompted_by_another_replica_and_runs_once() {
    let Some(mut cluster) = Cluster::start_with(3, POLICY, false).await else {
        return;
    };
    let chat = "D0UNSEEN";
    let prompter = ask(&cluster, chat).await;
    cluster.replicas[prompter].kill();
    // As if the replica had died between storing the request and posting its prompt.
    cluster
        .sql("UPDATE approvals SET prompt_ref = NULL WHERE status = 'pending'")
        .await;
    let prompt = wait_prompts(&cluster, chat, 2).await;
    let other = (0..3).find(|&i| i != prompter).expect("a survivor");
    press(&cluster, other, chat, &prompt).await;
    assert_ran_once(&cluster, chat).await;
    cluster.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_approval_whose_replica_died_expires_on_another() {
    let policy = POLICY.replace("approval_timeout_secs = 300", "approval_timeout_secs = 2");
    let Some(mut cluster) = Cluster::start_with(3, &policy, false).await else {
        return;
    };
    let chat = "D0EXPIRE";
    let prompter = ask(&cluster, chat).await;
    cluster.replicas[prompter].kill();
    eventually(
        Duration::from_secs(30),
        "the approval to expire",
        async || {
            let counts = cluster.store().approval_counts().await.expect("counts");
            if counts.expired == 1 {
                Ok(())
            } else {
                Err(cluster.and_logs(counts))
            }
        },
    )
    .await;
    cluster.wait_answered(2, Duration::from_secs(30)).await;
    assert_eq!(shell_runs(cluster.store().as_ref()).await, 0);
    cluster.finish().await;
}

/// The first file named `name` under `dir`, depth first.
fn find(dir: &std::path::Path, name: &str) -> Option<std::path::PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = find(&path, name) {
                return Some(found);
            }
        } else if entry.file_name() == name {
            return Some(path);
        }
    }
    None
}
