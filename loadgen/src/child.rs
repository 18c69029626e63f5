//! The gateway under test: the real release binary run as a child process with a generated
//! config that points the LLM and every platform at in-process stand-ins. The child is killed
//! when its handle drops, so no gateway outlives the harness.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use switchboard_standins::{FakeLlm, slack, telegram};

/// The stand-ins one gateway talks to, started fresh for each gateway so recorded calls
/// belong to one run only.
pub struct Stands {
    /// OpenAI-compatible LLM; echoes unless scripted.
    pub llm: FakeLlm,
    /// Telegram Bot API (long polling).
    pub telegram: telegram::FakeTelegram,
    /// Slack Web API.
    pub slack: slack::FakeSlack,
}

impl Stands {
    /// Start all three on 127.0.0.1.
    pub async fn start() -> Self {
        Self {
            llm: FakeLlm::start().await,
            telegram: telegram::FakeTelegram::start().await,
            slack: slack::FakeSlack::start().await,
        }
    }
}

/// What varies between gateways the scenarios start.
#[derive(Clone, Debug)]
pub struct Options {
    /// The release binary.
    pub bin: PathBuf,
    /// `[gateway] conversation_idle_secs`.
    pub idle_secs: u64,
    /// `RUST_LOG` for the child.
    pub rust_log: String,
    /// Whether to configure the Telegram channel (Slack and web always are).
    pub telegram: bool,
    /// `[streaming] first_send_hold_ms`; `None` keeps the gateway's default (0 = the
    /// behaviour before the hold, for a before/after in one build).
    pub first_send_hold_ms: Option<u64>,
}

/// How long a start took, measured from spawning the process.
#[derive(Clone, Copy, Debug)]
pub struct Ready {
    /// Until the HTTP server first answered anything.
    pub first_answer: Duration,
    /// Until `/readyz` answered 200.
    pub ready: Duration,
}

/// A running gateway process.
pub struct GatewayProcess {
    child: Child,
    port: u16,
    log: PathBuf,
    spawned: Instant,
    client: reqwest::Client,
}

impl GatewayProcess {
    /// Write a config into `dir` (database and data_dir live there too) and start the binary.
    pub fn spawn(stands: &Stands, dir: &Path, options: &Options) -> anyhow::Result<Self> {
        let port = free_port()?;
        let text = config_text(stands, dir, port, options);
        Self::spawn_config(dir, "gateway", port, &text, options)
    }

