//! The test app: the real gateway on 127.0.0.1:0 with its own SQLite file (or a given
//! database), the fake LLM, the in-process fake channel, and whichever platform stand-ins a
//! test asks for (Slack, Telegram, Discord, the web chat), each real client pointed at its
//! stand-in by `api_url`. One builder for every e2e test; `restart`, `stop`/`start` and a
//! killable first life for the tests that need them.
//!
//! Layout: `config` writes the config, `life` starts one life of the gateway, `builder`
//! gathers a test's choices, this file holds the running app.

mod builder;
mod config;
mod life;

use std::net::SocketAddr;
use std::sync::Arc;

use switchboard::RunningGateway;
use switchboard::agent::Tool;
use switchboard::clock::Clock;
use switchboard::config::Config;
use switchboard::store::Store;
use switchboard_channel::Channel;
use switchboard_standins::discord::FakeDiscord;
use switchboard_standins::signal::FakeSignal;
use switchboard_standins::slack::{FAKE_SIGNING_SECRET, FakeSlack, SignedRequest};
use switchboard_standins::telegram::FakeTelegram;
use switchboard_standins::whatsapp::{FAKE_APP_SECRET, FakeGraph, Notification};
use switchboard_standins::{FakeChannel, FakeLlm};

pub use builder::Builder;
pub use config::{Table, example_table, quoted, test_config};
pub use life::free_port;
use life::{Killable, Parts, any_port, bind};

/// A gateway under test and the stand-ins it talks to; they stop when it is dropped.
pub struct TestApp {
    /// The gateway while it runs in this test's runtime (`None` while stopped, or while a
    /// killable life runs).
    pub gateway: Option<RunningGateway>,
    pub llm: FakeLlm,
    /// The in-process channel named `fake`, part of every life.
    pub channel: Arc<FakeChannel>,
    /// The config every start uses; a test may change it between lives.
    pub config: Config,
    /// The clock the gateway reads (and a restart keeps).
    pub clock: Clock,
    slack: Option<FakeSlack>,
    telegram: Option<FakeTelegram>,
    discord: Option<FakeDiscord>,
    whatsapp: Option<FakeGraph>,
    signal: Option<FakeSignal>,
    tools: Vec<Arc<dyn Tool>>,
    /// Where the latest life serves HTTP; a graceful restart listens here again, so a page
    /// or socket client finds the gateway where it was.
    addr: SocketAddr,
    /// The channels the latest life built from the config (platforms, web chat).
    built: Vec<Arc<dyn Channel>>,
    /// A life on its own runtime, for a test that kills it mid-flight.
    killable: Option<Killable>,
    dir: tempfile::TempDir,
}

impl TestApp {
    /// Choose stand-ins and settings, then `start()`.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// Start with default settings.
    pub async fn spawn() -> Self {
        Self::builder().start().await
    }

    /// Start with extra TOML appended to the test config.
    pub async fn spawn_with(extra: &str) -> Self {
        Self::builder().config(extra).start().await
    }

    /// Start with a given channel.
    pub async fn spawn_on(channel: Arc<FakeChannel>, extra: &str) -> Self {
        Self::builder().fake(channel).config(extra).start().await
    }

    /// Start with a given channel, reading time from `clock` (a manual clock lets the test
    /// expire approvals and leases without waiting).
    pub async fn spawn_with_clock(channel: Arc<FakeChannel>, extra: &str, clock: Clock) -> Self {
        Self::builder()
            .fake(channel)
            .config(extra)
            .clock(clock)
            .start()
            .await
    }

    /// The running gateway.
    pub fn gateway(&self) -> &RunningGateway {
        self.gateway.as_ref().expect("running")
    }

    /// The store the gateway uses.
    pub fn store(&self) -> Arc<dyn Store> {
        self.gateway().store()
    }

    /// The address the gateway serves HTTP on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The test's own directory (database, workspaces, config-relative files).
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// The Slack stand-in.
    pub fn slack(&self) -> &FakeSlack {
        self.slack.as_ref().expect("built with .slack()")
    }

