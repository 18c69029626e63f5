//! REST calls out: send, edit, delete, typing, buttons, limits, and how Discord's failures
//! reach the core as `ChannelError`s.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use switchboard_channel::{
    Button, Channel, ChannelError, ConversationKey, LengthUnit, MessageRef, Outbound, split_message,
};
use switchboard_discord::DiscordChannel;
use switchboard_standins::discord::{Failure, FakeDiscord};
use tokio_util::sync::CancellationToken;

use crate::helpers::{RecordingSink, config_for};

const CHAT: &str = "5000000000000000001";

fn key() -> ConversationKey {
    ConversationKey::new("discord", CHAT)
}

/// A channel pointed at a fresh fake, without running `start`.
async fn channel_and_fake() -> (DiscordChannel, FakeDiscord) {
    let discord = FakeDiscord::start().await;
    let channel = DiscordChannel::new("discord", config_for(&discord));
    (channel, discord)
}

#[tokio::test]
async fn bot_messages_suppress_embeds_unless_the_channel_opts_in() {
    let (channel, discord) = channel_and_fake().await;
    let link = Outbound::text("see https://attacker.example/?q=secret");
    let sent = channel.send(&key(), &link).await.unwrap();
    channel.edit(&key(), &sent, &link).await.unwrap();
    let shown = discord.messages(CHAT);
    assert!(!shown[0].shows_embeds(), "{shown:?}");
    assert_eq!(shown[0].edits, 1);

    let mut config = config_for(&discord);
    config.link_previews = true;
    let opted_in = DiscordChannel::new("discord", config);
    let sent = opted_in.send(&key(), &link).await.unwrap();
    let shown = discord.messages(CHAT);
    let posted = shown.iter().find(|m| m.id == sent.id).unwrap();
    assert!(posted.shows_embeds(), "{posted:?}");
}

#[tokio::test]
async fn send_and_edit_carry_empty_allowed_mentions_and_the_rendered_text() {
    let (channel, discord) = channel_and_fake().await;
    let sent = channel
        .send(
            &key(),
            &Outbound::text("**Hi** @everyone, ask <@&123> or <@456>"),
        )
        .await
        .unwrap();
    channel
        .edit(&key(), &sent, &Outbound::text("Edited, @here"))
        .await
        .unwrap();

    let create = &discord.calls_to("POST", &format!("/channels/{CHAT}/messages"))[0];
    let edit = &discord.calls_to("PATCH", &format!("/channels/{CHAT}/messages/{}", sent.id))[0];
    for call in [create, edit] {
        assert_eq!(
            call.body["allowed_mentions"]["parse"],
            json!([]),
            "{:?}",
            call.body
        );
        assert_eq!(
            call.authorization.as_deref(),
            Some("Bot test-token-not-real")
        );
    }
    let created = create.body["content"].as_str().unwrap();
    assert!(created.starts_with("**Hi**"), "{created}");
    for ping in ["@everyone", "<@&123>", "<@456>"] {
        assert!(
            !created.contains(ping),
            "{ping} survived rendering: {created}"
        );
    }
    let shown = &discord.messages(CHAT)[0];
    assert_eq!(shown.content, edit.body["content"].as_str().unwrap());
    assert!(!shown.content.contains("@here"), "{}", shown.content);
    assert_eq!((shown.edits, shown.components.clone()), (1, json!([])));

    channel.delete(&key(), &sent).await.unwrap();
    assert!(discord.messages(CHAT).is_empty());
}

#[tokio::test]
async fn a_message_over_2000_characters_is_too_long_and_its_split_parts_are_accepted() {
    let (channel, discord) = channel_and_fake().await;
    let limits = channel.limits();
    assert_eq!(
        (limits.max_message_len, limits.length_unit),
        (2000, LengthUnit::Chars)
    );
    let answer = "All work and no play. ".repeat(100); // 2,200 chars
    let err = channel
        .send(&key(), &Outbound::text(answer.clone()))
        .await
        .unwrap_err();
    assert_eq!(err, ChannelError::TooLong);
    assert_eq!(discord.calls()[0].status, 400, "Discord itself refused it");

    for part in split_message(&answer, limits.max_message_len, limits.length_unit) {
        channel.send(&key(), &Outbound::text(part)).await.unwrap();
    }
    assert_eq!(discord.messages(CHAT).len(), 2);
}

#[tokio::test]
async fn a_429_is_rate_limited_with_its_retry_after_and_not_retried() {
    let (channel, discord) = channel_and_fake().await;
    discord.fail_next(1, Failure::rate_limited(1.5));
    let err = channel
        .send(&key(), &Outbound::text("hello"))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        ChannelError::RateLimited {
            retry_after: Duration::from_millis(1500)
        }
    );
    assert_eq!(
        discord.calls().len(),
        1,
        "the 429 reached the caller instead of a retry loop"
    );
    channel
        .send(&key(), &Outbound::text("hello"))
        .await
        .unwrap();
}

