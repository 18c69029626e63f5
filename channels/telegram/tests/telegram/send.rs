//! Sending: markdown rendered to Telegram HTML in the right chat and topic, the fallbacks
//! (plain text when the HTML is refused, "not modified" is fine), and errors as the core sees
//! them (429, too long, gone, bad token).

use std::time::Duration;

use switchboard_channel::{Channel, ChannelError, LengthUnit, MessageRef, Outbound, split_message};
use switchboard_standins::telegram::{Failure, FakeTelegram, MAX_TEXT_UTF16};
use switchboard_telegram::{DraftTransport, TelegramChannel};

use crate::helpers::{Harness, config_for, key};

const GROUP: i64 = -100_777;

#[tokio::test]
async fn markdown_is_sent_as_html_in_the_topic_and_edited_in_place() {
    let h = Harness::idle().await;
    h.fake.add_chat(GROUP);
    let conversation = key(GROUP, Some(42));

    let posted = h
        .channel
        .send(
            &conversation,
            &Outbound::text("**Done**: see https://example.test and `x < y`"),
        )
        .await
        .expect("sent");
    let call = &h.fake.calls_to("sendMessage")[0];
    assert_eq!(call.params["parse_mode"], "HTML");
    assert_eq!(call.params["message_thread_id"], 42);
    assert_eq!(call.params["link_preview_options"]["is_disabled"], true);
    let message = h.fake.messages(GROUP).pop().expect("stored");
    assert!(message.raw.contains("<b>Done</b>"), "{}", message.raw);
    assert!(
        message.raw.contains("<code>x &lt; y</code>"),
        "{}",
        message.raw
    );
    assert_eq!(message.thread_id, Some(42));
    assert_eq!(message.message_id.to_string(), posted.id);

    h.channel
        .edit(&conversation, &posted, &Outbound::text("_All_ done"))
        .await
        .expect("edited");
    let message = h.fake.messages(GROUP).pop().expect("stored");
    assert_eq!(message.text, "All done");
    assert_eq!(message.raw, "<i>All</i> done");
    assert_eq!(message.edits, 1);
}

#[tokio::test]
async fn html_telegram_cannot_parse_is_resent_as_plain_text() {
    let h = Harness::idle().await;
    h.fake.add_chat(1001);
    h.fake.fail_next(
        "sendMessage",
        Failure::Error(
            400,
            "Bad Request: can't parse entities: Unsupported start tag \"x\" at byte offset 0"
                .into(),
        ),
    );
    h.channel
        .send(&key(1001, None), &Outbound::text("**bold** answer"))
        .await
        .expect("sent as plain text");
    let calls = h.fake.calls_to("sendMessage");
    assert_eq!(calls.len(), 2);
    assert!(calls[0].outcome.is_err());
    assert!(calls[1].params.get("parse_mode").is_none());
    let message = h.fake.messages(1001).pop().expect("stored");
    assert_eq!(message.text, "**bold** answer");

    // The same for an edit.
    let posted = MessageRef::new(message.message_id.to_string());
    h.fake.fail_next(
        "editMessageText",
        Failure::Error(400, "Bad Request: can't parse entities: Can't find end tag corresponding to start tag \"b\"".into()),
    );
    h.channel
        .edit(&key(1001, None), &posted, &Outbound::text("**still** fine"))
        .await
        .expect("edited as plain text");
    assert_eq!(h.fake.messages(1001).pop().unwrap().text, "**still** fine");
}

#[tokio::test]
async fn an_edit_that_changes_nothing_is_ok() {
    let h = Harness::idle().await;
    h.fake.add_chat(1001);
    let conversation = key(1001, None);
    let posted = h
        .channel
        .send(&conversation, &Outbound::text("same"))
        .await
        .unwrap();
    h.channel
        .edit(&conversation, &posted, &Outbound::text("same"))
        .await
        .expect("not modified is fine");
    let edits = h.fake.calls_to("editMessageText");
    assert_eq!(edits.len(), 1);
    assert!(
        edits[0]
            .outcome
            .as_ref()
            .unwrap_err()
            .contains("message is not modified")
    );
}

#[tokio::test]
async fn a_429_becomes_rate_limited_with_telegrams_retry_after() {
    let h = Harness::idle().await;
    h.fake.add_chat(1001);
    h.fake.fail_next("sendMessage", Failure::RetryAfter(7));
    let err = h
        .channel
        .send(&key(1001, None), &Outbound::text("hi"))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        ChannelError::RateLimited {
            retry_after: Duration::from_secs(7)
        }
    );

    let posted = h
        .channel
        .send(&key(1001, None), &Outbound::text("hi"))
        .await
        .unwrap();
    h.fake.fail_next("editMessageText", Failure::RetryAfter(3));
    let err = h
        .channel
        .edit(&key(1001, None), &posted, &Outbound::text("hi!"))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        ChannelError::RateLimited {
            retry_after: Duration::from_secs(3)
        }
    );
}

