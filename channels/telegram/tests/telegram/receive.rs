//! Polling: which messages become events, with which key and text, and when Telegram is told
//! an update arrived.

use std::time::Duration;

use switchboard_standins::eventually;
use switchboard_standins::telegram::{FAKE_BOT_USERNAME, FakeUser, UserMessage};

use crate::helpers::{Harness, RecordingSink, inbound, key};

fn alice() -> FakeUser {
    FakeUser::human(1001, "alice")
}

const GROUP: i64 = -100_555;

#[tokio::test]
async fn a_private_message_is_delivered_with_its_chat_key_and_then_confirmed() {
    let h = Harness::polling(RecordingSink::new(), |_| {}).await;
    let sent = h.fake.inject(&UserMessage::private(alice(), "hello bot"));

    let events = h.sink.wait_for(1).await;
    let msg = inbound(&events[0]);
    assert_eq!(msg.key, key(1001, None));
    assert_eq!(msg.event_id, format!("u{}", sent.update_id));
    assert_eq!(msg.text, "hello bot");
    assert_eq!(msg.user.id, "1001");
    assert_eq!(msg.user.name.as_deref(), Some("@alice"));

    h.wait_until_confirmed().await;
    assert_eq!(h.fake.confirmed_offset(), sent.update_id + 1);
    assert_eq!(h.fake.calls_to("getMe").len(), 1);
    assert!(h.fake.calls_to("deleteWebhook").is_empty());
}

#[tokio::test]
async fn an_update_is_confirmed_only_after_the_sink_stored_it() {
    let h = Harness::polling(RecordingSink::failing(2), |_| {}).await;
    let sent = h.fake.inject(&UserMessage::private(alice(), "keep me"));
    let event_id = format!("u{}", sent.update_id);

    let events = h.sink.wait_for(1).await;
    assert_eq!(inbound(&events[0]).text, "keep me");
    // Two failed attempts, then the same update fetched again and stored.
    assert_eq!(h.sink.attempts(), vec![event_id.clone(); 3]);

    h.wait_until_confirmed().await;
    let stored_at = h.sink.stored_at(&event_id).expect("stored");
    // A long poll is recorded when it returns; the confirming one returns within a second.
    let what = "a poll with the offset advanced";
    let confirming = eventually(Duration::from_secs(5), what, async || {
        let confirming = h
            .fake
            .calls_to("getUpdates")
            .into_iter()
            .filter(|c| c.params["offset"].as_i64() > Some(sent.update_id))
            .collect::<Vec<_>>();
        if confirming.is_empty() {
            Err(())
        } else {
            Ok(confirming)
        }
    })
    .await;
    assert!(
        confirming.iter().all(|c| c.at >= stored_at),
        "an offset past the update was sent before it was stored"
    );
}

#[tokio::test]
async fn a_group_delivers_mentions_and_replies_and_ignores_other_chatter() {
    let h = Harness::polling(RecordingSink::new(), |_| {}).await;
    h.fake
        .inject(&UserMessage::group(GROUP, alice(), "hello everyone"));
    h.fake
        .inject(&UserMessage::group(GROUP, alice(), "/help@some_other_bot"));
    let mention = format!("@{FAKE_BOT_USERNAME}, what is the weather?");
    h.fake.inject(&UserMessage::group(GROUP, alice(), &mention));
    h.fake
        .inject(&UserMessage::group(GROUP, alice(), "and tomorrow?").replying_to_bot(7));
    h.fake.inject(
        &UserMessage::group(GROUP, alice(), "not to you")
            .replying_to(8, FakeUser::human(1002, "bob")),
    );
    let command = format!("/stop@{FAKE_BOT_USERNAME}");
    h.fake
        .inject(&UserMessage::basic_group(-4001, alice(), &command));

    h.wait_until_confirmed().await;
    let texts: Vec<String> = h
        .sink
        .stored()
        .iter()
        .map(|e| inbound(e).text.clone())
        .collect();
    assert_eq!(
        texts,
        vec!["what is the weather?", "and tomorrow?", "/stop"]
    );
    let keys: Vec<_> = h
        .sink
        .stored()
        .iter()
        .map(|e| inbound(e).key.clone())
        .collect();
    assert_eq!(
        keys,
        vec![key(GROUP, None), key(GROUP, None), key(-4001, None)]
    );
}

#[tokio::test]
async fn without_require_mention_every_group_message_counts() {
    let h = Harness::polling(RecordingSink::new(), |c| {
        c.require_mention_in_groups = false
    })
    .await;
    h.fake
        .inject(&UserMessage::group(GROUP, alice(), "hello everyone"));
    let events = h.sink.wait_for(1).await;
    assert_eq!(inbound(&events[0]).text, "hello everyone");
}

