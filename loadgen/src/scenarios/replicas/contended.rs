//! Contended conversations: every conversation's messages alternate between two replicas,
//! so events are stored on the replica that does not hold the lease (see the parent module).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::{Cluster, NAME, STALL, calls_by_channel};
use crate::report::Measurement;
use crate::scenarios::{Env, note};
use crate::slack_load::{Dm, Sent, send_spread};
use crate::stats::{ms, percentile};

/// Conversations of a contended run: odd, so that message `i`, sent to replica `i % 2`,
/// alternates replicas within each conversation.
const CONTENDED_CONVERSATIONS: u64 = 15;
/// Messages per conversation in a contended run.
const CONTENDED_MESSAGES: u64 = 20;
/// Their rate over all conversations: each conversation gets one every 50 ms, so the next
/// message is often stored on one replica while the other holds the lease.
const CONTENDED_RATE: f64 = 300.0;
/// A message answered later than this waited for a wake-up that did not come at once.
const STALLED_MS: f64 = 1000.0;

/// Contended conversations: every conversation's messages alternate between A and B at a
/// 50 ms interval, so events land on the replica that does not hold the lease. The holder
/// takes what it finds before it lets the lease go; an event stored after its last look
/// waits for the release's `NOTIFY` (listener on) or for the jittered poll or the lease's
/// expiry (`listen = false`): those show as stalls. Latency = message sent → first Slack
/// call in its channel after it.
pub(super) async fn contended(env: &Env, listen: bool) -> anyhow::Result<Vec<Measurement>> {
    let cluster = Cluster::start(env, 2, listen).await?;
    let total = CONTENDED_CONVERSATIONS * CONTENDED_MESSAGES;
    let sent = send_spread(&env.client, &cluster.urls(), total, CONTENDED_RATE, |i| {
        let (conversation, k) = (i % CONTENDED_CONVERSATIONS, i / CONTENDED_CONVERSATIONS);
        Dm {
            event_id: format!("EvcC{conversation:04}_{k:04}"),
            ts: format!("{}.{conversation:06}", 1_700_000_300 + k),
            ..Dm::first('c', conversation)
        }
    })
    .await;
    let accepted: Vec<&Sent> = sent.iter().filter(|s| s.status == Some(200)).collect();
    // Batches may answer several messages in one turn: wait for a call after each
    // conversation's last message rather than for a turn count.
    let started = Instant::now();
    let mut samples = Vec::new();
    while started.elapsed() < STALL {
        let calls = calls_by_channel(&cluster);
        samples = answered_latencies(&accepted, &calls);
        if samples.len() == accepted.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let state = if listen {
        "listener on"
    } else {
        "listen = false, poll only"
    };
    let p50 = percentile(&samples, 50.0).unwrap_or(f64::NAN);
    let p99 = percentile(&samples, 99.0).unwrap_or(f64::NAN);
    let max = samples.iter().copied().fold(f64::NAN, f64::max);
    let stalled = samples.iter().filter(|l| **l > STALLED_MS).count();
    let unanswered = sent.len() - samples.len();
    note(format!(
        "{NAME}: {state}: contended, {} sent, {unanswered} unanswered, p50 {p50:.1} ms, p99 {p99:.1} ms, max {max:.0} ms, {stalled} over {STALLED_MS:.0} ms; turns per replica {:?}",
        sent.len(),
        cluster.turns().await?
    ));
    let what = format!("contended conversations, messages alternating A/B, {state}");
    Ok(vec![
        Measurement::new(NAME, format!("{what}: → first Slack call p50"), "ms", p50),
        Measurement::new(NAME, format!("{what}: → first Slack call p99"), "ms", p99),
        Measurement::new(NAME, format!("{what}: → first Slack call max"), "ms", max),
        Measurement::new(
            NAME,
            format!("{what}: answered after more than 1 s (of {total})"),
            "",
            stalled as f64,
        ),
        Measurement::new(NAME, format!("{what}: unanswered"), "", unanswered as f64),
    ])
}

/// Latency of each message to the first Slack call in its channel at or after it was sent,
/// for the messages that have one.
fn answered_latencies(sent: &[&Sent], calls: &HashMap<String, Vec<Instant>>) -> Vec<f64> {
    sent.iter()
        .filter_map(|s| {
            let at = calls.get(&s.channel)?.iter().find(|t| **t >= s.at)?;
            Some(ms(at.duration_since(s.at)))
        })
        .collect()
}
