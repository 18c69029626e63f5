//! Health while polling: a 409 Conflict (another poller, or a webhook left set) is reported,
//! retried, and cleared once Telegram answers again; nothing deletes the webhook silently.

use switchboard_channel::Channel;
use switchboard_standins::telegram::{Failure, FakeUser, UserMessage};

use crate::helpers::{Harness, RecordingSink};

#[tokio::test]
async fn a_409_makes_the_channel_not_ready_until_polling_works_again() {
    let h = Harness::polling(RecordingSink::new(), |_| {}).await;
    h.wait_for_health(|health| health.ready).await;

    h.fake.set_conflict(true);
    let health = h.wait_for_health(|health| !health.ready).await;
    assert!(
        health.detail.contains("another bot instance is polling"),
        "{}",
        health.detail
    );
    assert!(health.detail.contains("deleteWebhook"), "{}", health.detail);
    // It keeps retrying rather than going quiet.
    h.fake
        .wait_for_calls("getUpdates", h.fake.calls_to("getUpdates").len() + 2)
        .await;

    h.fake.set_conflict(false);
    h.wait_for_health(|health| health.ready).await;
    h.fake.inject(&UserMessage::private(
        FakeUser::human(1001, "alice"),
        "still there?",
    ));
    h.sink.wait_for(1).await;
}

#[tokio::test]
async fn a_webhook_left_set_is_reported_and_not_deleted() {
    let h = Harness::polling(RecordingSink::new(), |_| {}).await;
    h.fake
        .preset_webhook("https://old-deployment.example.test/hook");
    let health = h
        .wait_for_health(|health| !health.ready && health.detail.contains("409"))
        .await;
    assert!(health.detail.contains("webhook"), "{}", health.detail);
    h.fake.wait_for_calls("getUpdates", 3).await;
    assert!(h.fake.calls_to("deleteWebhook").is_empty());
    assert!(h.fake.webhook().is_some());
}

#[tokio::test]
async fn a_polling_channel_is_not_ready_before_its_first_successful_poll() {
    let h = Harness::idle().await;
    let health = h.channel.health();
    assert!(!health.ready);
    assert_eq!(health.detail, "starting");
}

#[tokio::test]
async fn a_one_off_409_recovers_with_the_next_poll() {
    let h = Harness::polling(RecordingSink::new(), |_| {}).await;
    h.fake.fail_next("getUpdates", Failure::Conflict);
    h.fake.inject(&UserMessage::private(
        FakeUser::human(1001, "alice"),
        "after the conflict",
    ));
    h.sink.wait_for(1).await;
    h.wait_for_health(|health| health.ready).await;
}

#[tokio::test]
async fn a_rejected_token_stops_polling_with_a_fatal_error_and_not_ready_health() {
    let fake = switchboard_standins::telegram::FakeTelegram::start_with_token(
        "654321:TEST-another-fake-token",
    )
    .await;
    let channel =
        switchboard_telegram::TelegramChannel::new("telegram", crate::helpers::config_for(&fake))
            .expect("valid config");
    let stopped = channel
        .start(
            RecordingSink::new(),
            tokio_util::sync::CancellationToken::new(),
        )
        .await;
    assert!(
        matches!(stopped, Err(switchboard_channel::ChannelError::Fatal(_))),
        "{stopped:?}"
    );
    let health = channel.health();
    assert!(!health.ready);
    assert!(health.detail.starts_with("stopped"), "{}", health.detail);
    assert!(
        !health.detail.contains("TEST-"),
        "the token leaked: {}",
        health.detail
    );
}
