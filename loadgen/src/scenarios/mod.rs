//! The scenarios, each one run of which starts its own gateway(s) on fresh stand-ins and a
//! fresh data directory and returns its measurements; `main` repeats and summarises them.

mod burst;
mod cold_start;
mod compare;
mod conversations;
mod idle;
mod ingest;
mod overhead;
mod replicas;
mod short_answer;
mod streaming;

use std::time::Duration;

use clap::ValueEnum;

use crate::child::{GatewayProcess, Options, Stands};
pub use compare::Peer;

use crate::report::Measurement;

/// Longest a gateway may take to become ready before a run fails.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// A scenario, by the name given on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Scenario {
    /// Every one below, in this order.
    All,
    /// All channels connected, no traffic: RSS after a while.
    Idle,
    /// Many distinct conversations, one message each; then a soak.
    Conversations,
    /// Many conversations at once from concurrent senders: peak RSS and RSS after retirement.
    Burst,
    /// Inbound event → first platform call latency at fixed rates, instant LLM.
    Overhead,
    /// Signed Slack events per second stored before 200, against a bare axum handler.
    Ingest,
    /// Process start → /readyz 200 on SQLite.
    ColdStart,
    /// A long answer streamed at 50 tokens/s through Telegram.
    Streaming,
    /// Short answers streamed within 300 ms through Telegram: complete in the chat when?
    ShortAnswer,
    /// Several gateways on one PostgreSQL: wake-up across replicas, turns/s per replica
    /// count (needs PostgreSQL and `psql`; not part of `all`).
    Replicas,
    /// This gateway and `--peer-bin` side by side on the same Telegram and LLM stand-ins:
    /// start, idle RSS, a burst of chats (time, CPU, RSS, calls per message), and the ratios
    /// (not part of `all`).
    Compare,
}

impl Scenario {
    /// The scenarios `all` stands for, in order.
    pub const EACH: [Scenario; 8] = [
        Self::Idle,
        Self::Conversations,
        Self::Burst,
        Self::Overhead,
        Self::Ingest,
        Self::ColdStart,
        Self::Streaming,
        Self::ShortAnswer,
    ];

    /// How many times the scenario runs.
    pub fn runs(self, s: &Settings) -> usize {
        match self {
            Self::Conversations | Self::Burst => s.conversation_runs,
            Self::ColdStart => s.cold_runs,
            _ => s.runs,
        }
    }

    /// One run.
    pub async fn run_once(self, env: &Env, run: usize) -> anyhow::Result<Vec<Measurement>> {
        match self {
            Self::All => Ok(Vec::new()),
            Self::Idle => idle::run(env).await,
            Self::Conversations => conversations::run(env).await,
            Self::Burst => burst::run(env).await,
            Self::Overhead => overhead::run(env).await,
            Self::Ingest => ingest::run(env).await,
            Self::ColdStart => cold_start::run(env).await,
            Self::Streaming => streaming::run(env).await,
            Self::ShortAnswer => short_answer::run(env).await,
            Self::Replicas => replicas::run(env).await,
            Self::Compare => compare::run(env, run).await,
        }
    }
}

