//! `switchboard-loadgen`: runs the real gateway binary as a child process against in-process
//! stand-ins (LLM, Telegram, Slack), drives named scenarios, samples the child's RSS from
//! /proc and prints one Markdown table of medians and ranges against the design targets.
//!
//! Layout: `child` starts and measures the gateway process, `slack_load` sends signed Slack
//! traffic, `scenarios` holds one module per scenario, `report` and `stats` summarise.

#![allow(
    clippy::too_many_lines,
    reason = "each scenario reads top to bottom as one script: start, drive, sample, measure"
)]

mod child;
mod report;
mod scenarios;
mod slack_load;
mod stats;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use clap::Parser;

use crate::child::Options;
use crate::report::{Measurement, Report, Target};
use crate::scenarios::{Env, Scenario, Settings};

/// Load harness for a running Switchboard gateway. Build the gateway first:
/// `cargo build --release --bin switchboard`.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// Scenarios to run, in order (`all` = idle, conversations, burst, overhead, ingest, cold-start,
    /// streaming, short-answer).
    #[arg(value_enum, default_value = "all")]
    scenarios: Vec<Scenario>,
    /// The gateway binary.
    #[arg(long, env = "SWITCHBOARD_BIN", default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../target/release/switchboard"))]
    bin: PathBuf,
    /// RUST_LOG for the gateway (its log goes to a file in the run's temp dir).
    #[arg(long, default_value = "info")]
    rust_log: String,
    /// Runs of idle, overhead, ingest and streaming (each figure: median, min–max).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Runs of the conversations scenario (the long one).
    #[arg(long, default_value_t = 1)]
    conversation_runs: usize,
    /// Runs of the cold-start scenario (each run is four starts).
    #[arg(long, default_value_t = 7)]
    cold_runs: usize,
    /// Idle: seconds to wait before reading RSS.
    #[arg(long, default_value_t = 10)]
    idle_wait_secs: u64,
    /// Conversations: how many distinct conversations.
    #[arg(long, default_value_t = 10_000)]
    conversations: u64,
    /// Conversations: first messages per second (one the gateway keeps up with on 2 cores, so
    /// the peak is N idle conversations rather than a backlog).
    #[arg(long, default_value_t = 150.0)]
    conversation_rate: f64,
    /// Conversations: the gateway's `conversation_idle_secs` (longer than sending N takes, so
    /// all N are live at the peak; the actors retire this long after their answer).
    #[arg(long, default_value_t = 75)]
    conversation_idle_secs: u64,
    /// Burst: conversations that arrive at once.
    #[arg(long, default_value_t = 2_000)]
    burst_conversations: u64,
    /// Burst: concurrent senders, each sending its next message once the last was answered.
    #[arg(long, default_value_t = 16)]
    burst_senders: usize,
    /// Burst: the gateway's `conversation_idle_secs` (every conversation stays live until all
    /// are answered).
    #[arg(long, default_value_t = 30)]
    burst_idle_secs: u64,
    /// Soak: seconds of steady traffic after the conversations went idle.
    #[arg(long, default_value_t = 90)]
    soak_secs: u64,
    /// Soak: messages per second (more top-level messages in the same conversations).
    #[arg(long, default_value_t = 50.0)]
    soak_rate: f64,
    /// Overhead: the rates, messages per second.
    #[arg(long, value_delimiter = ',', default_value = "100,500,2000")]
    overhead_rates: Vec<f64>,
    /// Overhead: seconds of traffic at each rate.
    #[arg(long, default_value_t = 3.0)]
    overhead_secs: f64,
    /// Ingest: measured seconds, for the gateway and for the bare handler each.
    #[arg(long, default_value_t = 5.0)]
    ingest_secs: f64,
    /// Ingest: concurrent connections.
    #[arg(long, default_value_t = 64)]
    ingest_workers: usize,
    /// Ingest: conversations the events are spread over (their LLM calls stall).
    #[arg(long, default_value_t = 16)]
    ingest_conversations: u64,
    /// Streaming: characters in the streamed answer.
    #[arg(long, default_value_t = 2_000)]
    stream_chars: usize,
    /// The gateway's `[streaming] first_send_hold_ms` (0 = no hold: the first text is sent at
    /// once); unset keeps its default.
    #[arg(long)]
    first_send_hold_ms: Option<u64>,
    /// Short answer: private chats, one short answer each.
    #[arg(long, default_value_t = 50)]
    short_answer_chats: usize,
    /// Replicas: the PostgreSQL server (trust auth), without a database name; each run
    /// creates a fresh database there and drops it after.
    #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432")]
    postgres: String,
    /// Replicas: wake-up samples of each kind per listener setting.
    #[arg(long, default_value_t = 100)]
    wakeups: u64,
    /// Replicas: messages per second in the wake-up runs.
    #[arg(long, default_value_t = 20.0)]
    wakeup_rate: f64,
    /// Replicas: replica counts of the throughput runs.
    #[arg(long, value_delimiter = ',', default_value = "1,2,3")]
    replica_counts: Vec<usize>,
    /// Replicas: messages in each throughput run.
    #[arg(long, default_value_t = 600)]
    replica_turns: u64,
    /// Replicas: their rate, messages per second.
    #[arg(long, default_value_t = 300.0)]
    replica_rate: f64,
    /// Compare: the other gateway's binary.
    #[arg(long)]
    peer_bin: Option<PathBuf>,
    /// Compare: its arguments; `{config}` is the path of the config written for it.
    #[arg(long, default_value = "run --config {config}")]
    peer_args: String,
    /// Compare: its config template (`{telegram_api}`, `{telegram_token}`, `{llm_url}`,
    /// `{dir}`, `{port}` filled in); unset: the config written for this gateway.
    #[arg(long)]
    peer_config: Option<PathBuf>,
    /// Compare: private chats in the burst.
    #[arg(long, default_value_t = 200)]
    compare_chats: u64,
}

