//! Web API calls: send, edit, delete, limits and how Slack's failures reach the core.

use std::sync::Arc;
use std::time::Duration;

use switchboard_channel::{
    Button, Channel, ChannelError, ConversationKey, LengthUnit, MessageRef, Outbound, split_message,
};
use switchboard_slack::SlackChannel;
use switchboard_standins::slack::{FAKE_BOT_USER_ID, Failure, FakeSlack};
use tokio_util::sync::CancellationToken;

use crate::helpers::{RecordingSink, config_for, spawn_app, wait_until_ready};

fn thread_key() -> ConversationKey {
    ConversationKey::new("slack", "C1").in_thread("1700000100.000100")
}

/// A channel pointed at a fresh fake, without running `start`.
async fn channel_and_fake() -> (SlackChannel, FakeSlack) {
    let slack = FakeSlack::start().await;
    let channel = SlackChannel::new("slack", config_for(&slack));
    (channel, slack)
}

#[tokio::test]
async fn send_edit_and_delete_reach_slack_in_the_conversation_thread() {
    let (channel, slack) = channel_and_fake().await;
    let key = thread_key();

    let sent = channel
        .send(&key, &Outbound::text("**Hello** & <welcome>"))
        .await
        .unwrap();
    channel
        .edit(&key, &sent, &Outbound::text("Hello again"))
        .await
        .unwrap();
    let post = &slack.calls_to("chat.postMessage")[0];
    assert_eq!(post.body["channel"], "C1");
    assert_eq!(post.body["thread_ts"], "1700000100.000100");
    assert_eq!(post.body["text"], "*Hello* &amp; &lt;welcome&gt;");
    let update = &slack.calls_to("chat.update")[0];
    assert_eq!(update.body["ts"], sent.id.as_str());
    assert_eq!(update.body["text"], "Hello again");
    let shown = &slack.messages("C1")[0];
    assert_eq!((shown.text.as_str(), shown.edits), ("Hello again", 1));
    assert_eq!(shown.thread_ts.as_deref(), Some("1700000100.000100"));

    channel.delete(&key, &sent).await.unwrap();
    assert!(slack.messages("C1").is_empty());
    assert!(slack.calls().iter().all(|c| c.outcome.is_ok()));
}

#[tokio::test]
async fn bot_messages_go_out_without_link_previews_unless_the_channel_opts_in() {
    let (channel, slack) = channel_and_fake().await;
    let key = ConversationKey::new("slack", "C1");
    let link = Outbound::text("see https://attacker.example/?q=secret");
    channel.send(&key, &link).await.unwrap();
    assert!(!slack.messages("C1")[0].unfurls, "{:?}", slack.calls());

    let mut config = config_for(&slack);
    config.link_previews = true;
    let opted_in = SlackChannel::new("slack", config);
    opted_in
        .send(&ConversationKey::new("slack", "C2"), &link)
        .await
        .unwrap();
    assert!(slack.messages("C2")[0].unfurls);
}

#[tokio::test]
async fn a_message_outside_a_thread_has_no_thread_ts() {
    let (channel, slack) = channel_and_fake().await;
    channel
        .send(&ConversationKey::new("slack", "D1"), &Outbound::text("hi"))
        .await
        .unwrap();
    assert!(
        slack.calls_to("chat.postMessage")[0]
            .body
            .get("thread_ts")
            .is_none()
    );
}

#[tokio::test]
async fn a_45000_char_answer_split_to_the_limit_is_accepted_part_by_part() {
    let (channel, slack) = channel_and_fake().await;
    let limits = channel.limits();
    assert_eq!(
        (limits.max_message_len, limits.length_unit),
        (40_000, LengthUnit::Chars)
    );
    let answer = "All work and no play. ".repeat(2046); // 45,012 chars
    assert!(answer.chars().count() > 45_000);

    let parts = split_message(&answer, limits.max_message_len, limits.length_unit);
    assert_eq!(parts.len(), 2);
    for part in &parts {
        channel
            .send(&thread_key(), &Outbound::text(part.as_str()))
            .await
            .unwrap();
    }

    let calls = slack.calls_to("chat.postMessage");
    assert_eq!(calls.len(), 2);
    assert!(calls.iter().all(|c| c.outcome.is_ok()));
    let unsplit = channel.send(&thread_key(), &Outbound::text(answer)).await;
    assert_eq!(unsplit, Err(ChannelError::TooLong));
}

