//! The database taken away from three replicas mid-load: first their `LISTEN` connections
//! are terminated by the server (`pg_terminate_backend`), then the TCP proxy in front of the
//! test's PostgreSQL is cut for about three seconds (open connections dropped, new ones
//! refused) and restored. Events refused meanwhile are retried as Slack retries them; every
//! stored event is answered exactly once, in order per conversation, once it is back.

use std::time::{Duration, Instant};

use switchboard_standins::slack::{SlackMessage, dm_event};
use switchboard_standins::{Later, eventually_every};

use super::harness::Cluster;
use super::{contains_word, not_once, tally};

const CONVERSATIONS: usize = 4;
/// Messages per conversation: 0-1 before the cut, 2 during it, 3 after it.
const PER_CONVERSATION: usize = 4;
/// How long the database stays away.
const CUT: Duration = Duration::from_secs(3);
/// How long a sender waits for a replica's answer (Slack gives up after 3 s and retries).
const SEND_WAIT: Duration = Duration::from_secs(2);

fn marker(c: usize, m: usize) -> String {
    format!("c{c} m{m}")
}

/// Send message `m` of conversation `c` to replica `i`; the status (0: no answer in time).
async fn send(cluster: &Cluster, c: usize, m: usize, i: usize) -> u16 {
    let (event_id, channel, ts) = (
        format!("Ev0CUT{c}M{m}"),
        format!("D0CUT{c}"),
        format!("1700000{c}00.00010{m}"),
    );
    let text = format!("please echo {}", marker(c, m));
    let event = dm_event(&SlackMessage {
        event_id: &event_id,
        channel: &channel,
        text: &text,
        ts: &ts,
        ..SlackMessage::default()
    });
    tokio::time::timeout(SEND_WAIT, cluster.post_slack(i, &event))
        .await
        .unwrap_or(0)
}

/// Send message `m` of conversation `c` until a replica stores it (as Slack retries), each
/// attempt to the next replica.
async fn send_until_stored(cluster: &Cluster, c: usize, m: usize) {
    let mut attempt = 0;
    let (within, every) = (Duration::from_secs(45), Duration::from_millis(200));
    eventually_every(
        within,
        every,
        &format!("c{c} m{m} to be stored"),
        async || {
            let status = send(cluster, c, m, (c + m + attempt) % 3).await;
            attempt += 1;
            if status == 200 {
                Ok(())
            } else {
                Err(Later(move || {
                    format!("status {status}\n{}", cluster.logs())
                }))
            }
        },
    )
    .await;
}

/// Terminate every replica's `LISTEN` connection from the server side; how many.
async fn terminate_listeners(cluster: &Cluster) -> u64 {
    cluster
        .sql(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid() \
             AND query ILIKE 'LISTEN%'",
        )
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn listeners_terminated_and_the_database_cut_mid_load_lose_nothing_and_answer_once() {
    let Some(cluster) = Cluster::start_with(3, "", true).await else {
        return;
    };
    let proxy = cluster.proxy.as_ref().expect("proxied");
    for m in 0..2 {
        for c in 0..CONVERSATIONS {
            send_until_stored(&cluster, c, m).await;
        }
        if m == 0 {
            let terminated = terminate_listeners(&cluster).await;
            assert!(terminated >= 3, "{terminated} listeners terminated");
        }
    }
    proxy.cut();
    let cut_at = Instant::now();
    let refused: Vec<usize> = {
        let sends = (0..CONVERSATIONS).map(|c| send(&cluster, c, 2, c % 3));
        let statuses = futures::future::join_all(sends).await;
        (0..CONVERSATIONS).filter(|&c| statuses[c] != 200).collect()
    };
    assert!(!refused.is_empty(), "no event was refused while cut");
    tokio::time::sleep(CUT.saturating_sub(cut_at.elapsed())).await;
    proxy.restore();
    for &c in &refused {
        send_until_stored(&cluster, c, 2).await;
    }
    for c in 0..CONVERSATIONS {
        send_until_stored(&cluster, c, 3).await;
    }
    let total = i64::try_from(CONVERSATIONS * PER_CONVERSATION).unwrap_or(i64::MAX);
    cluster.wait_answered(total, Duration::from_secs(90)).await;

    let markers: Vec<String> = (0..CONVERSATIONS)
        .flat_map(|c| (0..PER_CONVERSATION).map(move |m| marker(c, m)))
        .collect();
    let mut answered = Vec::new();
    for c in 0..CONVERSATIONS {
        let texts: Vec<String> = cluster
            .slack
            .messages(&format!("D0CUT{c}"))
            .into_iter()
            .map(|m| m.text)
            .collect();
        let expected: Vec<String> = (0..PER_CONVERSATION).map(|m| marker(c, m)).collect();
        let order: Vec<usize> = texts
            .iter()
            .filter_map(|t| expected.iter().position(|e| contains_word(t, e)))
            .collect();
        assert_eq!(
            order,
            (0..PER_CONVERSATION).collect::<Vec<_>>(),
            "conversation {c} answered out of order or not once: {texts:#?}\n{}",
            cluster.logs()
        );
        answered.extend(texts);
    }
    let dups = not_once(&tally(&markers, &answered));
    assert!(dups.is_empty(), "answers posted other than once: {dups:?}");
    cluster.finish().await;
}
