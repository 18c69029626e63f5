//! Overhead: with an instant (echo) LLM, the time from POSTing a signed Slack DM to the
//! gateway's first Web API call in that DM's channel, at fixed rates; one fresh gateway per
//! rate. Also counts LLM calls per plain message and the system prompt's size.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Env, launch, note, wait_turns};
use crate::child::CpuSnapshot;
use crate::report::{Measurement, Target};
use crate::slack_load::{Dm, Sent, events_url, first_calls, send_at_rate};
use crate::stats::{ms, percentile};

const NAME: &str = "overhead";
/// Messages sent (at 100/s) before measuring, to warm connections and the database.
const WARMUP: u64 = 50;
/// Give up waiting for answers once this passes without one.
const DRAIN: Duration = Duration::from_secs(60);

/// One run: the LLM stand-in alone, then every configured rate.
pub async fn run(env: &Env) -> anyhow::Result<Vec<Measurement>> {
    let stand_in = llm_alone().await?;
    note(format!(
        "{NAME}: the LLM stand-in alone, request → first token on a reused connection: {stand_in:.2} ms"
    ));
    let mut out = vec![Measurement::new(
        NAME,
        "LLM stand-in alone: request → first token, reused connection (p50)",
        "ms",
        stand_in,
    )];
    for (i, &rate) in env.settings.overhead_rates.iter().enumerate() {
        out.extend(at_rate(env, rate, stand_in, i == 0).await?);
    }
    Ok(out)
}

/// What the LLM stand-in itself adds to a turn: time to the first streamed token, on a
/// kept-alive connection as the gateway's client uses it (p50 of 40 after 5 warm-ups).
/// Measured on a stand-in of its own so the gateway's LLM call count stays clean.
async fn llm_alone() -> anyhow::Result<f64> {
    let llm = switchboard_standins::FakeLlm::start().await;
    let client = reqwest::Client::new();
    let url = format!("{}/chat/completions", llm.openai_url());
    let body = serde_json::json!({"model": "fake-model", "stream": true,
        "messages": [{"role": "user", "content": "hello from the load harness"}]});
    let mut samples = Vec::new();
    for i in 0..45 {
        let started = std::time::Instant::now();
        let mut response = client.post(&url).json(&body).send().await?;
        while let Some(chunk) = response.chunk().await? {
            if String::from_utf8_lossy(&chunk).contains("\"content\"") {
                break;
            }
        }
        let first_token = ms(started.elapsed());
        while response.chunk().await?.is_some() {}
        if i >= 5 {
            samples.push(first_token);
        }
    }
    Ok(percentile(&samples, 50.0).unwrap_or(f64::NAN))
}

