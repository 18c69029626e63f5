//! Several real `switchboard` processes on one fresh PostgreSQL database, with the platform
//! and LLM stand-ins in this test process. Each replica gets its own port, instance id and
//! log file, a shared `data_dir` (as a shared volume would be) and short leader leases.
//! Every process is killed when its [`Replica`] is dropped, so none outlives a test.

use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use switchboard::store::{self, Store};
use switchboard_standins::proxy::TcpProxy;
use switchboard_standins::slack::{FAKE_BOT_TOKEN, FAKE_SIGNING_SECRET, FakeSlack, SignedRequest};
use switchboard_standins::telegram::{FAKE_BOT_TOKEN as TG_TOKEN, FakeTelegram};
use switchboard_standins::{FakeLlm, Later, eventually};

use crate::helpers::{drop_postgres, free_port, postgres_url};

/// The lease TTL (leader and conversation leases) the replicas run with.
pub const LEADER_TTL: Duration = Duration::from_millis(3000);
/// How long a replica may take to answer `/readyz` 200 after it is spawned.
const READY_WAIT: Duration = Duration::from_secs(30);

/// One gateway process.
pub struct Replica {
    /// Its `gateway.instance_id`.
    pub instance: String,
    /// Its HTTP port on 127.0.0.1.
    pub port: u16,
    child: Option<Child>,
    log: PathBuf,
}

impl Replica {
    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// `kill -9`, and reap it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Send `signal` (`libc::SIGSTOP`, `libc::SIGCONT`, `libc::SIGTERM`).
    pub fn signal(&self, signal: i32) {
        if let Some(pid) = self.pid().and_then(|p| i32::try_from(p).ok()) {
            // SAFETY: kill(2) on a child this test spawned and has not reaped.
            unsafe {
                libc::kill(pid, signal);
            }
        }
    }

    /// Wait (up to `within`) for a process sent SIGTERM to exit, and reap it.
    pub async fn wait_exit(&mut self, within: Duration) {
        let what = format!("{} to exit", self.instance);
        let (child, log) = (&mut self.child, &self.log);
        eventually(within, &what, async || {
            if let Some(running) = child.as_mut()
                && !matches!(running.try_wait(), Ok(Some(_)))
            {
                return Err(Later(move || tail(log)));
            }
            *child = None;
            Ok(())
        })
        .await;
    }

    /// Whether its log holds `text` so far.
    pub fn log_contains(&self, text: &str) -> bool {
        std::fs::read_to_string(&self.log).is_ok_and(|log| log.contains(text))
    }

    /// The last lines of its log, for failure messages.
    pub fn log_tail(&self) -> String {
        tail(&self.log)
    }
}

/// The last lines of the log at `path`.
fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

impl Drop for Replica {
    fn drop(&mut self) {
        // A stopped process must be continued to die promptly on some kernels' accounting.
        self.signal(libc::SIGCONT);
        self.kill();
    }
}

/// N replicas plus the stand-ins they talk to, on one fresh database.
pub struct Cluster {
    /// The database every replica uses.
    pub url: String,
    pub llm: FakeLlm,
    pub slack: FakeSlack,
    pub telegram: FakeTelegram,
    pub replicas: Vec<Replica>,
    /// The TCP proxy the replicas reach the database through, when started `proxied` (the
    /// test's own store connects directly).
    pub proxy: Option<TcpProxy>,
    /// TOML appended to every replica's config (sections the base config does not have).
    extra: String,
    store: Option<Arc<dyn Store>>,
    dir: tempfile::TempDir,
}

impl Cluster {
    /// Start `n` replicas and wait until each is ready; `None` (with a notice) without
    /// PostgreSQL.
    pub async fn start(n: usize) -> Option<Self> {
        Self::start_with(n, "", false).await
    }