/// The scale of each scenario (command-line flags; defaults keep `all` under 10 minutes on
/// 2 cores).
#[derive(Clone, Debug)]
pub struct Settings {
    /// Runs of idle, overhead, ingest and streaming.
    pub runs: usize,
    /// Runs of the conversations scenario.
    pub conversation_runs: usize,
    /// Runs of the cold-start scenario.
    pub cold_runs: usize,
    /// Idle: seconds to wait before reading RSS.
    pub idle_wait_secs: u64,
    /// Conversations: how many.
    pub conversations: u64,
    /// Conversations: first messages per second.
    pub conversation_rate: f64,
    /// Conversations: `conversation_idle_secs` of that gateway.
    pub conversation_idle_secs: u64,
    /// Burst: how many conversations.
    pub burst_conversations: u64,
    /// Burst: concurrent senders.
    pub burst_senders: usize,
    /// Burst: `conversation_idle_secs` of that gateway.
    pub burst_idle_secs: u64,
    /// Soak: seconds of steady traffic.
    pub soak_secs: u64,
    /// Soak: messages per second (replies in the conversations' threads).
    pub soak_rate: f64,
    /// Overhead: the rates, messages per second.
    pub overhead_rates: Vec<f64>,
    /// Overhead: seconds at each rate.
    pub overhead_secs: f64,
    /// Ingest: measured seconds (each side).
    pub ingest_secs: f64,
    /// Ingest: concurrent connections.
    pub ingest_workers: usize,
    /// Ingest: conversations the events go to.
    pub ingest_conversations: u64,
    /// Streaming: characters in the answer.
    pub stream_chars: usize,
    /// Short answer: how many private chats, one short answer each.
    pub short_answer_chats: usize,
    /// Replicas: the PostgreSQL server, a URL without the database name.
    pub postgres: String,
    /// Replicas: wake-up samples of each kind (cross-replica, local) per listener setting.
    pub wakeups: u64,
    /// Replicas: messages per second in the wake-up runs.
    pub wakeup_rate: f64,
    /// Replicas: how many replicas in each throughput run.
    pub replica_counts: Vec<usize>,
    /// Replicas: messages sent in each throughput run.
    pub replica_turns: u64,
    /// Replicas: their rate, messages per second (above what is answered).
    pub replica_rate: f64,
    /// Compare: private chats in the burst, one message each.
    pub compare_chats: u64,
}

/// What every run gets.
pub struct Env {
    /// How to start the gateway.
    pub options: Options,
    /// Scenario scale.
    pub settings: Settings,
    /// Shared HTTP client for load traffic.
    pub client: reqwest::Client,
    /// The other gateway of the compare scenario.
    pub peer: Peer,
}

/// A gateway on fresh stand-ins and a fresh directory, ready. Fields drop in order: the
/// process is killed before its directory is removed.
pub struct Running {
    /// The process.
    pub gateway: GatewayProcess,
    /// Its stand-ins.
    pub stands: Stands,
    _dir: tempfile::TempDir,
}

/// Start a gateway with `conversation_idle_secs = idle_secs` and wait until it is ready.
pub async fn launch(env: &Env, idle_secs: u64) -> anyhow::Result<Running> {
    let stands = Stands::start().await;
    let dir = tempfile::tempdir()?;
    let options = Options {
        idle_secs,
        ..env.options.clone()
    };
    let mut gateway = GatewayProcess::spawn(&stands, dir.path(), &options)?;
    gateway.wait_ready(READY_TIMEOUT).await?;
    Ok(Running {
        gateway,
        stands,
        _dir: dir,
    })
}

/// kB (KiB, as /proc reports them) to MB (10^6 bytes), the unit of the design targets.
pub fn mb(kib: u64) -> f64 {
    kib as f64 * 1024.0 / 1e6
}

/// Progress to stderr, so stdout carries only the table.
pub fn note(line: impl AsRef<str>) {
    eprintln!("  {}", line.as_ref());
}

/// Turns the gateway has ended (finished or failed), from `/metrics`.
pub async fn turns_done(gateway: &GatewayProcess) -> anyhow::Result<f64> {
    let finished = gateway
        .metric("switchboard_turns_total", "outcome=\"finished\"")
        .await?;
    let failed = gateway
        .metric("switchboard_turns_total", "outcome=\"failed\"")
        .await?;
    Ok(finished + failed)
}

/// Wait until at least `n` turns have ended, polling `/metrics` every 200 ms (the stand-ins
/// are not touched, so the timestamps they record are not disturbed); give up once `stall`
/// passes without progress. Returns the count reached.
pub async fn wait_turns(gateway: &GatewayProcess, n: f64, stall: Duration) -> anyhow::Result<f64> {
    let (mut last, mut progress_at) = (-1.0, std::time::Instant::now());
    loop {
        let done = turns_done(gateway).await?;
        if done >= n || progress_at.elapsed() > stall {
            return Ok(done);
        }
        if done > last {
            (last, progress_at) = (done, std::time::Instant::now());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
