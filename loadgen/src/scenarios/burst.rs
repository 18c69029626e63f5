//! Burst: N Slack DM conversations arrive at once, sent by a fixed number of concurrent
//! senders as fast as the gateway acknowledges them (instant echo LLM). Every conversation's
//! actor stays live until all are answered, so the peak is N live conversations plus what a
//! burst holds in flight; then RSS once they retired and after a further wait.

use std::time::{Duration, Instant};

use super::{Env, launch, mb, note, wait_turns};
use crate::report::{Measurement, Target};
use crate::slack_load::{Dm, events_url, send_by_workers};

const NAME: &str = "burst";
/// How long RSS is read after the last conversation retired.
const AFTER_RETIRED: Duration = Duration::from_secs(30);

/// One run.
pub async fn run(env: &Env) -> anyhow::Result<Vec<Measurement>> {
    let s = &env.settings;
    let running = launch(env, s.burst_idle_secs).await?;
    let gateway = &running.gateway;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = gateway.rss_kb()?;
    let n = s.burst_conversations;
    let url = events_url(&gateway.base_url());

    let started = Instant::now();
    let sent = send_by_workers(&env.client, &url, n, s.burst_senders, |i| Dm::first('b', i)).await;
    let send_secs = started.elapsed().as_secs_f64();
    let refused = sent.iter().filter(|x| x.status != Some(200)).count();
    let answered = wait_turns(gateway, n as f64, Duration::from_secs(60)).await? as u64;
    let answer_secs = started.elapsed().as_secs_f64();
    let live = gateway
        .metric("switchboard_active_conversations", "")
        .await?;
    let peak = gateway.peak_rss_kb()?;
    // Mostly sockets: over HTTP/1.1 each LLM and Slack call in flight has a connection.
    let descriptors = open_descriptors(gateway.pid());
    note(format!(
        "{NAME}: {n} sent by {} senders in {send_secs:.1} s ({refused} not 200), {answered} \
         answered after {answer_secs:.1} s, {live} live; peak {:.1} MB",
        s.burst_senders,
        mb(peak)
    ));

    let retire_by = Duration::from_secs(s.burst_idle_secs + 30);
    let waited = Instant::now();
    let mut live_now = live;
    while live_now > 0.0 && waited.elapsed() < retire_by {
        tokio::time::sleep(Duration::from_secs(1)).await;
        live_now = gateway
            .metric("switchboard_active_conversations", "")
            .await?;
    }
    let retired = gateway.rss_kb()?;
    let descriptors_retired = open_descriptors(gateway.pid());
    tokio::time::sleep(AFTER_RETIRED).await;
    let settled = gateway.rss_kb()?;
    note(format!(
        "{NAME}: {live_now} live after {:.0} s; RSS {:.1} MB then, {:.1} MB {} s later",
        waited.elapsed().as_secs_f64() - AFTER_RETIRED.as_secs_f64(),
        mb(retired),
        mb(settled),
        AFTER_RETIRED.as_secs()
    ));

    let per_conversation_kb = (peak.saturating_sub(before)) as f64 * 1.024 / n as f64;
    Ok(vec![
        Measurement::new(NAME, "RSS before traffic", "MB", mb(before)),
        Measurement::new(
            NAME,
            format!("peak RSS (VmHWM), {n} conversations at once"),
            "MB",
            mb(peak),
        ),
        Measurement::new(
            NAME,
            "RSS per conversation at the burst: (peak − before) / N",
            "kB",
            per_conversation_kb,
        )
        .target(Target::AtMost(15.0)),
        Measurement::new(NAME, "live conversations when all were answered", "", live),
        Measurement::new(
            NAME,
            "open descriptors when all were answered (mostly pooled connections)",
            "",
            descriptors,
        ),
        Measurement::new(
            NAME,
            "open descriptors when the last conversation retired",
            "",
            descriptors_retired,
        ),
        Measurement::new(
            NAME,
            "RSS when the last conversation retired",
            "MB",
            mb(retired),
        ),
        Measurement::new(
            NAME,
            format!("RSS {} s after retirement", AFTER_RETIRED.as_secs()),
            "MB",
            mb(settled),
        ),
        Measurement::new(
            NAME,
            format!(
                "… above RSS before traffic, {} s after retirement",
                AFTER_RETIRED.as_secs()
            ),
            "MB",
            mb(settled) - mb(before),
        )
        .target(Target::AtMost(10.0)),
        Measurement::new(
            NAME,
            "events acknowledged per second (achieved)",
            "msg/s",
            n as f64 / send_secs,
        ),
        Measurement::new(
            NAME,
            "conversations unanswered",
            "",
            n.saturating_sub(answered) as f64,
        ),
    ])
}

/// How many file descriptors process `pid` has open (NaN when /proc cannot say).
fn open_descriptors(pid: u32) -> f64 {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(f64::NAN, |dir| dir.count() as f64)
}