impl Args {
    fn settings(&self) -> Settings {
        Settings {
            runs: self.runs.max(1),
            conversation_runs: self.conversation_runs.max(1),
            cold_runs: self.cold_runs.max(1),
            idle_wait_secs: self.idle_wait_secs,
            conversations: self.conversations.max(1),
            conversation_rate: self.conversation_rate,
            conversation_idle_secs: self.conversation_idle_secs,
            burst_conversations: self.burst_conversations.max(1),
            burst_senders: self.burst_senders.max(1),
            burst_idle_secs: self.burst_idle_secs,
            soak_secs: self.soak_secs,
            soak_rate: self.soak_rate,
            overhead_rates: self.overhead_rates.clone(),
            overhead_secs: self.overhead_secs,
            ingest_secs: self.ingest_secs,
            ingest_workers: self.ingest_workers.max(1),
            ingest_conversations: self.ingest_conversations,
            stream_chars: self.stream_chars,
            short_answer_chats: self.short_answer_chats,
            postgres: self.postgres.clone(),
            wakeups: self.wakeups,
            wakeup_rate: self.wakeup_rate,
            replica_counts: self.replica_counts.clone(),
            replica_turns: self.replica_turns,
            replica_rate: self.replica_rate,
            compare_chats: self.compare_chats.max(1),
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    tokio::select! {
        result = run(args) => match result {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("switchboard-loadgen: {err:#}");
                ExitCode::FAILURE
            }
        },
        // Returning drops every running gateway, which kills its process.
        _ = tokio::signal::ctrl_c() => {
            eprintln!("interrupted");
            ExitCode::from(130)
        }
    }
}

async fn run(args: Args) -> anyhow::Result<()> {
    let binary = std::fs::metadata(&args.bin).with_context(|| {
        format!(
            "{} (build it: cargo build --release --bin switchboard)",
            args.bin.display()
        )
    })?;
    let env = Env {
        options: Options {
            bin: args.bin.clone(),
            idle_secs: 300,
            rust_log: args.rust_log.clone(),
            telegram: true,
            first_send_hold_ms: args.first_send_hold_ms,
        },
        settings: args.settings(),
        client: reqwest::Client::new(),
        peer: crate::scenarios::Peer {
            bin: args.peer_bin.clone(),
            args: args.peer_args.clone(),
            config: args.peer_config.clone(),
        },
    };
    let mut chosen = Vec::new();
    for s in &args.scenarios {
        match s {
            Scenario::All => chosen.extend(Scenario::EACH),
            other => chosen.push(*other),
        }
    }
    let mut report = Report::default();
    report.add(vec![
        Measurement::new(
            "binary",
            "release binary size (stat of --bin)",
            "MiB",
            binary.len() as f64 / 1_048_576.0,
        )
        .target(Target::AtMost(15.0)),
    ]);
    let started = Instant::now();
    let load_before = loadavg();
    let mut failed = Vec::new();
    for scenario in chosen {
        let runs = scenario.runs(&env.settings);
        for run in 1..=runs {
            eprintln!(
                "[{:>4.0} s] {scenario:?}: run {run} of {runs}",
                started.elapsed().as_secs_f64()
            );
            // A failed run is reported and the others go on: one broken scenario should not
            // cost the figures of the rest.
            match scenario.run_once(&env, run).await {
                Ok(measurements) => report.add(measurements),
                Err(err) => {
                    eprintln!("  {scenario:?} run {run} failed: {err:#}");
                    failed.push(format!("{scenario:?} run {run}: {err:#}"));
                }
            }
        }
    }
    eprintln!("[{:>4.0} s] done", started.elapsed().as_secs_f64());
    println!("{}", machine());
    println!(
        "Load average (1, 5, 15 min) before: {load_before}; after: {}\n",
        loadavg()
    );
    println!("{}", report.markdown());
    anyhow::ensure!(
        failed.is_empty(),
        "{} run(s) failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
    Ok(())
}

/// The machine the figures come from: cores, CPU model, memory.
fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map_or("unknown", |(_, m)| m.trim());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_gib = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1_048_576.0);
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    format!("Machine: {cores} cores, {model}, {mem_gib:.1} GiB RAM")
}

/// The first three fields of /proc/loadavg: other work on the machine skews every figure.
fn loadavg() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}
