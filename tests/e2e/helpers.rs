//! Spawning gateways for tests: each gets its own SQLite file (or PostgreSQL database), its
//! own fake LLM and fake channel, and binds 127.0.0.1:0.

use std::sync::Arc;
use std::time::Duration;

use switchboard::clock::Clock;
use switchboard::config::{self, Config};
use switchboard::store::{self, Store};
use switchboard::{Gateway, RunningGateway};
use switchboard_channel::{ChannelEvent, ConversationKey, Inbound, Place, UserRef};
use switchboard_standins::{FakeChannel, FakeLlm};
use tokio::net::TcpListener;

/// Generous upper bound for anything a test waits for.
pub const WAIT: Duration = Duration::from_secs(15);

/// Config for a test gateway talking to `llm`, with its database and workspaces in `dir`.
pub fn test_config(llm_url: &str, dir: &std::path::Path, extra: &str) -> Config {
    let dir = dir.display();
    let text = format!(
        r#"
[gateway]
listen = "127.0.0.1:0"
database_url = "sqlite://{dir}/test.db"
data_dir = "{dir}"
shutdown_grace_secs = 1
[provider]
kind = "openai"
base_url = "{llm_url}"
model = "fake-model"
api_key = "test-key-not-real"
timeout_secs = 5
max_retries = 2
[streaming]
chunk_min_chars = 20
progress_min_interval_ms = 50
{extra}
"#
    );
    let mut config = config::parse(&text, "test.toml", &[]).expect("test config is valid");
    // In-process gateways: the supervisor is the real binary, not this test binary.
    (config.sandbox.supervisor).get_or_insert_with(|| env!("CARGO_BIN_EXE_switchboard").into());
    config
}

/// A gateway with a fake LLM, one fake channel named `fake`, and a private SQLite file.
pub struct TestApp {
    pub gateway: Option<RunningGateway>,
    pub llm: FakeLlm,
    pub channel: Arc<FakeChannel>,
    pub config: Config,
    /// The clock the gateway reads (and a restart keeps).
    pub clock: Clock,
    _dir: tempfile::TempDir,
}

impl TestApp {
    /// Start with default settings.
    pub async fn spawn() -> Self {
        Self::spawn_with("").await
    }

    /// Start with extra TOML appended to the test config.
    pub async fn spawn_with(extra: &str) -> Self {
        Self::spawn_on(FakeChannel::new("fake"), extra).await
    }

    /// Start with a given channel.
    pub async fn spawn_on(channel: Arc<FakeChannel>, extra: &str) -> Self {
        Self::spawn_with_clock(channel, extra, Clock::wall()).await
    }

    /// Start with a given channel, reading time from `clock` (a manual clock lets the test
    /// expire approvals and leases without waiting).
    pub async fn spawn_with_clock(channel: Arc<FakeChannel>, extra: &str, clock: Clock) -> Self {
        let llm = FakeLlm::start().await;
        let dir = tempfile::tempdir().unwrap();
        let config = test_config(&llm.openai_url(), dir.path(), extra);
        let gateway = start_with_clock(&config, &channel, clock.clone()).await;
        Self {
            gateway: Some(gateway),
            llm,
            channel,
            config,
            clock,
            _dir: dir,
        }
    }

    /// The running gateway.
    pub fn gateway(&self) -> &RunningGateway {
        self.gateway.as_ref().expect("running")
    }

    /// The store the gateway uses.
    pub fn store(&self) -> Arc<dyn Store> {
        self.gateway().store()
    }

    /// Stop gracefully and start again on the same database and channel.
    pub async fn restart(&mut self) {
        if let Some(g) = self.gateway.take() {
            g.shutdown().await;
        }
        let clock = self.clock.clone();
        self.gateway = Some(start_with_clock(&self.config, &self.channel, clock).await);
    }
}

/// Start a gateway for `config` with `channel`.
pub async fn start(config: &Config, channel: &Arc<FakeChannel>) -> RunningGateway {
    start_with_clock(config, channel, Clock::wall()).await
}

/// Start a gateway for `config` with `channel`, reading time from `clock`.
pub async fn start_with_clock(
    config: &Config,
    channel: &Arc<FakeChannel>,
    clock: Clock,
) -> RunningGateway {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    Gateway::new(config.clone())
        .channel(channel.clone())
        .clock(clock)
        .start(listener)
        .await
        .expect("gateway starts")
}

/// A loopback port free at the moment of asking, for a gateway started as its own process.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The system clock in Unix ms (the starting point of a test's manual clock).
pub fn wall_ms() -> i64 {
    Clock::wall().now_ms()
}

/// A gateway running on its own runtime, so a test can kill it without any graceful step,
/// the way `kill -9` would.
pub struct Killable {
    runtime: tokio::runtime::Runtime,
}

impl Killable {
    /// Start `config` with `channel` on a fresh runtime.
    pub async fn start(config: &Config, channel: &Arc<FakeChannel>) -> Self {
        Self::start_with_clock(config, channel, Clock::wall()).await
    }

