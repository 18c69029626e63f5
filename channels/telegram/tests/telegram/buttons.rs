//! Buttons: posted as an inline keyboard, pressed as a callback query that becomes a
//! `Button` event, and answered so the client's spinner stops.

use switchboard_channel::{Button, Channel, ChannelEvent, MessageRef, Outbound};
use switchboard_standins::telegram::{Click, FakeUser, UserMessage};

use crate::helpers::{Harness, RecordingSink, key};

fn approval() -> Outbound {
    Outbound {
        text: "Run `rm -rf build/`?".into(),
        buttons: vec![
            Button {
                label: "Approve".into(),
                payload: "approval:7f3a:yes".into(),
            },
            Button {
                label: "Deny".into(),
                payload: "approval:7f3a:no".into(),
            },
        ],
    }
}

#[tokio::test]
async fn a_press_becomes_a_button_event_and_answering_it_stops_the_spinner() {
    let h = Harness::polling(RecordingSink::new(), |_| {}).await;
    let alice = FakeUser::human(1001, "alice");
    h.fake
        .inject(&UserMessage::group(-100_777, alice.clone(), "hi").in_topic(42));
    let conversation = key(-100_777, Some(42));
    let posted = h
        .channel
        .send(&conversation, &approval())
        .await
        .expect("sent");

    let message = h.fake.messages(-100_777).pop().expect("posted");
    let markup = message.reply_markup.clone().expect("keyboard");
    assert_eq!(
        markup["inline_keyboard"][0][0]["callback_data"],
        "approval:7f3a:yes"
    );
    assert_eq!(markup["inline_keyboard"][0][1]["text"], "Deny");

    let pressed = h
        .fake
        .click(&Click::on(&message, alice, "approval:7f3a:yes"));
    let query_id = pressed.query_id.clone().expect("a callback query");
    let events = h.sink.wait_for(1).await;
    let ChannelEvent::Button(press) = &events[0] else {
        panic!("expected a button press, got {events:?}");
    };
    assert_eq!(press.key, conversation);
    assert_eq!(press.payload, "approval:7f3a:yes");
    assert_eq!(press.event_id, format!("cb{query_id}"));
    assert_eq!(press.message, Some(MessageRef::new(posted.id.clone())));
    assert_eq!(press.reply_token.as_deref(), Some(query_id.as_str()));
    assert_eq!(press.user.id, "1001");

    h.channel
        .answer_button(press, "Approved")
        .await
        .expect("answered");
    let answers = h.fake.calls_to("answerCallbackQuery");
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].params["callback_query_id"], query_id);
    assert_eq!(answers[0].params["text"], "Approved");
    assert_eq!(answers[0].outcome, Ok(()));
}

/// The channel delivers every press; the core's sink decides who may press (and the
/// approval step who may approve).
#[tokio::test]
async fn a_press_by_anyone_is_delivered_with_the_presser_for_the_core_to_judge() {
    let h = Harness::polling(RecordingSink::new(), |c| {
        c.allowed_users = vec!["alice".into()];
        c.dm_policy = None;
    })
    .await;
    h.fake.add_chat(1001);
    h.channel
        .send(&key(1001, None), &approval())
        .await
        .expect("sent");
    let message = h.fake.messages(1001).pop().expect("posted");
    h.fake.click(&Click::on(
        &message,
        FakeUser::human(3003, "mallory"),
        "approval:7f3a:yes",
    ));
    h.fake.click(&Click::on(
        &message,
        FakeUser::human(1001, "alice"),
        "approval:7f3a:no",
    ));
    let events = h.sink.wait_for(2).await;
    h.wait_until_confirmed().await;
    assert_eq!(h.sink.stored().len(), 2);
    assert_eq!(events[0].user().id, "3003");
    assert_eq!(events[1].user().id, "1001");
}

#[tokio::test]
async fn a_payload_longer_than_64_bytes_is_refused_before_sending() {
    let h = Harness::idle().await;
    h.fake.add_chat(1001);
    let outbound = Outbound {
        text: "pick".into(),
        buttons: vec![Button {
            label: "Too long".into(),
            payload: "p".repeat(65),
        }],
    };
    let err = h
        .channel
        .send(&key(1001, None), &outbound)
        .await
        .unwrap_err();
    assert!(
        matches!(err, switchboard_channel::ChannelError::Fatal(_)),
        "{err:?}"
    );
    assert!(h.fake.calls_to("sendMessage").is_empty());
}
