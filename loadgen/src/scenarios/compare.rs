//! Compare: this gateway and another one (`--peer-bin`) measured side by side in the same
//! run, each on fresh stand-ins of its own: one Telegram bot (long polling) and an
//! OpenAI-compatible LLM. Per side: spawn → first `getUpdates`, RSS (anonymous and
//! file-backed) after the idle wait, then a burst of private chats that each send one message
//! at once: seconds until every chat shows its complete answer, CPU seconds the process used
//! for it, RSS after, and LLM and Bot API calls per message. Each figure is reported for both
//! and as the ratio ours / peer of the same run (the sides alternate which starts first).
//!
//! The peer is started as `--peer-bin` with `--peer-args` (default `run --config {config}`,
//! a Switchboard binary); `--peer-config` is a template of its config with `{telegram_api}`,
//! `{telegram_token}`, `{llm_url}`, `{dir}` and `{port}` filled in (default: the config this
//! harness writes for its own gateway). Measured against ourselves, every ratio is near 1.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use switchboard_standins::telegram::{FAKE_BOT_TOKEN, FakeTelegram, FakeUser, UserMessage};
use switchboard_standins::{FakeLlm, Reply};

use super::{Env, mb, note};
use crate::child::{free_port, proc_status_kb, process_ticks};
use crate::report::Measurement;

const NAME: &str = "compare";
/// The first private chat (= user id); chat `i` is `FIRST_CHAT + i`.
const FIRST_CHAT: i64 = 820_001;
/// Every chat's answer: short, one message on any gateway.
const ANSWER: &str = "Noted: the meeting moved to Thursday at ten.";
/// Longest a side may take to poll, and to answer the burst.
const START_TIMEOUT: Duration = Duration::from_secs(60);
const BURST_TIMEOUT: Duration = Duration::from_secs(120);
/// How long after the burst's last answer RSS is read.
const AFTER_BURST: Duration = Duration::from_secs(10);

/// How the peer is started.
#[derive(Clone, Debug, Default)]
pub struct Peer {
    /// Its binary; `None` skips the scenario with an error saying so.
    pub bin: Option<std::path::PathBuf>,
    /// Its arguments, `{config}` replaced by the written config's path.
    pub args: String,
    /// Its config template; `None`: the config this harness writes for its own gateway.
    pub config: Option<std::path::PathBuf>,
}