#[tokio::test]
async fn a_6000_character_answer_split_for_telegram_arrives_in_accepted_parts() {
    let h = Harness::idle().await;
    h.fake.add_chat(1001);
    let answer: String = (0..600).map(|i| format!("Zeile {i:03} 😀 ")).collect();
    assert!(answer.chars().count() >= 6000);

    let unsplit = h
        .channel
        .send(&key(1001, None), &Outbound::text(answer.clone()))
        .await;
    assert_eq!(unsplit, Err(ChannelError::TooLong));

    let limits = h.channel.limits();
    let parts = split_message(&answer, limits.max_message_len, limits.length_unit);
    assert!(parts.len() >= 2);
    for part in &parts {
        assert!(LengthUnit::Utf16.measure(part) <= MAX_TEXT_UTF16);
        h.channel
            .send(&key(1001, None), &Outbound::text(part.clone()))
            .await
            .expect("part accepted");
    }
    let stored: Vec<String> = h.fake.messages(1001).into_iter().map(|m| m.text).collect();
    assert_eq!(stored.len(), parts.len());
    assert_eq!(stored.concat().matches("Zeile").count(), 600);
}

#[tokio::test]
async fn a_missing_message_or_chat_is_not_found() {
    let h = Harness::idle().await;
    h.fake.add_chat(1001);
    let err = h
        .channel
        .edit(
            &key(1001, None),
            &MessageRef::new("999"),
            &Outbound::text("x"),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, ChannelError::NotFound(_)), "{err:?}");
    let err = h
        .channel
        .send(&key(424_242, None), &Outbound::text("x"))
        .await
        .unwrap_err();
    assert!(matches!(err, ChannelError::NotFound(_)), "{err:?}");
    let err = h
        .channel
        .delete(&key(1001, None), &MessageRef::new("999"))
        .await
        .unwrap_err();
    assert!(matches!(err, ChannelError::NotFound(_)), "{err:?}");
}

#[tokio::test]
async fn a_rejected_token_is_fatal() {
    let fake = FakeTelegram::start_with_token("654321:TEST-another-fake-token").await;
    fake.add_chat(1001);
    let channel = TelegramChannel::new("telegram", config_for(&fake)).unwrap();
    let err = channel
        .send(&key(1001, None), &Outbound::text("x"))
        .await
        .unwrap_err();
    assert!(matches!(err, ChannelError::Fatal(_)), "{err:?}");
}

#[tokio::test]
async fn typing_and_delete_reach_the_topic_and_the_message() {
    let h = Harness::idle().await;
    h.fake.add_chat(GROUP);
    let conversation = key(GROUP, Some(42));
    h.channel.typing(&conversation).await.expect("typing");
    let call = &h.fake.calls_to("sendChatAction")[0];
    assert_eq!(call.params["action"], "typing");
    assert_eq!(call.params["message_thread_id"], 42);

    let posted = h
        .channel
        .send(&conversation, &Outbound::text("temporary"))
        .await
        .unwrap();
    h.channel
        .delete(&conversation, &posted)
        .await
        .expect("deleted");
    assert!(h.fake.messages(GROUP).pop().unwrap().deleted);
}

#[tokio::test]
async fn drafts_stream_in_private_chats_and_fall_back_after_the_first_failure() {
    let h = Harness::idle().await;
    let fake = &h.fake;
    fake.add_chat(1001);
    fake.add_chat(GROUP);
    let mut config = config_for(fake);
    config.draft_transport = DraftTransport::Draft;
    let channel = TelegramChannel::new("telegram", config).unwrap();

    let shown = channel
        .send_draft(&key(1001, None), 7, &Outbound::text("Thinking **hard**"))
        .await;
    assert_eq!(shown, Ok(true));
    let call = &fake.calls_to("sendMessageDraft")[0];
    assert_eq!(call.params["draft_id"], 7);
    assert_eq!(call.params["parse_mode"], "HTML");
    assert_eq!(fake.drafts()[0].text, "Thinking hard");

    assert_eq!(
        channel
            .send_draft(&key(GROUP, None), 8, &Outbound::text("x"))
            .await,
        Ok(false)
    );
    fake.fail_next(
        "sendMessageDraft",
        Failure::Error(404, "Not Found: method not found".into()),
    );
    assert_eq!(
        channel
            .send_draft(&key(1001, None), 7, &Outbound::text("more"))
            .await,
        Ok(false)
    );
    assert_eq!(
        channel
            .send_draft(&key(1001, None), 7, &Outbound::text("more"))
            .await,
        Ok(false)
    );
    assert_eq!(
        fake.calls_to("sendMessageDraft").len(),
        2,
        "no retry after the first failure"
    );

    // The edit transport (the default) never calls the draft method.
    assert_eq!(
        h.channel
            .send_draft(&key(1001, None), 9, &Outbound::text("x"))
            .await,
        Ok(false)
    );
}
