//! The Telegram leader `kill -9`ed: another replica polls within the lease TTL, the Bot API
//! stand-in never sees two `getUpdates` at once (a newer one would end the older with 409),
//! and every update is answered exactly once. The replica not leading reports "standby".

use std::time::{Duration, Instant};

use switchboard_standins::telegram::{FakeUser, UserMessage};

use super::harness::{Cluster, LEADER_TTL};
use super::{asked, not_once, tally};

const ROLE: &str = "telegram:telegram";

/// Each user writes one message in private; the markers.
fn write(cluster: &Cluster, round: &str, users: std::ops::Range<u64>) -> Vec<String> {
    users
        .map(|u| {
            let marker = format!("{round} u{u}");
            let from = FakeUser::human(1000 + u, &format!("user{u}"));
            cluster
                .telegram
                .inject(&UserMessage::private(from, &format!("echo {marker}")));
            marker
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn killing_the_telegram_leader_hands_polling_to_another_replica_within_the_lease_ttl() {
    let Some(mut cluster) = Cluster::start(3).await else {
        return;
    };
    let first = cluster
        .wait_leader(ROLE, None, Duration::from_secs(10))
        .await;
    let mut markers = write(&cluster, "before", 0..4);
    cluster.wait_answered(4, Duration::from_secs(60)).await;

    let killed = cluster.index_of(&first);
    let at = Instant::now();
    cluster.replicas[killed].kill();
    markers.extend(write(&cluster, "after", 0..4));
    let next = cluster
        .wait_leader(ROLE, Some(&first), LEADER_TTL + Duration::from_secs(5))
        .await;
    let took = at.elapsed();
    assert!(
        took <= LEADER_TTL + Duration::from_secs(2),
        "{next} took over after {took:?}"
    );
    cluster.wait_answered(8, Duration::from_secs(60)).await;
    let since_kill = cluster.telegram.calls_to("getUpdates");
    let unplaced: Vec<_> = since_kill
        .iter()
        .filter(|c| c.at >= tokio::time::Instant::from_std(at) && c.params.get("offset").is_none())
        .collect();
    assert!(
        unplaced.is_empty(),
        "the new leader polled without the saved offset: {unplaced:#?}"
    );

    let answers: Vec<String> = (0..4)
        .flat_map(|u| cluster.telegram.messages(1000 + u))
        .map(|m| m.text)
        .collect();
    let dups = not_once(&tally(&markers, &answers));
    assert!(
        dups.is_empty(),
        "answered other than once: {dups:?}\n{answers:#?}"
    );
    let asked_dups = not_once(&tally(&markers, &asked(&cluster.llm)));
    assert!(
        asked_dups.is_empty(),
        "LLM asked other than once: {asked_dups:?}"
    );
    let terminated: Vec<_> = cluster
        .telegram
        .calls_to("getUpdates")
        .into_iter()
        .filter(|c| {
            c.outcome
                .as_ref()
                .is_err_and(|e| e.contains("terminated by other"))
        })
        .collect();
    assert!(
        terminated.is_empty(),
        "two getUpdates overlapped: {terminated:#?}\n{}",
        cluster.logs()
    );

    let standby = (0..3)
        .find(|&i| i != killed && cluster.replicas[i].instance != next)
        .expect("a third replica");
    let ready = cluster.readyz(standby).await;
    let telegram = ready["checks"]
        .as_array()
        .and_then(|checks| checks.iter().find(|c| c["name"] == "channel:telegram"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(telegram["ok"], true, "{ready}");
    let detail = telegram["detail"].as_str().unwrap_or_default();
    assert!(detail.starts_with("standby"), "{ready}");
    assert!(detail.contains(&next), "{ready}");
    cluster.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_telegram_leader_stopped_with_sigterm_releases_its_lease_for_another_at_once() {
    let Some(mut cluster) = Cluster::start(2).await else {
        return;
    };
    let first = cluster
        .wait_leader(ROLE, None, Duration::from_secs(10))
        .await;
    let leader = cluster.index_of(&first);
    let at = Instant::now();
    cluster.replicas[leader].signal(libc::SIGTERM);
    let next = cluster
        .wait_leader(ROLE, Some(&first), LEADER_TTL + Duration::from_secs(5))
        .await;
    let took = at.elapsed();
    assert!(
        took < LEADER_TTL,
        "{next} took over after {took:?}, not at the release\n{}",
        cluster.logs()
    );
    cluster.replicas[leader]
        .wait_exit(Duration::from_secs(10))
        .await;
    let markers = write(&cluster, "drained", 0..2);
    cluster.wait_answered(2, Duration::from_secs(60)).await;
    let answers: Vec<String> = (0..2)
        .flat_map(|u| cluster.telegram.messages(1000 + u))
        .map(|m| m.text)
        .collect();
    let dups = not_once(&tally(&markers, &answers));
    assert!(dups.is_empty(), "answered other than once: {dups:?}");
    cluster.finish().await;
}