    /// Start the binary on a config of the caller's (`<name>.toml` and `<name>.log` in
    /// `dir`) that listens on `port`; several can share `dir` under distinct names.
    pub fn spawn_config(
        dir: &Path,
        name: &str,
        port: u16,
        text: &str,
        options: &Options,
    ) -> anyhow::Result<Self> {
        let config = dir.join(format!("{name}.toml"));
        std::fs::write(&config, text)?;
        let log = dir.join(format!("{name}.log"));
        let out = File::create(&log)?;
        let spawned = Instant::now();
        let child = Command::new(&options.bin)
            .arg("run")
            .arg("--config")
            .arg(&config)
            .env("RUST_LOG", &options.rust_log)
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .with_context(|| format!("starting {}", options.bin.display()))?;
        Ok(Self {
            child,
            port,
            log,
            spawned,
            client: reqwest::Client::new(),
        })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The port the gateway listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Poll `/readyz` every millisecond until it answers 200.
    pub async fn wait_ready(&mut self, timeout: Duration) -> anyhow::Result<Ready> {
        let url = format!("{}/readyz", self.base_url());
        let mut first_answer = None;
        loop {
            let answered = self
                .client
                .get(&url)
                .timeout(Duration::from_secs(1))
                .send()
                .await;
            if let Ok(response) = answered {
                let now = self.spawned.elapsed();
                let first_answer = *first_answer.get_or_insert(now);
                if response.status().is_success() {
                    return Ok(Ready {
                        first_answer,
                        ready: now,
                    });
                }
            }
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "gateway exited ({status}) before ready:\n{}",
                    self.log_tail()
                );
            }
            if self.spawned.elapsed() > timeout {
                bail!("gateway not ready after {timeout:?}:\n{}", self.log_tail());
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Resident set size now, in kB (`VmRSS` of /proc/<pid>/status).
    pub fn rss_kb(&self) -> anyhow::Result<u64> {
        proc_status_kb(self.pid(), "VmRSS:")
    }

    /// Highest resident set size so far, in kB (`VmHWM`).
    pub fn peak_rss_kb(&self) -> anyhow::Result<u64> {
        proc_status_kb(self.pid(), "VmHWM:")
    }

    /// The sum of the `/metrics` samples of `name` whose labels contain `labels` (e.g.
    /// `switchboard_active_conversations`, or `outcome="stored"` of the inbound counter).
    pub async fn metric(&self, name: &str, labels: &str) -> anyhow::Result<f64> {
        let url = format!("{}/metrics", self.base_url());
        let text = self.client.get(url).send().await?.text().await?;
        let mut sum = 0.0;
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let Some((series, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let (metric, rest) = series.split_once('{').unwrap_or((series, ""));
            if metric == name && rest.contains(labels) {
                sum += value.parse::<f64>()?;
            }
        }
        Ok(sum)
    }

    /// The last lines the gateway logged, for error messages.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

impl Drop for GatewayProcess {
    fn drop(&mut self) {
        // SIGKILL: the data directory is thrown away, and a graceful drain would only add
        // the shutdown grace period to every run.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `kB` field of `/proc/<pid>/status` (`VmRSS:`, `VmHWM:`).
pub fn proc_status_kb(pid: u32, field: &str) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .with_context(|| format!("{field} missing from /proc/{pid}/status"))?;
    let kb = line[field.len()..].trim().trim_end_matches("kB").trim();
    Ok(kb.parse()?)
}

/// A loopback port nothing listens on right now.
pub fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// The web chat's access token in every generated config: the chat opens only with a token,
/// and a fixed one saves the scenarios reading the generated one from the data directory.
pub const WEB_TOKEN: &str = "loadgen-web-token-not-a-secret";

/// The generated config: SQLite and data_dir in `dir`, every channel kind on a stand-in,
/// no tools (so nothing waits for an approval), access open (the harness measures the
/// gateway, not pairing).
fn config_text(stands: &Stands, dir: &Path, port: u16, options: &Options) -> String {
    let dir = dir.display();
    let idle_secs = options.idle_secs;
    let telegram = if options.telegram {
        format!(
            "[channels.telegram]\nkind = \"telegram\"\ntoken = \"{}\"\napi_url = \"{}\"\n\
             allowed_users = [\"*\"]\ndm_policy = \"open\"\ngroup_policy = \"open\"\n\
             poll_timeout_secs = 30\n",
            telegram::FAKE_BOT_TOKEN,
            stands.telegram.api_url(),
        )
    } else {
        String::new()
    };
    let streaming = options
        .first_send_hold_ms
        .map(|ms| format!("[streaming]\nfirst_send_hold_ms = {ms}\n"))
        .unwrap_or_default();
    format!(
        r#"# Generated by switchboard-loadgen.
[gateway]
listen = "127.0.0.1:{port}"
database_url = "sqlite://{dir}/switchboard.db"
data_dir = "{dir}/data"
log_format = "pretty"
conversation_idle_secs = {idle_secs}
shutdown_grace_secs = 1

{provider_and_slack}
{streaming}
{telegram}
[channels.web]
kind = "web"
path = "/"
access_token = "{WEB_TOKEN}"
"#,
        provider_and_slack = provider_and_slack(stands),
    )
}

/// The `[provider]` (the echo LLM stand-in, no retries), `[tools]` (none, so nothing waits
/// for an approval) and `[channels.slack]` (the Slack stand-in, access open) tables every
/// generated config shares.
pub fn provider_and_slack(stands: &Stands) -> String {
    format!(
        r#"[provider]
kind = "openai"
base_url = "{llm}"
model = "fake-model"
api_key = "loadgen-not-a-real-key"
timeout_secs = 120
max_retries = 0

[tools]
enabled = []

[channels.slack]
kind = "slack"
bot_token = "{slack_token}"
signing_secret = "{slack_secret}"
api_url = "{slack}"
allowed_users = ["*"]
dm_policy = "open"
group_policy = "open"
"#,
        llm = stands.llm.openai_url(),
        slack_token = slack::FAKE_BOT_TOKEN,
        slack_secret = slack::FAKE_SIGNING_SECRET,
        slack = stands.slack.api_url(),
    )
}

/// CPU time (clock ticks, `USER_HZ`: 100 a second on Linux) every other process of the
/// machine had used at one moment, by process: two snapshots tell what the machine's other
/// processes took in between. Another service's burst on a two-core machine is enough to
/// move a latency tail, so a run reports it next to its figures.
///
/// Each process counts its own time and that of the children it has reaped, so a short-lived
/// program (a service's periodic helper) shows in its parent's count once it has exited.
#[derive(Debug)]
pub struct CpuSnapshot(std::collections::HashMap<u32, u64>);

impl CpuSnapshot {
    /// Read `/proc/<pid>/stat` of every process but this one and `gateway`.
    pub fn take(gateway: u32) -> anyhow::Result<Self> {
        let me = std::process::id();
        let mut ticks = std::collections::HashMap::new();
        for entry in std::fs::read_dir("/proc")? {
            let Some(pid) = entry?.file_name().to_str().and_then(|n| n.parse().ok()) else {
                continue;
            };
            if pid == me || pid == gateway {
                continue;
            }
            // A process may exit between the listing and the read.
            if let Some(t) = process_ticks(pid) {
                ticks.insert(pid, t);
            }
        }
        Ok(Self(ticks))
    }

    /// CPU seconds the machine's other processes used since `earlier`.
    pub fn others_since(&self, earlier: &Self) -> f64 {
        let ticks: u64 = (self.0.iter())
            .map(|(pid, t)| t.saturating_sub(earlier.0.get(pid).copied().unwrap_or(0)))
            .sum();
        ticks as f64 / 100.0
    }
}

/// `utime + stime + cutime + cstime` of `/proc/<pid>/stat`, in ticks.
pub fn process_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces; the fields after it do not. After it, state is
    // field 0 and utime, stime, cutime, cstime are 11 to 14.
    let after = stat.rsplit_once(')')?.1;
    let fields = after.split_whitespace().skip(11).take(4);
    fields.map(|f| f.parse::<u64>().ok()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_standins::eventually_blocking;

    #[tokio::test]
    async fn the_generated_config_is_one_the_gateway_accepts() {
        let stands = Stands::start().await;
        let dir = tempfile::tempdir().unwrap();
        for telegram in [false, true] {
            let options = Options {
                bin: PathBuf::from("switchboard"),
                idle_secs: 60,
                rust_log: "info".into(),
                telegram,
                first_send_hold_ms: Some(0),
            };
            let text = config_text(&stands, dir.path(), 8080, &options);
            if let Err(err) = switchboard::config::parse(&text, "loadgen.toml", &[]) {
                panic!("the harness's config is refused:\n{err}\n{text}");
            }
        }
    }

    #[test]
    fn a_busy_process_elsewhere_shows_in_the_snapshots() {
        let before = CpuSnapshot::take(0).unwrap();
        // A grandchild spins for half a second: not this process's own child (those are left
        // out with it), so it counts while it runs, and in its parent's count once reaped.
        let spin = "timeout 0.5 sh -c 'while :; do :; done'; sleep 30";
        let _parent = KilledOnDrop(Command::new("sh").args(["-c", spin]).spawn().unwrap());
        let what = "a spinning process elsewhere to show (CPU-s)";
        eventually_blocking(Duration::from_secs(10), what, || {
            let used = CpuSnapshot::take(0).unwrap().others_since(&before);
            if used >= 0.1 { Ok(()) } else { Err(used) }
        });
    }

    /// A process killed when dropped, however the test ends.
    struct KilledOnDrop(std::process::Child);

    impl Drop for KilledOnDrop {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}
