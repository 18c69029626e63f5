//! Readiness in polling mode: the first `getUpdates` asks with timeout 0, so the channel is
//! ready as soon as Telegram answered once, not after a whole long poll.

use switchboard_standins::telegram::{FakeUser, UserMessage};

use crate::helpers::{Harness, RecordingSink};

#[tokio::test]
async fn the_first_get_updates_has_timeout_zero_and_readiness_comes_before_a_long_poll_returns() {
    let h = Harness::polling(RecordingSink::new(), |c| c.poll_timeout_secs = 30).await;
    let health = h.wait_for_health(|h| h.ready).await;
    assert_eq!(health.detail, "polling");
    let answered = h.fake.calls_to("getUpdates");
    // Calls are recorded when they return; the long poll after the first is still waiting.
    assert_eq!(answered.len(), 1, "{answered:?}");
    assert_eq!(
        answered[0].params["timeout"].as_i64(),
        Some(0),
        "{answered:?}"
    );
    // And the poller goes on with the configured long poll: a message queued now is
    // delivered by it (it returns early with the update).
    h.fake.inject(&UserMessage::private(
        FakeUser::human(1001, "alice"),
        "hello",
    ));
    h.sink.wait_for(1).await;
    let calls = h.fake.wait_for_calls("getUpdates", 2).await;
    assert_eq!(calls[1].params["timeout"].as_i64(), Some(30), "{calls:?}");
}
