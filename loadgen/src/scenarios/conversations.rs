//! Many conversations: N distinct Slack DM conversations each send one message at a fixed
//! rate (instant echo LLM); RSS before, at the peak, and once the actors have retired; then a
//! soak of steady replies into those same conversations, sampling RSS every 10 s.

use std::time::{Duration, Instant};

use super::{Env, Running, launch, mb, note, wait_turns};
use crate::child::proc_status_kb;
use crate::report::{Measurement, Target};
use crate::slack_load::{Dm, events_url, send_at_rate};

const NAME: &str = "conversations";
/// Soak RSS sampling period.
const SAMPLE_EVERY: Duration = Duration::from_secs(10);

/// One run.
pub async fn run(env: &Env) -> anyhow::Result<Vec<Measurement>> {
    let s = &env.settings;
    let running = launch(env, s.conversation_idle_secs).await?;
    let gateway = &running.gateway;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = gateway.rss_kb()?;
    let n = s.conversations;
    let url = events_url(&gateway.base_url());

    let started = Instant::now();
    let sent = send_at_rate(&env.client, &url, n, s.conversation_rate, |i| {
        Dm::first('c', i)
    })
    .await;
    let send_secs = started.elapsed().as_secs_f64();
    let refused = sent.iter().filter(|x| x.status != Some(200)).count();
    let answered = wait_turns(gateway, n as f64, Duration::from_secs(60)).await? as u64;
    let answer_secs = started.elapsed().as_secs_f64();
    let live = gateway
        .metric("switchboard_active_conversations", "")
        .await?;
    let at_end = gateway.rss_kb()?;
    let peak = gateway.peak_rss_kb()?;
    note(format!(
        "{NAME}: {n} sent in {send_secs:.1} s ({refused} not 200), {answered} answered after \
         {answer_secs:.1} s, {live} live; RSS {:.1} MB, peak {:.1} MB",
        mb(at_end),
        mb(peak)
    ));

    let retire_by = Duration::from_secs(s.conversation_idle_secs + 30);
    let retired_at = Instant::now();
    let mut live_now = live;
    while live_now > 0.0 && retired_at.elapsed() < retire_by {
        tokio::time::sleep(Duration::from_secs(1)).await;
        live_now = gateway
            .metric("switchboard_active_conversations", "")
            .await?;
    }
    let after_idle = gateway.rss_kb()?;
    note(format!(
        "{NAME}: {live_now} live after {:.0} s idle; RSS {:.1} MB",
        retired_at.elapsed().as_secs_f64(),
        mb(after_idle)
    ));

    let per_conversation_kb = (peak.saturating_sub(before)) as f64 * 1.024 / n as f64;
    let mut out = vec![
        Measurement::new(NAME, "RSS before traffic", "MB", mb(before)),
        Measurement::new(
            NAME,
            format!("peak RSS (VmHWM), {n} conversations"),
            "MB",
            mb(peak),
        )
        .target(Target::AtMost(60.0)),
        Measurement::new(
            NAME,
            "RSS per conversation: (peak − before) / N",
            "kB",
            per_conversation_kb,
        )
        .target(Target::AtMost(10.0)),
        Measurement::new(NAME, "live conversations when all were answered", "", live),
        Measurement::new(NAME, "RSS when all were answered", "MB", mb(at_end)),
        Measurement::new(
            NAME,
            "RSS after the actors retired (idle)",
            "MB",
            mb(after_idle),
        ),
        Measurement::new(NAME, "live conversations after the idle wait", "", live_now),
        Measurement::new(
            NAME,
            "first messages sent per second (achieved)",
            "msg/s",
            n as f64 / send_secs,
        ),
        Measurement::new(
            NAME,
            "conversations unanswered",
            "",
            n.saturating_sub(answered) as f64,
        ),
    ];
    out.extend(soak(env, &running).await?);
    Ok(out)
}

/// Steady replies into the same conversations (each wakes a retired conversation, which
/// reloads its history), sampling RSS every 10 s.
async fn soak(env: &Env, running: &Running) -> anyhow::Result<Vec<Measurement>> {
    let s = &env.settings;
    let (n, secs) = (s.conversations.max(1), s.soak_secs);
    let count = (s.soak_rate * secs as f64) as u64;
    let pid = running.gateway.pid();
    let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
    let sampler = tokio::spawn(async move {
        let mut samples = Vec::new();
        loop {
            samples.push(proc_status_kb(pid, "VmRSS:").map(mb).unwrap_or(f64::NAN));
            tokio::select! {
                _ = &mut stopped => return samples,
                () = tokio::time::sleep(SAMPLE_EVERY) => {}
            }
        }
    });
    let url = events_url(&running.gateway.base_url());
    let sent = send_at_rate(&env.client, &url, count, s.soak_rate, |i| {
        // Top level again: a DM's top level is one conversation (a thread would be another).
        let root = Dm::first('c', i % n);
        Dm {
            event_id: format!("EvS{i:010}"),
            ts: format!("1700000200.{i:06}"),
            ..root
        }
    })
    .await;
    let _ = stop.send(());
    let mut samples = sampler.await?;
    samples.push(running.gateway.rss_kb().map(mb)?);
    let refused = sent.iter().filter(|x| x.status != Some(200)).count();
    let list: Vec<String> = samples.iter().map(|v| format!("{v:.1}")).collect();
    note(format!(
        "{NAME}: soak {count} replies over {secs} s ({refused} not 200); RSS every {} s (MB): {}",
        SAMPLE_EVERY.as_secs(),
        list.join(", ")
    ));
    let first = samples[0];
    let last = samples[samples.len() - 1];
    let max = samples.iter().copied().fold(f64::MIN, f64::max);
    Ok(vec![
        Measurement::new(
            NAME,
            format!("soak ({secs} s at {} msg/s): RSS at start", s.soak_rate),
            "MB",
            first,
        ),
        Measurement::new(NAME, "soak: RSS at end", "MB", last),
        Measurement::new(NAME, "soak: highest RSS sample", "MB", max),
        Measurement::new(NAME, "soak: drift (end − start)", "MB", last - first),
    ])
}
