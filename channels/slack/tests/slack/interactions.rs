//! Interactivity webhooks: button presses in, answers out.

use reqwest::StatusCode;
use switchboard_channel::{
    Button, ButtonPress, Channel, ChannelEvent, ConversationKey, MessageRef, Outbound,
};
use switchboard_standins::slack::{ButtonClick, SignedRequest, block_actions, unix_now};

use crate::helpers::spawn_app;

fn press(event: &ChannelEvent) -> &ButtonPress {
    match event {
        ChannelEvent::Button(b) => b,
        other => panic!("expected a button press, got {other:?}"),
    }
}

#[tokio::test]
async fn a_button_click_becomes_a_button_press_keyed_by_the_message_thread() {
    let app = spawn_app().await;
    let click = block_actions(&ButtonClick {
        user: "U1",
        channel: "C1",
        message_ts: "1700000300.000300",
        thread_ts: Some("1700000100.000100"),
        value: "approve:42",
        trigger_id: "1234.5678.abcd",
    });

    let response = app
        .post_interaction(&SignedRequest::interaction(&click))
        .await;

    assert_eq!(response.status(), StatusCode::OK);
    let stored = app.sink.stored();
    assert_eq!(stored.len(), 1);
    let press = press(&stored[0]);
    assert_eq!(
        press.key,
        ConversationKey::new("slack", "C1").in_thread("1700000100.000100")
    );
    assert_eq!(press.payload, "approve:42");
    assert_eq!(press.event_id, "1234.5678.abcd");
    assert_eq!(press.message, Some(MessageRef::new("1700000300.000300")));
    assert_eq!(press.user.id, "U1");
    assert!(
        press
            .reply_token
            .as_deref()
            .unwrap()
            .starts_with("https://")
    );
}

#[tokio::test]
async fn unsigned_or_malformed_interactions_are_refused() {
    let app = spawn_app().await;
    let click = block_actions(&ButtonClick::default());
    let stale = SignedRequest::interaction(&click).at(unix_now() - 360);
    assert_eq!(
        app.post_interaction(&stale).await.status(),
        StatusCode::UNAUTHORIZED
    );
    let forged = app
        .post("interactions", &SignedRequest::interaction(&click), "nope")
        .await;
    assert_eq!(forged.status(), StatusCode::UNAUTHORIZED);

    let no_payload = SignedRequest::raw("other=1", "application/x-www-form-urlencoded");
    let bad_json = SignedRequest::raw("payload=%7Bnope", "application/x-www-form-urlencoded");
    for request in [no_payload, bad_json] {
        assert_eq!(
            app.post_interaction(&request).await.status(),
            StatusCode::BAD_REQUEST
        );
    }
    assert!(app.sink.outcomes().is_empty());
}

#[tokio::test]
async fn answering_a_press_replaces_the_buttons_with_the_outcome_and_keeps_the_question() {
    let app = spawn_app().await;
    let key = ConversationKey::new("slack", "C1").in_thread("1700000100.000100");
    let question = Outbound {
        text: "Run `rm -rf build`?".into(),
        buttons: vec![
            Button {
                label: "Approve".into(),
                payload: "approve:7".into(),
            },
            Button {
                label: "Deny".into(),
                payload: "deny:7".into(),
            },
        ],
    };
    let sent = app.channel.send(&key, &question).await.unwrap();
    let posted = &app.slack.messages("C1")[0];
    assert_eq!(posted.blocks.as_ref().unwrap()[1]["type"], "actions");

    // Slack's interaction payload carries the message as Slack shows it.
    let mut click = block_actions(&ButtonClick {
        channel: "C1",
        message_ts: &sent.id,
        thread_ts: Some("1700000100.000100"),
        value: "approve:7",
        ..ButtonClick::default()
    });
    click["message"]["blocks"] = posted.blocks.clone().unwrap();
    app.post_interaction(&SignedRequest::interaction(&click))
        .await;
    let stored = app.sink.stored();

    app.channel
        .answer_button(press(&stored[0]), "**Approved** by ada")
        .await
        .unwrap();

    let answered = &app.slack.messages("C1")[0];
    let blocks = answered.blocks.as_ref().unwrap().as_array().unwrap();
    let kinds: Vec<&str> = blocks.iter().map(|b| b["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["section", "context"]);
    assert_eq!(blocks[0]["text"]["text"], "Run `rm -rf build`?");
    assert_eq!(blocks[1]["elements"][0]["text"], "*Approved* by ada");
    assert_eq!(answered.edits, 1);
}