    /// [`Self::start`] with `extra` TOML in every replica's config and, when `proxied`, the
    /// replicas' database connections through a [`TcpProxy`] the test can cut.
    pub async fn start_with(n: usize, extra: &str, proxied: bool) -> Option<Self> {
        let url = postgres_url().await?;
        let proxy = if proxied {
            Some(TcpProxy::start(postgres_addr(&url)).await)
        } else {
            None
        };
        let mut cluster = Self {
            url,
            llm: FakeLlm::start().await,
            slack: FakeSlack::start().await,
            telegram: FakeTelegram::start().await,
            replicas: Vec::new(),
            proxy,
            extra: extra.to_owned(),
            store: None,
            dir: tempfile::tempdir().expect("temp dir"),
        };
        // Migrate once before the processes race to.
        cluster.store = Some(
            store::connect(&cluster.url)
                .await
                .expect("open the test db"),
        );
        for i in 0..n {
            let replica = cluster.spawn(i);
            cluster.replicas.push(replica);
        }
        for i in 0..n {
            cluster.wait_ready(i).await;
        }
        Some(cluster)
    }

    fn config(&self, instance: &str, port: u16) -> String {
        let dir = self.dir.path().display();
        format!(
            r#"
[gateway]
listen = "127.0.0.1:{port}"
database_url = "{url}"
data_dir = "{dir}/data"
instance_id = "{instance}"
shutdown_grace_secs = 1
[provider]
kind = "openai"
base_url = "{llm}"
model = "fake-model"
api_key = "test-key-not-real"
timeout_secs = 5
max_retries = 2
[streaming]
chunk_min_chars = 20
edit_min_interval_ms = 50
[cluster]
lease_ttl_ms = {ttl}
renew_ms = 300
heartbeat_ms = 500
poll_ms = 2000
[channels.slack]
kind = "slack"
bot_token = "{FAKE_BOT_TOKEN}"
signing_secret = "{FAKE_SIGNING_SECRET}"
api_url = "{slack}"
allowed_users = ["*"]
dm_policy = "open"
group_policy = "open"
[channels.telegram]
kind = "telegram"
token = "{TG_TOKEN}"
api_url = "{telegram}"
allowed_users = ["*"]
dm_policy = "open"
group_policy = "open"
poll_timeout_secs = 1
{extra}
"#,
            url = self.replica_url(),
            extra = self.extra,
            llm = self.llm.openai_url(),
            ttl = LEADER_TTL.as_millis(),
            slack = self.slack.api_url(),
            telegram = self.telegram.api_url(),
        )
    }

    /// The database URL the replicas use: through the proxy when there is one.
    fn replica_url(&self) -> String {
        match &self.proxy {
            Some(proxy) => proxy.url_through(&self.url),
            None => self.url.clone(),
        }
    }

    /// Spawn replica `i` (a fresh port; its instance id is `replica-<i>`).
    pub fn spawn(&self, i: usize) -> Replica {
        let port = free_port();
        let instance = format!("replica-{i}");
        let path = self.dir.path().join(format!("{instance}.toml"));
        std::fs::write(&path, self.config(&instance, port)).expect("write config");
        let log = self.dir.path().join(format!("{instance}.log"));
        let child = Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .arg("run")
            .arg("--config")
            .arg(&path)
            .env("NO_COLOR", "1")
            .env("RUST_LOG", "info,switchboard=debug")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("spawn switchboard");
        Replica {
            instance,
            port,
            child: Some(child),
            log,
        }
    }

    /// Wait until replica `i` answers `/readyz` with 200.
    pub async fn wait_ready(&self, i: usize) {
        let url = format!("http://127.0.0.1:{}/readyz", self.replicas[i].port);
        let client = reqwest::Client::new();
        let replica = &self.replicas[i];
        let what = format!("replica {i} to be ready");
        eventually(READY_WAIT, &what, async || {
            if let Ok(resp) = client.get(&url).send().await
                && resp.status() == 200
            {
                return Ok(());
            }
            Err(Later(move || replica.log_tail()))
        })
        .await;
    }