#[tokio::test]
async fn a_topic_message_gets_the_topic_as_its_thread() {
    let h = Harness::polling(RecordingSink::new(), |_| {}).await;
    let text = format!("@{FAKE_BOT_USERNAME} summarise this topic");
    h.fake
        .inject(&UserMessage::group(GROUP, alice(), &text).in_topic(42));
    // In a topic the bot created, the topic's first message is not a reply to the bot.
    h.fake.inject(
        &UserMessage::group(GROUP, alice(), "chatter").in_topic_created_by(43, FakeUser::the_bot()),
    );
    h.fake.inject(
        &UserMessage::group(GROUP, alice(), "thanks")
            .in_topic(42)
            .replying_to_bot(50),
    );

    h.wait_until_confirmed().await;
    let events = h.sink.stored();
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(inbound(&events[0]).key, key(GROUP, Some(42)));
    assert_eq!(inbound(&events[0]).text, "summarise this topic");
    assert_eq!(inbound(&events[1]).key, key(GROUP, Some(42)));
}

#[tokio::test]
async fn messages_from_the_bot_itself_and_other_bots_are_ignored() {
    let h = Harness::polling(RecordingSink::new(), |c| {
        c.require_mention_in_groups = false
    })
    .await;
    h.fake.inject(&UserMessage::group(
        GROUP,
        FakeUser::the_bot(),
        "my own answer",
    ));
    h.fake.inject(&UserMessage::group(
        GROUP,
        FakeUser::bot(777, "other_bot"),
        "beep",
    ));
    h.fake
        .inject(&UserMessage::group(GROUP, alice(), "a person"));

    h.wait_until_confirmed().await;
    let texts: Vec<String> = h
        .sink
        .stored()
        .iter()
        .map(|e| inbound(e).text.clone())
        .collect();
    assert_eq!(texts, vec!["a person"]);
}

/// Who gets in is the core's decision (it sees the grants in the database), so the channel
/// delivers every sender with the numeric id and private-chat place the decision needs.
#[tokio::test]
async fn every_sender_is_delivered_with_the_numeric_id_and_place_the_core_decides_on() {
    let h = Harness::polling(RecordingSink::new(), |c| {
        c.allowed_users = vec!["@Alice".into(), "2002".into()];
    })
    .await;
    h.fake.inject(&UserMessage::private(
        FakeUser::human(3003, "mallory"),
        "let me in",
    ));
    h.fake.inject(&UserMessage::private(alice(), "by username"));
    h.fake.inject(&UserMessage::private(
        FakeUser::anonymous(2002, "Bob"),
        "by id",
    ));

    h.wait_until_confirmed().await;
    let senders: Vec<String> = h
        .sink
        .stored()
        .iter()
        .map(|e| inbound(e).user.id.clone())
        .collect();
    assert_eq!(senders, vec!["3003", "1001", "2002"]);
    let stored = h.sink.stored();
    assert!(stored.iter().all(|e| e.place().is_direct()));
}

#[tokio::test]
async fn an_empty_allow_list_no_longer_drops_anything_in_the_channel() {
    let h = Harness::polling(RecordingSink::new(), |c| {
        c.allowed_users.clear();
        c.dm_policy = None;
    })
    .await;
    h.fake.inject(&UserMessage::private(alice(), "hello"));
    h.fake.inject(&UserMessage::private(alice(), "hello again"));
    h.wait_until_confirmed().await;
    assert_eq!(h.sink.stored().len(), 2);
}

#[tokio::test]
async fn captions_and_commands_pass_through_as_text() {
    let h = Harness::polling(RecordingSink::new(), |_| {}).await;
    h.fake
        .inject(&UserMessage::private(alice(), "what is in this picture?").with_photo());
    h.fake.inject(&UserMessage::private(alice(), "/new"));
    let command = format!("/stop@{FAKE_BOT_USERNAME}");
    h.fake.inject(&UserMessage::private(alice(), &command));

    let events = h.sink.wait_for(3).await;
    let texts: Vec<&str> = events.iter().map(|e| inbound(e).text.as_str()).collect();
    assert_eq!(texts, vec!["what is in this picture?", "/new", "/stop"]);
}

#[tokio::test]
async fn a_document_voice_note_or_photo_is_delivered_with_a_file_reference_and_no_download() {
    let h = Harness::polling(RecordingSink::new(), |_| {}).await;
    let doc = h.fake.add_file("report.pdf", b"%PDF-1.4");
    h.fake
        .inject(&UserMessage::private(alice(), "summarise").with_document(
            &doc,
            "report.pdf",
            "application/pdf",
            8,
        ));
    h.fake
        .inject(&UserMessage::private(alice(), "").with_voice("voice-1", 2048));
    h.fake
        .inject(&UserMessage::private(alice(), "").with_photo_file("photo-1", 4096));
    let events = h.sink.wait_for(3).await;
    let files: Vec<_> = events
        .iter()
        .map(|e| inbound(e).attachments[0].clone())
        .collect();
    assert_eq!(inbound(&events[0]).text, "summarise");
    assert_eq!(
        (files[0].id.as_str(), files[0].name.as_str()),
        (doc.as_str(), "report.pdf")
    );
    assert_eq!(files[0].mime.as_deref(), Some("application/pdf"));
    assert_eq!(files[1].kind, switchboard_channel::AttachmentKind::Voice);
    assert_eq!(files[2].id, "photo-1", "the largest photo size is taken");
    assert_eq!(
        h.fake.downloads(),
        0,
        "the channel stores references; the core downloads later"
    );
}
