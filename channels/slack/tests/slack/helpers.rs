//! Test harness: a SlackChannel pointed at FakeSlack, its routes served on 127.0.0.1:0,
//! delivering into the shared `RecordingSink` from the stand-ins.

use std::sync::Arc;
use std::time::Duration;

pub use switchboard_standins::RecordingSink;

use switchboard_channel::Channel;
use switchboard_slack::{SlackChannel, SlackConfig};
use switchboard_standins::eventually;
use switchboard_standins::slack::{FAKE_BOT_TOKEN, FAKE_SIGNING_SECRET, FakeSlack, SignedRequest};
use tokio_util::sync::CancellationToken;

pub struct TestApp {
    pub slack: FakeSlack,
    pub channel: Arc<SlackChannel>,
    pub sink: Arc<RecordingSink>,
    pub base: String,
    pub client: reqwest::Client,
    _stop: tokio_util::sync::DropGuard,
}

/// A config for the fake, allowing every user.
pub fn config_for(slack: &FakeSlack) -> SlackConfig {
    let mut config = SlackConfig::new(FAKE_BOT_TOKEN, FAKE_SIGNING_SECRET);
    config.api_url = slack.api_url();
    config.allowed_users = vec!["*".into()];
    config
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

/// Start FakeSlack, the channel (`start` runs until the app is dropped) and its routes;
/// returns once `auth.test` has answered.
pub async fn spawn_app_with(configure: impl FnOnce(&mut SlackConfig)) -> TestApp {
    let slack = FakeSlack::start().await;
    let mut config = config_for(&slack);
    configure(&mut config);
    let channel = Arc::new(SlackChannel::new("slack", config));
    let sink = Arc::new(RecordingSink::default());
    let stop = CancellationToken::new();

    let router = channel
        .routes(sink.clone())
        .expect("slack has webhook routes");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let stopped = stop.clone().cancelled_owned();
    tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(stopped)
            .await
            .unwrap();
    });
    let (runner, sink_for_start, token) = (channel.clone(), sink.clone(), stop.clone());
    tokio::spawn(async move { runner.start(sink_for_start, token).await });
    wait_until_ready(&channel).await;

    TestApp {
        slack,
        channel,
        sink,
        base,
        client: reqwest::Client::new(),
        _stop: stop.drop_guard(),
    }
}

pub async fn wait_until_ready(channel: &SlackChannel) {
    eventually(
        Duration::from_secs(5),
        "the channel to be ready",
        async || {
            let health = channel.health();
            if health.ready { Ok(()) } else { Err(health) }
        },
    )
    .await;
}

impl TestApp {
    pub async fn post_event(&self, request: &SignedRequest) -> reqwest::Response {
        self.post("events", request, FAKE_SIGNING_SECRET).await
    }

    pub async fn post_interaction(&self, request: &SignedRequest) -> reqwest::Response {
        self.post("interactions", request, FAKE_SIGNING_SECRET)
            .await
    }

    pub async fn post(
        &self,
        route: &str,
        request: &SignedRequest,
        secret: &str,
    ) -> reqwest::Response {
        let url = format!("{}/slack/slack/{route}", self.base);
        request
            .build(&self.client, &url, secret)
            .send()
            .await
            .unwrap()
    }
}