    /// `/readyz` of replica `i` as JSON.
    pub async fn readyz(&self, i: usize) -> serde_json::Value {
        let url = format!("http://127.0.0.1:{}/readyz", self.replicas[i].port);
        let resp = reqwest::get(&url).await.expect("readyz answers");
        resp.json().await.expect("readyz is JSON")
    }

    /// The `data_dir` every replica shares.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The store of the shared database, as the test sees it.
    pub fn store(&self) -> Arc<dyn Store> {
        Arc::clone(self.store.as_ref().expect("opened at start"))
    }

    /// POST a signed Slack event to replica `i`; the HTTP status.
    pub async fn post_slack(&self, i: usize, event: &serde_json::Value) -> u16 {
        let url = format!(
            "http://127.0.0.1:{}/slack/slack/events",
            self.replicas[i].port
        );
        SignedRequest::event(event)
            .build(&reqwest::Client::new(), &url, FAKE_SIGNING_SECRET)
            .send()
            .await
            .map_or(0, |r| r.status().as_u16())
    }

    /// POST a signed Slack interaction (a button press's `payload`) to replica `i`; the
    /// HTTP status.
    pub async fn post_interaction(&self, i: usize, payload: &serde_json::Value) -> u16 {
        let url = format!(
            "http://127.0.0.1:{}/slack/slack/interactions",
            self.replicas[i].port
        );
        SignedRequest::interaction(payload)
            .build(&reqwest::Client::new(), &url, FAKE_SIGNING_SECRET)
            .send()
            .await
            .map_or(0, |r| r.status().as_u16())
    }

    /// Wait (up to `within`) until `role` is led by someone other than `not`; the holder.
    pub async fn wait_leader(&self, role: &str, not: Option<&str>, within: Duration) -> String {
        eventually(
            within,
            &format!("a new leader of {role}"),
            async || match self.leader(role).await {
                Some((holder, _)) if Some(holder.as_str()) != not => Ok(holder),
                other => Err(other),
            },
        )
        .await
    }

    /// Index of the replica whose instance id is `instance`.
    pub fn index_of(&self, instance: &str) -> usize {
        self.replicas
            .iter()
            .position(|r| r.instance == instance)
            .expect("a known instance")
    }

    /// `state` and then every replica's log tail, read only if a wait fails with it.
    pub fn and_logs<S: Debug>(&self, state: S) -> Later<impl Fn() -> String> {
        Later(move || format!("{state:#?}\n{}", self.logs()))
    }

    /// Every replica's log tail, for failure messages.
    pub fn logs(&self) -> String {
        self.replicas
            .iter()
            .map(|r| format!("--- {} ---\n{}", r.instance, r.log_tail()))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Wait until the inbox holds `done` finished events and nothing pending or claimed.
    pub async fn wait_answered(&self, done: i64, within: Duration) {
        eventually(within, &format!("{done} events answered"), async || {
            let counts = self.store().inbox_counts().await.expect("counts");
            if counts.done >= done && counts.pending == 0 && counts.processing == 0 {
                Ok(())
            } else {
                Err(self.and_logs(counts))
            }
        })
        .await;
    }

    /// Kill every replica and drop the database.
    pub async fn finish(mut self) {
        for replica in &mut self.replicas {
            replica.kill();
        }
        if let Some(store) = self.store.take() {
            drop(store);
        }
        drop_postgres(&self.url).await;
    }
}

/// The host and port of the PostgreSQL server in `url`.
fn postgres_addr(url: &str) -> std::net::SocketAddr {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split('/').next().unwrap_or(rest);
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    let host_port = if host_port.contains(':') {
        host_port.to_owned()
    } else {
        format!("{host_port}:5432")
    };
    std::net::ToSocketAddrs::to_socket_addrs(&host_port)
        .ok()
        .and_then(|mut addrs| addrs.next())
        .expect("a resolvable PostgreSQL address")
}
