//! Slack events spread over all three replicas' ports, some sent to two replicas at once:
//! each is answered exactly once, and each conversation's answers come in send order.

use std::time::Duration;

use switchboard_standins::slack::{SlackMessage, dm_event};

use super::harness::Cluster;
use super::{asked, not_once, tally};

const CONVERSATIONS: usize = 6;
const PER_CONVERSATION: usize = 5;

fn marker(c: usize, m: usize) -> String {
    format!("c{c} m{m}")
}

/// Send conversation `c`'s messages one after another (so its order is the send order),
/// each to a replica chosen by position, every other one to two replicas at once.
async fn send_conversation(cluster: &Cluster, c: usize) {
    let channel = format!("D0CONV{c}");
    for m in 0..PER_CONVERSATION {
        let (event_id, ts, text) = (
            format!("Ev0C{c}M{m}"),
            format!("1700000{c}00.00010{m}"),
            format!("please echo {}", marker(c, m)),
        );
        let event = dm_event(&SlackMessage {
            event_id: &event_id,
            channel: &channel,
            text: &text,
            ts: &ts,
            ..SlackMessage::default()
        });
        let first = (c + m) % 3;
        if (c + m).is_multiple_of(2) {
            let second = (first + 1) % 3;
            let (a, b) = tokio::join!(
                cluster.post_slack(first, &event),
                cluster.post_slack(second, &event)
            );
            assert_eq!(
                (a, b),
                (200, 200),
                "{event_id} to replicas {first} and {second}"
            );
        } else {
            let status = cluster.post_slack(first, &event).await;
            assert_eq!(status, 200, "{event_id} to replica {first}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn slack_events_spread_over_three_replicas_are_each_answered_once_and_in_order() {
    let Some(cluster) = Cluster::start(3).await else {
        return;
    };
    let sends = (0..CONVERSATIONS).map(|c| send_conversation(&cluster, c));
    futures::future::join_all(sends).await;
    let total = i64::try_from(CONVERSATIONS * PER_CONVERSATION).unwrap_or(i64::MAX);
    cluster.wait_answered(total, Duration::from_secs(90)).await;

    let markers: Vec<String> = (0..CONVERSATIONS)
        .flat_map(|c| (0..PER_CONVERSATION).map(move |m| marker(c, m)))
        .collect();
    let llm_dups = not_once(&tally(&markers, &asked(&cluster.llm)));
    assert!(
        llm_dups.is_empty(),
        "LLM asked other than once: {llm_dups:?}"
    );
    let mut answered = Vec::new();
    for c in 0..CONVERSATIONS {
        let texts: Vec<String> = cluster
            .slack
            .messages(&format!("D0CONV{c}"))
            .into_iter()
            .map(|m| m.text)
            .collect();
        let expected: Vec<String> = (0..PER_CONVERSATION).map(|m| marker(c, m)).collect();
        let order: Vec<usize> = texts
            .iter()
            .filter_map(|t| expected.iter().position(|e| super::contains_word(t, e)))
            .collect();
        assert_eq!(
            order,
            (0..PER_CONVERSATION).collect::<Vec<_>>(),
            "conversation {c} answered out of order or not once: {texts:#?}"
        );
        answered.extend(texts);
    }
    let dups = not_once(&tally(&markers, &answered));
    assert!(dups.is_empty(), "answers posted other than once: {dups:?}");
    cluster.finish().await;
}