async fn at_rate(
    env: &Env,
    rate: f64,
    stand_in: f64,
    count_llm_calls: bool,
) -> anyhow::Result<Vec<Measurement>> {
    let running = launch(env, 300).await?;
    let slack = &running.stands.slack;
    let url = events_url(&running.gateway.base_url());
    send_at_rate(&env.client, &url, WARMUP, 100.0, |i| Dm::first('w', i)).await;
    wait_turns(&running.gateway, WARMUP as f64, DRAIN).await?;

    let count = (rate * env.settings.overhead_secs).round() as u64;
    let before = CpuSnapshot::take(running.gateway.pid())?;
    let sent = send_at_rate(&env.client, &url, count, rate, |i| Dm::first('o', i)).await;
    let window = match (sent.first(), sent.last()) {
        (Some(a), Some(b)) => b.at.duration_since(a.at).as_secs_f64(),
        _ => 0.0,
    };
    let achieved = if window > 0.0 {
        (sent.len() - 1) as f64 / window
    } else {
        0.0
    };
    let accepted: Vec<_> = sent.iter().filter(|s| s.status == Some(200)).collect();
    let want = WARMUP as usize + accepted.len();
    wait_turns(&running.gateway, want as f64, DRAIN).await?;
    let others = CpuSnapshot::take(running.gateway.pid())?.others_since(&before);
    let first = first_calls(slack);
    let latencies: Vec<f64> = accepted
        .iter()
        .filter_map(|s| {
            first
                .get(&s.channel)
                .map(|t| ms(t.saturating_duration_since(s.at)))
        })
        .collect();
    dump_latencies(rate, &sent, &first);
    let unanswered = sent.len() - latencies.len();
    // Answers per second from the first message sent to the last first call seen.
    let last_answer = accepted.iter().filter_map(|s| first.get(&s.channel)).max();
    let answered_per_sec = match (sent.first(), last_answer) {
        (Some(a), Some(b)) => latencies.len() as f64 / b.duration_since(a.at).as_secs_f64(),
        _ => f64::NAN,
    };
    let (p50, p99) = (
        percentile(&latencies, 50.0).unwrap_or(f64::NAN),
        percentile(&latencies, 99.0).unwrap_or(f64::NAN),
    );
    note(format!(
        "{NAME}: {rate}/s asked, {achieved:.0}/s sent, {} answered, {unanswered} not; p50 {p50:.2} ms, p99 {p99:.2} ms; other processes used {others:.2} CPU-s meanwhile",
        latencies.len()
    ));
    let mut p99_row = Measurement::new(
        NAME,
        format!("event → first platform call p99 @ {rate}/s"),
        "ms",
        p99,
    );
    let mut net_p99_row = Measurement::new(
        NAME,
        format!("event → first platform call p99 @ {rate}/s, net of the LLM stand-in (≈)"),
        "ms",
        p99 - stand_in,
    );
    if (rate - 500.0).abs() < f64::EPSILON {
        p99_row = p99_row.target(Target::AtMost(5.0));
        net_p99_row = net_p99_row.target(Target::AtMost(5.0));
    }
    let mut out = vec![
        Measurement::new(
            NAME,
            format!("event → first platform call p50 @ {rate}/s"),
            "ms",
            p50,
        ),
        p99_row,
        Measurement::new(
            NAME,
            format!("event → first platform call p50 @ {rate}/s, net of the LLM stand-in (≈)"),
            "ms",
            p50 - stand_in,
        ),
        net_p99_row,
        Measurement::new(
            NAME,
            format!("sent per second @ {rate}/s (achieved)"),
            "msg/s",
            achieved,
        ),
        Measurement::new(
            NAME,
            format!("answered per second @ {rate}/s"),
            "msg/s",
            answered_per_sec,
        ),
        Measurement::new(
            NAME,
            format!("unanswered or refused @ {rate}/s"),
            "",
            unanswered as f64,
        ),
        // Not the gateway's: what the rest of the machine took while it ran (a neighbour's
        // burst shows here and in the p99 of the same run).
        Measurement::new(
            NAME,
            format!("CPU used by the machine's other processes meanwhile @ {rate}/s"),
            "CPU-s",
            others,
        ),
    ];
    if count_llm_calls {
        out.extend(llm_figures(&running.stands.llm.requests(), first.len()));
    }
    Ok(out)
}

/// With `SWITCHBOARD_LOADGEN_LATENCIES` set to a directory, write one line per answered
/// event of this rate to `<dir>/overhead-<rate>.txt`: when it was sent (ms after the first)
/// and its latency (ms), to see when in a run the slow ones fall. The first line holds the
/// first send's clock reading (`CLOCK_MONOTONIC` on Linux), to line the run up with a
/// profile recorded on that clock (`perf record -k CLOCK_MONOTONIC`).
fn dump_latencies(rate: f64, sent: &[Sent], first: &HashMap<String, Instant>) {
    let Some(dir) = std::env::var_os("SWITCHBOARD_LOADGEN_LATENCIES") else {
        return;
    };
    // Each request's task takes its own time as it starts, so the first may not be first.
    let Some(start) = sent.iter().map(|s| s.at).min() else {
        return;
    };
    let mut lines = format!("# start {start:?}\n");
    for s in sent {
        if let Some(t) = first.get(&s.channel) {
            let at = ms(s.at.saturating_duration_since(start));
            let latency = ms(t.saturating_duration_since(s.at));
            lines.push_str(&format!("{at:.3} {latency:.3}\n"));
        }
    }
    let path = std::path::Path::new(&dir).join(format!("overhead-{rate}.txt"));
    if let Err(e) = std::fs::write(&path, lines) {
        note(format!("{NAME}: could not write {}: {e}", path.display()));
    }
}

/// LLM requests per answered plain message (target exactly 1) and the system prompt's size.
fn llm_figures(requests: &[Value], answered: usize) -> Vec<Measurement> {
    let prompt_bytes = requests
        .first()
        .and_then(|r| r["messages"].as_array())
        .and_then(|m| m.iter().find(|m| m["role"] == "system"))
        .and_then(|m| m["content"].as_str())
        .map_or(0, str::len);
    vec![
        Measurement::new(
            NAME,
            "LLM calls per plain message",
            "",
            requests.len() as f64 / answered.max(1) as f64,
        )
        .target(Target::Exactly(1.0)),
        Measurement::new(
            NAME,
            "system prompt sent with each call",
            "bytes",
            prompt_bytes as f64,
        )
        .target(Target::AtMost(4096.0)),
    ]
}