#[tokio::test]
async fn long_text_with_buttons_is_sent_as_sections_the_fake_accepts() {
    let (channel, slack) = channel_and_fake().await;
    let msg = Outbound {
        text: "Plan step. ".repeat(700), // 7,700 chars, over two sections' worth
        buttons: vec![Button {
            label: "Go".into(),
            payload: "go:1".into(),
        }],
    };
    channel.send(&thread_key(), &msg).await.unwrap();
    let blocks = slack.messages("C1")[0].blocks.clone().unwrap();
    let blocks = blocks.as_array().unwrap();
    assert_eq!(blocks.len(), 4, "three sections and the actions");
    assert_eq!(blocks[3]["elements"][0]["value"], "go:1");
}

#[tokio::test]
async fn an_edit_without_buttons_removes_the_earlier_buttons() {
    let (channel, slack) = channel_and_fake().await;
    let with_buttons = Outbound {
        text: "Approve?".into(),
        buttons: vec![Button {
            label: "Yes".into(),
            payload: "y".into(),
        }],
    };
    let sent = channel.send(&thread_key(), &with_buttons).await.unwrap();
    channel
        .edit(&thread_key(), &sent, &Outbound::text("Approved."))
        .await
        .unwrap();
    assert_eq!(slack.messages("C1")[0].blocks, None);
}

#[tokio::test]
async fn slack_failures_become_channel_errors_the_core_can_act_on() {
    let (channel, slack) = channel_and_fake().await;
    let msg = Outbound::text("hi");
    let cases = [
        (
            Failure::RateLimited {
                retry_after_secs: 3,
            },
            ChannelError::RateLimited {
                retry_after: Duration::from_secs(3),
            },
        ),
        (
            Failure::Error("ratelimited".into()),
            ChannelError::RateLimited {
                retry_after: Duration::from_secs(1),
            },
        ),
        (Failure::MsgTooLong, ChannelError::TooLong),
        (
            Failure::InvalidAuth,
            ChannelError::Fatal("invalid_auth".into()),
        ),
        (
            Failure::Error("channel_not_found".into()),
            ChannelError::NotFound("channel_not_found".into()),
        ),
    ];
    for (failure, expected) in cases {
        slack.fail_next(1, failure.clone());
        assert_eq!(
            channel.send(&thread_key(), &msg).await,
            Err(expected),
            "{failure:?}"
        );
    }
    slack.fail_next(1, Failure::ServerError);
    let err = channel.send(&thread_key(), &msg).await.unwrap_err();
    assert!(matches!(err, ChannelError::Transient(_)), "{err:?}");

    let gone = channel
        .edit(&thread_key(), &MessageRef::new("1.0"), &msg)
        .await;
    assert_eq!(
        gone,
        Err(ChannelError::NotFound("message_not_found".into()))
    );
}

#[tokio::test]
async fn a_wrong_bot_token_is_fatal_and_start_gives_up_with_health_not_ready() {
    let slack = FakeSlack::start_with_token("xoxb-some-other-fake").await;
    let channel = SlackChannel::new("slack", config_for(&slack));
    let sent = channel.send(&thread_key(), &Outbound::text("hi")).await;
    assert_eq!(sent, Err(ChannelError::Fatal("invalid_auth".into())));

    let started = channel
        .start(Arc::new(RecordingSink::default()), CancellationToken::new())
        .await;
    assert_eq!(started, Err(ChannelError::Fatal("invalid_auth".into())));
    let health = channel.health();
    assert!(!health.ready);
    assert!(health.detail.contains("invalid_auth"), "{}", health.detail);
}

#[tokio::test]
async fn start_retries_auth_test_after_a_server_error_and_then_becomes_ready() {
    let (channel, slack) = channel_and_fake().await;
    slack.fail_next(1, Failure::ServerError);
    let channel = Arc::new(channel);
    let stop = CancellationToken::new();
    let runner = {
        let (channel, stop) = (channel.clone(), stop.clone());
        tokio::spawn(async move {
            channel
                .start(Arc::new(RecordingSink::default()), stop)
                .await
        })
    };
    wait_until_ready(&channel).await;
    assert_eq!(channel.bot_user_id(), Some(FAKE_BOT_USER_ID));
    assert_eq!(slack.calls_to("auth.test").len(), 2);

    stop.cancel();
    assert_eq!(runner.await.unwrap(), Ok(()));
}

#[tokio::test]
async fn the_channel_declares_slack_limits_and_button_support() {
    let app = spawn_app().await;
    let limits = app.channel.limits();
    assert!(limits.supports_buttons);
    assert_eq!(limits.min_edit_interval, Duration::from_secs(1));
    assert_eq!(
        (limits.rate_per_window, limits.rate_window),
        (1, Duration::from_secs(1))
    );
    assert_eq!(app.channel.name(), "slack");
    assert!(app.channel.health().ready);
}