#[tokio::test]
async fn discord_failures_map_to_not_found_fatal_and_transient() {
    let (channel, discord) = channel_and_fake().await;
    let gone = MessageRef::new("5000000000000000099");
    let err = channel
        .edit(&key(), &gone, &Outbound::text("x"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, ChannelError::NotFound(ref r) if r.contains("10008")),
        "{err:?}"
    );

    discord.fail_next(
        1,
        Failure::Error {
            status: 404,
            code: 10003,
            message: "Unknown Channel".into(),
        },
    );
    let err = channel
        .send(&key(), &Outbound::text("x"))
        .await
        .unwrap_err();
    assert!(matches!(err, ChannelError::NotFound(_)), "{err:?}");

    discord.fail_next(1, Failure::Unauthorized);
    assert!(matches!(
        channel.send(&key(), &Outbound::text("x")).await,
        Err(ChannelError::Fatal(_))
    ));
    discord.fail_next(1, Failure::Forbidden);
    assert!(matches!(
        channel.send(&key(), &Outbound::text("x")).await,
        Err(ChannelError::Fatal(_))
    ));
    discord.fail_next(1, Failure::ServerError);
    assert!(matches!(
        channel.send(&key(), &Outbound::text("x")).await,
        Err(ChannelError::Transient(_))
    ));

    let unreachable = DiscordChannel::new("discord", {
        let mut config = config_for(&discord);
        config.api_url = "http://127.0.0.1:1".into();
        config
    });
    let err = unreachable
        .send(&key(), &Outbound::text("x"))
        .await
        .unwrap_err();
    assert!(matches!(err, ChannelError::Transient(_)), "{err:?}");
}

#[tokio::test]
async fn typing_posts_to_the_channel_typing_route() {
    let (channel, discord) = channel_and_fake().await;
    channel.typing(&key()).await.unwrap();
    assert_eq!(
        discord
            .calls_to("POST", &format!("/channels/{CHAT}/typing"))
            .len(),
        1
    );
}

#[tokio::test]
async fn buttons_go_out_as_action_rows_and_an_edit_without_buttons_removes_them() {
    let (channel, discord) = channel_and_fake().await;
    let limits = channel.limits();
    assert!(limits.supports_buttons);
    assert_eq!(
        (limits.rate_per_window, limits.rate_window),
        (5, Duration::from_secs(5))
    );
    assert_eq!(limits.min_edit_interval, Duration::from_secs(1));
    let ask = Outbound {
        text: "Run `ls`?".into(),
        buttons: vec![
            Button {
                label: "Approve".into(),
                payload: "approve:1".into(),
            },
            Button {
                label: "Deny".into(),
                payload: "deny:1".into(),
            },
        ],
    };
    let sent = channel.send(&key(), &ask).await.unwrap();
    let row = &discord.messages(CHAT)[0].components[0];
    assert_eq!(row["type"], 1);
    assert_eq!(row["components"][0]["custom_id"], "approve:1");
    assert_eq!(row["components"][1]["label"], "Deny");

    channel
        .edit(&key(), &sent, &Outbound::text("Approved"))
        .await
        .unwrap();
    assert_eq!(discord.messages(CHAT)[0].components, json!([]));

    let too_long = Outbound {
        text: "x".into(),
        buttons: vec![Button {
            label: "Go".into(),
            payload: "p".repeat(101),
        }],
    };
    let before = discord.calls().len();
    assert!(matches!(
        channel.send(&key(), &too_long).await,
        Err(ChannelError::Fatal(_))
    ));
    assert_eq!(discord.calls().len(), before, "refused before any call");
}

#[tokio::test]
async fn a_refused_token_stops_start_with_a_fatal_error() {
    let discord = FakeDiscord::start().await;
    let mut config = config_for(&discord);
    config.token = "wrong-token-not-real".into();
    let channel = Arc::new(DiscordChannel::new("discord", config));
    let started = channel.start(Arc::new(RecordingSink::default()), CancellationToken::new());
    let err = tokio::time::timeout(Duration::from_secs(10), started)
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, ChannelError::Fatal(_)), "{err:?}");
    let health = channel.health();
    assert!(
        !health.ready && health.detail.contains("token"),
        "{health:?}"
    );
    assert!(
        !format!("{err:?}{health:?}").contains("wrong-token-not-real"),
        "the token is never shown"
    );
}