    /// Start `config` with `channel` on a fresh runtime, reading time from `clock`.
    pub async fn start_with_clock(
        config: &Config,
        channel: &Arc<FakeChannel>,
        clock: Clock,
    ) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (config, channel) = (config.clone(), channel.clone());
        let (tx, rx) = tokio::sync::oneshot::channel();
        runtime.spawn(async move {
            let gateway = start_with_clock(&config, &channel, clock).await;
            let _ = tx.send(());
            // Keep it alive until the runtime is killed.
            std::future::pending::<()>().await;
            drop(gateway);
        });
        rx.await.expect("gateway started");
        Self { runtime }
    }

    /// Start `config` with the channels it configures (real platform clients) on a fresh
    /// runtime.
    pub async fn start_from_config(config: &Config) -> Self {
        Self::start_from_config_with_addr(config).await.0
    }

    /// [`Killable::start_from_config`], also returning the address it serves HTTP on.
    pub async fn start_from_config_with_addr(config: &Config) -> (Self, std::net::SocketAddr) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let config = config.clone();
        let (tx, rx) = tokio::sync::oneshot::channel();
        runtime.spawn(async move {
            let mut gateway = Gateway::new(config.clone());
            for channel in switchboard::channels::from_config(&config).unwrap() {
                gateway = gateway.channel(channel);
            }
            let listener = TcpListener::from_std(listener).unwrap();
            let running = gateway.start(listener).await.expect("gateway starts");
            let _ = tx.send(());
            std::future::pending::<()>().await;
            drop(running);
        });
        rx.await.expect("gateway started");
        (Self { runtime }, addr)
    }

    /// Drop every task mid-flight: no shutdown, no inbox release.
    pub fn kill(self) {
        self.runtime.shutdown_background();
    }
}

/// A direct message from user `u1` in `key`, as a channel hands it to the inbox.
pub fn direct_message(key: &ConversationKey, id: &str, text: &str) -> ChannelEvent {
    ChannelEvent::Message(Inbound {
        key: key.clone(),
        event_id: id.into(),
        user: UserRef {
            id: "u1".into(),
            name: None,
        },
        text: text.into(),
        place: Place::Direct,
        attachments: Vec::new(),
    })
}

/// A conversation key on the fake channel.
pub fn key(chat: &str) -> ConversationKey {
    ConversationKey::new("fake", chat)
}

/// Wait until the conversation's transcript satisfies `done`.
pub async fn wait_transcript(
    channel: &FakeChannel,
    key: &ConversationKey,
    done: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let ok = channel
        .wait_until(WAIT, |_| done(&channel.transcript(key)))
        .await;
    let transcript = channel.transcript(key);
    assert!(ok, "timed out; transcript so far: {transcript:#?}");
    transcript
}

/// Wait until the inbox has no unfinished rows.
pub async fn wait_inbox_idle(store: &Arc<dyn Store>) {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let counts = store.inbox_counts().await.unwrap();
        if counts.pending == 0 && counts.processing == 0 {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "inbox never drained: {counts:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A fresh PostgreSQL database for one test, or `None` (with a visible notice) when no
/// server is reachable. With `SWITCHBOARD_REQUIRE_POSTGRES=1` (set by CI) a missing server
/// fails the test instead.
pub async fn postgres_url() -> Option<String> {
    use sqlx::Connection;
    let candidates = match std::env::var("SWITCHBOARD_TEST_POSTGRES") {
        Ok(url) => vec![url],
        Err(_) => vec![
            "postgres://postgres@127.0.0.1:5432/test".to_owned(),
            "postgres://root@127.0.0.1:5432/test".to_owned(),
        ],
    };
    for admin in &candidates {
        let Ok(mut conn) = sqlx::PgConnection::connect(admin).await else {
            continue;
        };
        let name = format!("sb_test_{}", uuid::Uuid::new_v4().simple());
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut conn)
            .await
            .expect("create test database");
        let base = admin.rsplit_once('/').map(|(b, _)| b).unwrap_or(admin);
        return Some(format!("{base}/{name}"));
    }
    let required = std::env::var("SWITCHBOARD_REQUIRE_POSTGRES").is_ok_and(|v| v == "1");
    assert!(
        !required,
        "PostgreSQL is required (SWITCHBOARD_REQUIRE_POSTGRES=1) but unreachable at {candidates:?}"
    );
    eprintln!(
        "NOTICE: PostgreSQL not reachable at {candidates:?}; skipping the PostgreSQL half of this test"
    );
    None
}

/// A fresh SQLite store in `dir`.
pub async fn sqlite_store(dir: &tempfile::TempDir) -> Arc<dyn Store> {
    store::connect(&format!("sqlite://{}/s.db", dir.path().display()))
        .await
        .unwrap()
}

/// Drop a database made by [`postgres_url`] (connections still open are terminated).
pub async fn drop_postgres(url: &str) {
    use sqlx::Connection;
    let (base, name) = url.rsplit_once('/').expect("url has a database");
    if let Ok(mut conn) = sqlx::PgConnection::connect(&format!("{base}/test")).await {
        let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .execute(&mut conn)
            .await;
    }
}
