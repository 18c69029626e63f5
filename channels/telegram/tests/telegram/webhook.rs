//! Webhook mode: `setWebhook` at start, and `POST /telegram/<name>` checking the secret
//! header, storing the update, and only then answering 200.

use std::net::SocketAddr;
use std::sync::Arc;

use serde_json::Value;
use switchboard_channel::{Channel, EventSink};
use switchboard_standins::telegram::{FakeTelegram, FakeUser, UserMessage};
use switchboard_telegram::{Mode, SECRET_HEADER, TelegramChannel};
use tokio_util::sync::CancellationToken;

use crate::helpers::{RecordingSink, config_for, inbound, key};

const SECRET: &str = "test-webhook-secret";
const HOOK_URL: &str = "https://gateway.example.test/telegram/telegram";

struct Webhook {
    fake: FakeTelegram,
    channel: Arc<TelegramChannel>,
    sink: Arc<RecordingSink>,
    addr: SocketAddr,
}

async fn webhook(sink: Arc<RecordingSink>) -> Webhook {
    let fake = FakeTelegram::start().await;
    let mut config = config_for(&fake);
    config.mode = Mode::Webhook;
    config.webhook_url = Some(HOOK_URL.into());
    config.secret_token = SECRET.into();
    let channel = Arc::new(TelegramChannel::new("telegram", config).expect("valid config"));
    let routes = channel
        .routes(Arc::clone(&sink) as Arc<dyn EventSink>)
        .expect("webhook mode mounts a route");
    let addr = switchboard_standins::serve(routes).await;
    Webhook {
        fake,
        channel,
        sink,
        addr,
    }
}

async fn post(addr: SocketAddr, secret: Option<&str>, body: String) -> u16 {
    let mut request = reqwest::Client::new()
        .post(format!("http://{addr}/telegram/telegram"))
        .header("content-type", "application/json")
        .body(body);
    if let Some(secret) = secret {
        request = request.header(SECRET_HEADER, secret);
    }
    request
        .send()
        .await
        .expect("webhook reachable")
        .status()
        .as_u16()
}

fn update(fake: &FakeTelegram, text: &str) -> (Value, i64) {
    let (update, sent) =
        fake.update_for(&UserMessage::private(FakeUser::human(1001, "alice"), text));
    (update, sent.update_id)
}

#[tokio::test]
async fn start_sets_the_webhook_with_its_secret_and_becomes_ready() {
    let w = webhook(RecordingSink::new()).await;
    assert!(!w.channel.health().ready);
    w.channel
        .start(w.sink.clone(), CancellationToken::new())
        .await
        .expect("webhook set");
    assert_eq!(
        w.fake.webhook(),
        Some((HOOK_URL.to_owned(), Some(SECRET.to_owned())))
    );
    assert!(w.channel.health().ready);
    assert!(w.fake.calls_to("getUpdates").is_empty());
}

#[tokio::test]
async fn a_missing_or_wrong_secret_is_refused_and_nothing_is_stored() {
    let w = webhook(RecordingSink::new()).await;
    let (body, _) = update(&w.fake, "forged");
    assert_eq!(post(w.addr, None, body.to_string()).await, 401);
    assert_eq!(
        post(w.addr, Some("wrong-secret"), body.to_string()).await,
        401
    );
    assert_eq!(
        post(w.addr, Some(&SECRET[..SECRET.len() - 1]), body.to_string()).await,
        401
    );
    assert!(w.sink.attempts().is_empty());
}

#[tokio::test]
async fn a_signed_update_is_stored_before_the_200() {
    let w = webhook(RecordingSink::new()).await;
    let (body, update_id) = update(&w.fake, "hello via webhook");
    assert_eq!(post(w.addr, Some(SECRET), body.to_string()).await, 200);
    // No waiting: the event must already be stored when Telegram gets its answer.
    let events = w.sink.stored();
    assert_eq!(events.len(), 1);
    assert_eq!(inbound(&events[0]).key, key(1001, None));
    assert_eq!(inbound(&events[0]).event_id, format!("u{update_id}"));

    // A redelivery is answered 200 and stays one event.
    assert_eq!(post(w.addr, Some(SECRET), body.to_string()).await, 200);
    assert_eq!(w.sink.stored().len(), 1);
}

#[tokio::test]
async fn a_malformed_body_gets_400() {
    let w = webhook(RecordingSink::new()).await;
    assert_eq!(post(w.addr, Some(SECRET), "{not json".into()).await, 400);
    assert_eq!(
        post(w.addr, Some(SECRET), r#"{"message":{}}"#.into()).await,
        400
    );
    assert!(w.sink.attempts().is_empty());
}

#[tokio::test]
async fn a_sink_failure_gets_500_so_telegram_redelivers() {
    let w = webhook(RecordingSink::failing(1)).await;
    let (body, _) = update(&w.fake, "try again");
    assert_eq!(post(w.addr, Some(SECRET), body.to_string()).await, 500);
    assert!(w.sink.stored().is_empty());
    assert_eq!(post(w.addr, Some(SECRET), body.to_string()).await, 200);
    assert_eq!(w.sink.stored().len(), 1);
}
