//! The replica streaming an answer fails mid-answer: killed (`kill -9`), another replica
//! takes the conversation over and finishes by editing the draft already posted; paused
//! (`SIGSTOP`) past its lease, it writes nothing once continued (the stand-in and the
//! database are checked), and nothing is answered twice.

use std::time::Duration;

use switchboard::provider::Role;
use switchboard_channel::ConversationKey;
use switchboard_standins::slack::{SlackMessage, dm_event};
use switchboard_standins::{Reply, eventually};

use super::harness::Cluster;

const FINAL: &str = "The finished answer, from the replica that took over.";

/// Queue a slow answer (the one interrupted) and the one a second attempt gets; send a DM
/// to `chat` through replica 0; wait until its draft is posted; the streaming replica.
async fn start_streaming(cluster: &Cluster, chat: &str) -> usize {
    let slow: String = (1..=60)
        .map(|i| format!("Part {i} of a slow answer. "))
        .collect();
    cluster
        .llm
        .push(Reply::paced(slow, 20, Duration::from_millis(150)));
    cluster.llm.push(Reply::text(FINAL));
    let event_id = format!("Ev0{chat}");
    let event = dm_event(&SlackMessage {
        event_id: &event_id,
        channel: chat,
        text: "tell me a long story",
        ..SlackMessage::default()
    });
    assert_eq!(cluster.post_slack(0, &event).await, 200);
    cluster
        .slack
        .wait_for_calls("chat.postMessage", 1, Duration::from_secs(20))
        .await;
    let key = format!("slack:{chat}");
    let what = format!("an owner of {key}");
    let owner = eventually(Duration::from_secs(10), &what, async || {
        cluster.conversation_owner(&key).await.ok_or(())
    })
    .await;
    cluster.index_of(&owner)
}

/// The one answer in `chat`: one message, the final text, reached by editing.
fn assert_one_final_answer(cluster: &Cluster, chat: &str) {
    let messages = cluster.slack.messages(chat);
    assert_eq!(messages.len(), 1, "{messages:#?}\n{}", cluster.logs());
    assert!(
        messages[0].text.contains(FINAL),
        "{messages:#?}\n{}",
        cluster.logs()
    );
    let posts = cluster.slack.calls_to("chat.postMessage");
    assert_eq!(posts.len(), 1, "a second message was posted: {posts:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replica_killed_mid_answer_is_finished_by_another_editing_the_same_draft() {
    let Some(mut cluster) = Cluster::start(3).await else {
        return;
    };
    let streaming = start_streaming(&cluster, "D0KILLED").await;
    cluster.replicas[streaming].kill();
    cluster.wait_answered(1, Duration::from_secs(60)).await;
    assert_one_final_answer(&cluster, "D0KILLED");
    assert!(cluster.slack.messages("D0KILLED")[0].edits >= 1);
    cluster.finish().await;
}

// On SIGCONT the paused replica's turn must not take another step: its lease timer fires only
// after the runtime turns its timer wheel, so the actor also reads the trust window before
// every poll of the turn (once, a stale draft edit went out ~8 ms before the timer).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replica_paused_past_its_lease_writes_nothing_when_it_continues() {
    let Some(cluster) = Cluster::start(3).await else {
        return;
    };
    let streaming = start_streaming(&cluster, "D0PAUSED").await;
    cluster.replicas[streaming].signal(libc::SIGSTOP);
    cluster.wait_answered(1, Duration::from_secs(60)).await;
    let before = cluster.slack.messages("D0PAUSED");
    let calls_before = cluster.slack.calls().len();
    cluster.replicas[streaming].signal(libc::SIGCONT);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        cluster.slack.messages("D0PAUSED"),
        before,
        "the paused replica wrote after it continued\n{}",
        cluster.logs()
    );
    let late = &cluster.slack.calls()[calls_before..];
    assert!(late.is_empty(), "late platform calls: {late:#?}");
    assert_one_final_answer(&cluster, "D0PAUSED");
    let history = cluster
        .store()
        .history(&ConversationKey::new("slack", "D0PAUSED"), 50)
        .await
        .expect("history");
    let answers: Vec<_> = history
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .collect();
    assert_eq!(answers.len(), 1, "{history:#?}");
    assert!(answers[0].content.contains(FINAL), "{history:#?}");
    cluster.finish().await;
}
