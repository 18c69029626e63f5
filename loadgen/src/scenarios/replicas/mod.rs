//! Replicas: N gateway processes on one fresh PostgreSQL database (created for the run,
//! dropped after), sharing one `data_dir`, each on its own port with its own `instance_id`
//! and the `[cluster]` defaults. Three measurements:
//!
//! - Next message on another replica: a conversation's first message goes to replica B,
//!   which answers it (its actor stays live); the next message is posted to replica A.
//!   Latency = POST handed to the client → the Slack stand-in's first Web API call in that
//!   channel after it; the same with the next message posted to B itself is the local
//!   baseline. Run with the listener on and with `listen = false` (poll only). The turns each
//!   replica ran are counted: the gateway gives a conversation's lease up at the end of every
//!   batch, so an idle conversation's next event runs where it lands (on A) and neither the
//!   `NOTIFY` nor the poll is on this path; they are only when the event is stored while
//!   another replica holds the lease and that holder's claim loop has already ended.
//! - Contended conversations, whose messages alternate between the two replicas every
//!   50 ms, so that race happens: stalls (answers later than 1 s) with the listener on and
//!   off.
//! - Throughput: signed DMs to many distinct conversations, round-robin over the replicas'
//!   ports, sent open loop faster than they are answered; answered turns per second with
//!   1, 2 and 3 replicas (echo LLM).

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

mod contended;

use anyhow::{Context, bail};

use super::{Env, READY_TIMEOUT, note, turns_done};
use crate::child::{GatewayProcess, Options, Stands, free_port, provider_and_slack};
use crate::report::Measurement;
use crate::slack_load::{Dm, Sent, events_url, first_calls, send_spread};
use crate::stats::{ms, percentile};
use contended::contended;

const NAME: &str = "replicas";
/// Give up waiting for answers once this passes without one (above the 10 s default poll).
const STALL: Duration = Duration::from_secs(30);
/// Conversations warmed up per replica before a throughput run.
const WARMUP_PER_REPLICA: u64 = 30;

/// One run: wake-up latency with the listener on and off, then throughput per replica count.
pub async fn run(env: &Env) -> anyhow::Result<Vec<Measurement>> {
    let mut out = Vec::new();
    for listen in [true, false] {
        out.extend(wake_up(env, listen).await?);
        out.extend(contended(env, listen).await?);
    }
    for &n in &env.settings.replica_counts {
        out.extend(throughput(env, n.max(1)).await?);
    }
    Ok(out)
}

/// A fresh database on the server at `admin` (a URL without the database name), dropped
/// (forcibly, after the processes using it are gone) when this drops.
struct Database {
    admin: String,
    name: String,
}

impl Database {
    fn create(admin: &str) -> anyhow::Result<Self> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = format!("switchboard_bench_{}_{nanos}", std::process::id());
        psql(admin, &format!("CREATE DATABASE {name}"))?;
        Ok(Self {
            admin: admin.trim_end_matches('/').to_owned(),
            name,
        })
    }

    fn url(&self) -> String {
        format!("{}/{}", self.admin, self.name)
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        if let Err(err) = psql(
            &self.admin,
            &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        ) {
            note(format!("{NAME}: could not drop {}: {err:#}", self.name));
        }
    }
}

