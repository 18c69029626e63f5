//! Test harness: WhatsApp channels pointed at FakeGraph, their route served on 127.0.0.1:0,
//! delivering into the shared `RecordingSink` from the stand-ins.

use std::sync::Arc;

use switchboard_channel::{Channel, EventSink};
pub use switchboard_standins::RecordingSink;
use switchboard_standins::whatsapp::{
    FAKE_ACCESS_TOKEN, FAKE_APP_SECRET, FAKE_PHONE_NUMBER_ID, FAKE_VERIFY_TOKEN, FakeGraph,
    Notification,
};
use switchboard_whatsapp::{WhatsAppChannel, WhatsAppConfig};

/// Where the tests' channels take webhooks.
pub const PATH: &str = "/whatsapp/hook";

pub struct TestApp {
    pub graph: FakeGraph,
    pub channels: Vec<Arc<WhatsAppChannel>>,
    pub sink: Arc<RecordingSink>,
    pub base: String,
    _stop: tokio_util::sync::DropGuard,
}

/// A config for the fake: number `number`, everyone allowed.
pub fn config_for(graph: &FakeGraph, number: &str) -> WhatsAppConfig {
    let mut config = WhatsAppConfig::new(number, FAKE_ACCESS_TOKEN, FAKE_APP_SECRET);
    config.api_url = graph.api_url();
    config.verify_token = switchboard_channel::Secret::new(FAKE_VERIFY_TOKEN);
    config.webhook_path = Some(PATH.into());
    config.allowed_users = vec!["*".into()];
    config
}

pub async fn spawn_app() -> TestApp {
    spawn_with(&[FAKE_PHONE_NUMBER_ID], |_| {}).await
}

/// FakeGraph and one channel per business number in `numbers`, all on [`PATH`] (one
/// router, as the gateway would mount it); `configure` sees each config.
pub async fn spawn_with(numbers: &[&str], configure: impl Fn(&mut WhatsAppConfig)) -> TestApp {
    let graph = FakeGraph::start().await;
    let sink = RecordingSink::new();
    let as_sink: Arc<dyn EventSink> = sink.clone();
    let mut channels = Vec::new();
    let mut routers = Vec::new();
    for (i, number) in numbers.iter().enumerate() {
        let mut config = config_for(&graph, number);
        configure(&mut config);
        let channel = Arc::new(WhatsAppChannel::new(&format!("wa{i}"), config));
        routers.extend(channel.routes(Arc::clone(&as_sink)));
        channels.push(channel);
    }
    assert_eq!(routers.len(), 1, "channels on one path mount it once");
    let router = routers.pop().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let stop = switchboard_standins::serve_until_dropped(listener, router);
    TestApp {
        graph,
        channels,
        sink,
        base,
        _stop: stop,
    }
}

impl TestApp {
    /// The first channel.
    pub fn channel(&self) -> &Arc<WhatsAppChannel> {
        &self.channels[0]
    }

    /// Post `notification` signed with the app secret; the status.
    pub async fn post(&self, notification: &Notification) -> u16 {
        self.post_signed(notification, FAKE_APP_SECRET).await
    }

    /// Post `notification` signed with `secret`.
    pub async fn post_signed(&self, notification: &Notification, secret: &str) -> u16 {
        notification
            .post(&format!("{}{PATH}", self.base), secret)
            .await
    }
}