/// One figure of the table: its name, its unit, and where each side's value is.
type Row = (String, &'static str, fn(&Side) -> f64);

/// What one side measured.
struct Side {
    start_ms: f64,
    idle_anon: f64,
    idle_file: f64,
    burst_secs: f64,
    burst_cpu: f64,
    after_rss: f64,
    llm_per_message: f64,
    bot_api_per_message: f64,
}

/// One run: both sides, the order alternating between runs.
pub async fn run(env: &Env, run: usize) -> anyhow::Result<Vec<Measurement>> {
    let peer = &env.peer;
    let Some(peer_bin) = &peer.bin else {
        bail!("the compare scenario needs --peer-bin (another gateway binary)");
    };
    let ours_template = None;
    let ours_args = "run --config {config}";
    let (ours, theirs) = if run % 2 == 1 {
        let ours = side(env, &env.options.bin, ours_args, ours_template).await?;
        (
            ours,
            side(env, peer_bin, &peer.args, peer.config.as_deref()).await?,
        )
    } else {
        let theirs = side(env, peer_bin, &peer.args, peer.config.as_deref()).await?;
        (
            side(env, &env.options.bin, ours_args, ours_template).await?,
            theirs,
        )
    };
    let wait = env.settings.idle_wait_secs;
    let n = env.settings.compare_chats;
    let rows: [Row; 8] = [
        ("spawn → first getUpdates".into(), "ms", |s| s.start_ms),
        (format!("RSS anonymous, idle {wait} s"), "MB", |s| {
            s.idle_anon
        }),
        (format!("RSS file-backed, idle {wait} s"), "MB", |s| {
            s.idle_file
        }),
        (format!("{n}-chat burst: all answered after"), "s", |s| {
            s.burst_secs
        }),
        (format!("{n}-chat burst: CPU used"), "s", |s| s.burst_cpu),
        (
            format!("RSS {} s after the burst", AFTER_BURST.as_secs()),
            "MB",
            |s| s.after_rss,
        ),
        ("LLM calls per message".into(), "", |s| s.llm_per_message),
        (
            "Bot API calls per message (getUpdates aside)".into(),
            "",
            |s| s.bot_api_per_message,
        ),
    ];
    let mut out = Vec::new();
    for (figure, unit, of) in rows {
        let (a, b) = (of(&ours), of(&theirs));
        out.push(Measurement::new(NAME, format!("{figure}: ours"), unit, a));
        out.push(Measurement::new(NAME, format!("{figure}: peer"), unit, b));
        out.push(Measurement::new(
            NAME,
            format!("{figure}: ours / peer"),
            "×",
            a / b,
        ));
    }
    note(format!(
        "{NAME}: ours started in {:.0} ms and answered {n} chats in {:.1} s; the peer in {:.0} ms and {:.1} s",
        ours.start_ms, ours.burst_secs, theirs.start_ms, theirs.burst_secs
    ));
    Ok(out)
}

/// Start one gateway on fresh stand-ins and measure it.
async fn side(env: &Env, bin: &Path, args: &str, template: Option<&Path>) -> anyhow::Result<Side> {
    let llm = FakeLlm::start().await;
    let telegram = FakeTelegram::start().await;
    let dir = tempfile::tempdir()?;
    let port = free_port()?;
    let config = dir.path().join("gateway.toml");
    let text = match template {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("reading the peer's config template {}", path.display()))?,
        None => OUR_CONFIG.to_owned(),
    };
    let text = text
        .replace("{telegram_api}", &telegram.api_url())
        .replace("{telegram_token}", FAKE_BOT_TOKEN)
        .replace("{llm_url}", &llm.openai_url())
        .replace("{dir}", &dir.path().display().to_string())
        .replace("{port}", &port.to_string());
    std::fs::write(&config, text)?;
    let log = std::fs::File::create(dir.path().join("gateway.log"))?;
    // Resolved before the child moves into its own directory.
    let bin = std::fs::canonicalize(bin).with_context(|| format!("finding {}", bin.display()))?;
    let spawned = Instant::now();
    let child = Command::new(&bin)
        .args(
            args.split_whitespace()
                .map(|a| a.replace("{config}", &config.display().to_string())),
        )
        .env("RUST_LOG", &env.options.rust_log)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    let process = Killed(child);
    let pid = process.0.id();
    wait_for(START_TIMEOUT, "the first getUpdates", || {
        !telegram.calls_to("getUpdates").is_empty()
    })
    .await?;
    let start_ms = spawned.elapsed().as_secs_f64() * 1000.0;
    tokio::time::sleep(Duration::from_secs(env.settings.idle_wait_secs)).await;
    let idle_anon = mb(proc_status_kb(pid, "RssAnon:")?);
    let idle_file = mb(proc_status_kb(pid, "RssFile:")?);

    let n = env.settings.compare_chats;
    for _ in 0..n {
        llm.push(Reply::text(ANSWER));
    }
    let (calls_before, ticks_before) = (telegram.calls().len(), process_ticks(pid).unwrap_or(0));
    let burst = Instant::now();
    for i in 0..n {
        let chat = FIRST_CHAT + i as i64;
        telegram.inject(&UserMessage::private(
            FakeUser::human(chat as u64, "loadgen"),
            "Can we move the meeting?",
        ));
    }
    let answered = |chat: i64| {
        telegram
            .messages(chat)
            .iter()
            .any(|m| !m.deleted && m.text.trim() == ANSWER)
    };
    wait_for(BURST_TIMEOUT, "every chat's answer", || {
        (0..n).all(|i| answered(FIRST_CHAT + i as i64))
    })
    .await?;
    let burst_secs = burst.elapsed().as_secs_f64();
    let burst_cpu = (process_ticks(pid).unwrap_or(0) - ticks_before) as f64 / 100.0;
    tokio::time::sleep(AFTER_BURST).await;
    let after_rss = mb(proc_status_kb(pid, "VmRSS:")?);
    let bot_api = telegram.calls()[calls_before..]
        .iter()
        .filter(|c| c.method != "getUpdates")
        .count();
    drop(process);
    Ok(Side {
        start_ms,
        idle_anon,
        idle_file,
        burst_secs,
        burst_cpu,
        after_rss,
        llm_per_message: llm.requests().len() as f64 / n as f64,
        bot_api_per_message: bot_api as f64 / n as f64,
    })
}

/// Poll `done` every 10 ms until it holds, or fail after `within` naming `what`.
async fn wait_for(within: Duration, what: &str, done: impl Fn() -> bool) -> anyhow::Result<()> {
    let started = Instant::now();
    while !done() {
        if started.elapsed() > within {
            bail!("no {what} within {within:?}");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

/// A process killed (SIGKILL) when dropped: its directory is thrown away.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Switchboard's side: one Telegram channel, the LLM stand-in, no tools, access open. A peer
/// that is a Switchboard binary gets the same.
const OUR_CONFIG: &str = r#"# Generated by switchboard-loadgen (compare).
[gateway]
listen = "127.0.0.1:{port}"
database_url = "sqlite://{dir}/switchboard.db"
data_dir = "{dir}/data"
shutdown_grace_secs = 1

[provider]
kind = "openai"
base_url = "{llm_url}"
model = "fake-model"
api_key = "loadgen-not-a-real-key"
max_retries = 0

[tools]
enabled = []

[channels.telegram]
kind = "telegram"
token = "{telegram_token}"
api_url = "{telegram_api}"
allowed_users = ["*"]
dm_policy = "open"
poll_timeout_secs = 30
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_side_of_the_comparison_is_a_config_the_gateway_accepts() {
        let text = OUR_CONFIG
            .replace("{telegram_api}", "http://127.0.0.1:9/bot")
            .replace("{telegram_token}", FAKE_BOT_TOKEN)
            .replace("{llm_url}", "http://127.0.0.1:9/v1")
            .replace("{dir}", "/tmp/loadgen-compare")
            .replace("{port}", "8080");
        if let Err(err) = switchboard::config::parse(&text, "compare.toml", &[]) {
            panic!("the comparison's config is refused:\n{err}\n{text}");
        }
    }
}