/// Run one SQL statement with `psql` against the `postgres` database of `admin`.
fn psql(admin: &str, sql: &str) -> anyhow::Result<()> {
    let target = format!("{}/postgres", admin.trim_end_matches('/'));
    let output = Command::new("psql")
        .arg(&target)
        .args(["-v", "ON_ERROR_STOP=1", "-qc", sql])
        .output()
        .context("running psql (PostgreSQL's client is needed for this scenario)")?;
    if !output.status.success() {
        bail!(
            "psql {sql:?} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

/// N replicas on fresh stand-ins and a fresh database. Fields drop in order: the processes
/// die before the database is dropped and the directory removed.
struct Cluster {
    gateways: Vec<GatewayProcess>,
    stands: Stands,
    _db: Database,
    _dir: tempfile::TempDir,
}

impl Cluster {
    /// Start replica 0 alone (it migrates the database), then the others; all ready.
    async fn start(env: &Env, n: usize, listen: bool) -> anyhow::Result<Self> {
        let db = Database::create(&env.settings.postgres)?;
        let stands = Stands::start().await;
        let dir = tempfile::tempdir()?;
        let mut gateways = Vec::with_capacity(n);
        for i in 0..n {
            let port = free_port()?;
            let text = config_text(&stands, dir.path(), &db.url(), i, port, listen);
            let options = Options {
                idle_secs: 300,
                ..env.options.clone()
            };
            let name = format!("replica-{i}");
            gateways.push(GatewayProcess::spawn_config(
                dir.path(),
                &name,
                port,
                &text,
                &options,
            )?);
            if i == 0 {
                gateways[0].wait_ready(READY_TIMEOUT).await?;
            }
        }
        for gateway in gateways.iter_mut().skip(1) {
            gateway.wait_ready(READY_TIMEOUT).await?;
        }
        Ok(Self {
            gateways,
            stands,
            _db: db,
            _dir: dir,
        })
    }

    /// The Slack events URL of every replica, in order.
    fn urls(&self) -> Vec<String> {
        self.gateways
            .iter()
            .map(|g| events_url(&g.base_url()))
            .collect()
    }

    /// Turns each replica has ended so far.
    async fn turns(&self) -> anyhow::Result<Vec<f64>> {
        let mut out = Vec::with_capacity(self.gateways.len());
        for gateway in &self.gateways {
            out.push(turns_done(gateway).await?);
        }
        Ok(out)
    }

    /// Wait until the replicas together have ended `n` turns, or `STALL` passes without
    /// progress; returns the total reached.
    async fn wait_total(&self, n: f64) -> anyhow::Result<f64> {
        let (mut last, mut progress_at) = (-1.0, Instant::now());
        loop {
            let done: f64 = self.turns().await?.iter().sum();
            if done >= n || progress_at.elapsed() > STALL {
                return Ok(done);
            }
            if done > last {
                (last, progress_at) = (done, Instant::now());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Replica `i`'s config: the shared database and `data_dir`, the LLM and Slack stand-ins,
/// `[cluster]` defaults except `listen`.
fn config_text(
    stands: &Stands,
    dir: &Path,
    url: &str,
    i: usize,
    port: u16,
    listen: bool,
) -> String {
    let dir = dir.display();
    format!(
        r#"# Generated by switchboard-loadgen (replicas).
[gateway]
listen = "127.0.0.1:{port}"
database_url = "{url}"
data_dir = "{dir}/data"
instance_id = "bench-{i}"
log_format = "pretty"
conversation_idle_secs = 300
shutdown_grace_secs = 1

[cluster]
listen = {listen}

{provider_and_slack}"#,
        provider_and_slack = provider_and_slack(stands),
    )
}

/// Message `i` of a wake-up run: even ones are cross-replica conversations (tag `x`), odd
/// ones local-baseline conversations (tag `l`).
fn pick(i: u64) -> (char, u64) {
    if i.is_multiple_of(2) {
        ('x', i / 2)
    } else {
        ('l', i / 2)
    }
}

/// The second top-level message in conversation `n` of tag `tag` (same DM channel, so the
/// same conversation as [`Dm::first`]).
fn second(tag: char, n: u64) -> Dm {
    Dm {
        event_id: format!("Ev{tag}S{n:09}"),
        ts: format!("1700000200.{n:06}"),
        ..Dm::first(tag, n)
    }
}

async fn wake_up(env: &Env, listen: bool) -> anyhow::Result<Vec<Measurement>> {
    let cluster = Cluster::start(env, 2, listen).await?;
    let urls = cluster.urls();
    let (a_url, b_url) = (urls[0].clone(), urls[1].clone());
    let n = env.settings.wakeups.max(1);
    let rate = env.settings.wakeup_rate;
    // Every conversation's first message goes to B: B answers it and owns the conversation.
    let firsts = send_spread(
        &env.client,
        std::slice::from_ref(&b_url),
        2 * n,
        rate,
        |i| {
            let (tag, k) = pick(i);
            Dm::first(tag, k)
        },
    )
    .await;
    let accepted = firsts.iter().filter(|s| s.status == Some(200)).count() as f64;
    cluster.wait_total(accepted).await?;
    let before = cluster.turns().await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Next messages: cross ones to A, baseline ones to B, interleaved.
    let sent = send_spread(&env.client, &[a_url, b_url], 2 * n, rate, |i| {
        let (tag, k) = pick(i);
        second(tag, k)
    })
    .await;
    let accepted = sent.iter().filter(|s| s.status == Some(200)).count() as f64;
    cluster
        .wait_total(before.iter().sum::<f64>() + accepted)
        .await?;
    let after = cluster.turns().await?;
    let run_on_a = after[0] - before[0];
    let calls = calls_by_channel(&cluster);
    let (cross, local) = latencies(&sent, &calls);
    let unanswered = sent.len() - cross.len() - local.len();
    let state = if listen {
        "listener on"
    } else {
        "listen = false, poll only"
    };
    let mut out = Vec::new();
    for (what, samples) in [
        ("next message to A, previous answered by B", &cross),
        ("next message to B, previous answered by B", &local),
    ] {
        let p50 = percentile(samples, 50.0).unwrap_or(f64::NAN);
        let p99 = percentile(samples, 99.0).unwrap_or(f64::NAN);
        note(format!(
            "{NAME}: {state}: {what}: {} answered, p50 {p50:.1} ms, p99 {p99:.1} ms",
            samples.len()
        ));
        out.push(Measurement::new(
            NAME,
            format!("{what}, {state}: → first Slack call p50"),
            "ms",
            p50,
        ));
        out.push(Measurement::new(
            NAME,
            format!("{what}, {state}: → first Slack call p99"),
            "ms",
            p99,
        ));
    }
    note(format!(
        "{NAME}: {state}: firsts {} sent, seconds {} sent, {unanswered} unanswered, {run_on_a} turns run on A",
        firsts.len(),
        sent.len()
    ));
    out.push(Measurement::new(
        NAME,
        format!("next messages unanswered, {state}"),
        "",
        unanswered as f64,
    ));
    out.push(Measurement::new(
        NAME,
        format!("next messages to A (of {n}) whose turn ran on A, {state}"),
        "",
        run_on_a,
    ));
    Ok(out)
}

/// How many requests got each HTTP status, "none" for a transport error, e.g.
/// `200×580 503×20`.
fn status_tally(sent: &[Sent]) -> String {
    let mut tally = std::collections::BTreeMap::<Option<u16>, usize>::new();
    for s in sent {
        *tally.entry(s.status).or_default() += 1;
    }
    tally
        .iter()
        .map(|(status, n)| match status {
            Some(code) => format!("{code}×{n}"),
            None => format!("none×{n}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// For each channel, when every Slack Web API call in it arrived, sorted.
fn calls_by_channel(cluster: &Cluster) -> HashMap<String, Vec<Instant>> {
    let mut out: HashMap<String, Vec<Instant>> = HashMap::new();
    for call in cluster.stands.slack.calls() {
        if let Some(channel) = call.body.get("channel").and_then(|c| c.as_str()) {
            out.entry(channel.to_owned())
                .or_default()
                .push(call.at.into_std());
        }
    }
    for times in out.values_mut() {
        times.sort();
    }
    out
}

/// Latency of each accepted next message to the first call in its channel after it was
/// sent: (cross-replica ones, local ones).
fn latencies(sent: &[Sent], calls: &HashMap<String, Vec<Instant>>) -> (Vec<f64>, Vec<f64>) {
    let (mut cross, mut local) = (Vec::new(), Vec::new());
    for s in sent.iter().filter(|s| s.status == Some(200)) {
        let Some(at) = calls
            .get(&s.channel)
            .and_then(|times| times.iter().find(|t| **t >= s.at))
        else {
            continue;
        };
        let latency = ms(at.duration_since(s.at));
        if s.channel.starts_with("Dx") {
            cross.push(latency);
        } else {
            local.push(latency);
        }
    }
    (cross, local)
}

async fn throughput(env: &Env, n: usize) -> anyhow::Result<Vec<Measurement>> {
    let cluster = Cluster::start(env, n, true).await?;
    let urls = cluster.urls();
    let warm = WARMUP_PER_REPLICA * n as u64;
    let warmed = send_spread(&env.client, &urls, warm, 100.0, |i| Dm::first('w', i)).await;
    let warmed = warmed.iter().filter(|s| s.status == Some(200)).count() as f64;
    cluster.wait_total(warmed).await?;
    let count = env.settings.replica_turns.max(1);
    let sent = send_spread(&env.client, &urls, count, env.settings.replica_rate, |i| {
        Dm::first('t', i)
    })
    .await;
    let accepted: Vec<_> = sent.iter().filter(|s| s.status == Some(200)).collect();
    let done = cluster.wait_total(warmed + accepted.len() as f64).await?;
    let first = first_calls(&cluster.stands.slack);
    let answers: Vec<Instant> = accepted
        .iter()
        .filter_map(|s| first.get(&s.channel).copied())
        .collect();
    let per_sec = match (sent.first(), answers.iter().max()) {
        (Some(a), Some(last)) => answers.len() as f64 / last.duration_since(a.at).as_secs_f64(),
        _ => f64::NAN,
    };
    let window = match (sent.first(), sent.last()) {
        (Some(a), Some(b)) => b.at.duration_since(a.at).as_secs_f64(),
        _ => 0.0,
    };
    let sent_per_sec = if window > 0.0 {
        (sent.len() - 1) as f64 / window
    } else {
        f64::NAN
    };
    let per_replica = cluster.turns().await?;
    note(format!(
        "{NAME}: {n} replica(s): {} sent at {sent_per_sec:.0}/s, {} accepted, {} answered ({done} turns ended), {per_sec:.1} answered/s; turns per replica {per_replica:?}; statuses {}",
        sent.len(),
        accepted.len(),
        answers.len(),
        status_tally(&sent)
    ));
    Ok(vec![
        Measurement::new(
            NAME,
            format!("answered turns per second, {n} replica(s) (echo LLM)"),
            "turns/s",
            per_sec,
        ),
        Measurement::new(
            NAME,
            format!("unanswered or refused, {n} replica(s)"),
            "",
            (sent.len() - answers.len()) as f64,
        ),
    ])
}