    /// The Telegram stand-in.
    pub fn telegram(&self) -> &FakeTelegram {
        self.telegram.as_ref().expect("built with .telegram()")
    }

    /// The Discord stand-in.
    pub fn discord(&self) -> &FakeDiscord {
        self.discord.as_ref().expect("built with .discord()")
    }

    /// The WhatsApp Graph API stand-in.
    pub fn whatsapp(&self) -> &FakeGraph {
        self.whatsapp.as_ref().expect("built with .whatsapp()")
    }

    /// Post `notification` to the WhatsApp channel's webhook, signed with the stand-in's app
    /// secret; the status the gateway answers.
    pub async fn whatsapp_post(&self, notification: &Notification) -> u16 {
        notification
            .post(&self.url("/whatsapp/whatsapp"), FAKE_APP_SECRET)
            .await
    }

    /// The signal-cli daemon stand-in.
    pub fn signal(&self) -> &FakeSignal {
        self.signal.as_ref().expect("built with .signal()")
    }

    /// The channel named `name` that the latest life built from the config.
    pub fn built(&self, name: &str) -> Arc<dyn Channel> {
        let found = self.built.iter().find(|c| c.name() == name);
        Arc::clone(found.unwrap_or_else(|| panic!("no channel {name} was built")))
    }

    /// Post a request signed with the stand-in's secret to the Slack route `route`
    /// (`events` or `interactions`); the status the gateway answers.
    pub async fn slack_post(&self, route: &str, request: SignedRequest) -> u16 {
        let url = self.url(&format!("/slack/slack/{route}"));
        let response = request
            .build(&reqwest::Client::new(), &url, FAKE_SIGNING_SECRET)
            .send()
            .await
            .unwrap();
        response.status().as_u16()
    }

    fn parts(&self) -> Parts {
        Parts {
            config: self.config.clone(),
            fake: Arc::clone(&self.channel),
            tools: self.tools.clone(),
            clock: self.clock.clone(),
        }
    }

    /// Start a life in this runtime on the same database, channel and stand-ins: on the
    /// address of the last graceful stop when it is free again, else on a fresh port (a
    /// killed life's runtime may still hold its port).
    pub async fn start(&mut self) {
        assert!(self.gateway.is_none() && self.killable.is_none(), "running");
        let listener = match tokio::net::TcpListener::bind(self.addr).await {
            Ok(listener) => listener,
            Err(_) => bind(any_port()).await,
        };
        let (gateway, built) = self.parts().start(listener).await;
        self.addr = gateway.addr();
        self.built = built;
        self.gateway = Some(gateway);
    }

    /// Start a life on its own runtime, for [`TestApp::kill`].
    pub async fn start_killable(&mut self) {
        assert!(self.gateway.is_none() && self.killable.is_none(), "running");
        let (killable, addr, built) = Killable::spawn(self.parts(), any_port()).await;
        self.addr = addr;
        self.built = built;
        self.killable = Some(killable);
    }

    /// Stop gracefully (open sockets are closed, unfinished events stay for the next start).
    pub async fn stop(&mut self) {
        if let Some(gateway) = self.gateway.take() {
            gateway.shutdown().await;
        }
    }

    /// Stop gracefully and start again on the same database and stand-ins.
    pub async fn restart(&mut self) {
        self.stop().await;
        self.start().await;
    }

    /// Another replica beside this app's gateway, in this runtime: the same config (database,
    /// LLM, stand-ins) as instance `name`, on its own `channel`, as a second process behind
    /// the same platform would run. The test shuts it down.
    pub async fn replica(&self, name: &str, channel: &Arc<FakeChannel>) -> RunningGateway {
        let mut parts = self.parts();
        parts.config.gateway.instance_id = Some(name.into());
        parts.fake = Arc::clone(channel);
        parts.start(bind(any_port()).await).await.0
    }

    /// Kill the killable life mid-flight: no shutdown, no inbox release.
    pub fn kill(&mut self) {
        self.killable.take().expect("a killable life").kill();
        self.addr = any_port();
    }

    /// Stop gracefully, at the end of a test.
    pub async fn shutdown(mut self) {
        self.stop().await;
    }
}
