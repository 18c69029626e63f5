//! Webhooks in: the handshake, signatures, storing before the 200, redeliveries, dispatch
//! by business number, statuses.

use serde_json::json;
use switchboard_channel::{AttachmentKind, Channel, ChannelEvent};
use switchboard_standins::whatsapp::{
    FAKE_PHONE_NUMBER_ID, FAKE_VERIFY_TOKEN, Notification, WebhookMessage,
};

use crate::helpers::{PATH, spawn_app, spawn_with};

#[tokio::test]
async fn the_handshake_echoes_the_challenge_only_for_the_verify_token() {
    let app = spawn_app().await;
    let url = |token: &str| {
        format!(
            "{}{PATH}?hub.mode=subscribe&hub.verify_token={token}&hub.challenge=1158201444",
            app.base
        )
    };
    let ok = reqwest::get(url(FAKE_VERIFY_TOKEN)).await.unwrap();
    assert_eq!(ok.status(), 200);
    assert_eq!(ok.text().await.unwrap(), "1158201444");
    assert_eq!(reqwest::get(url("wrong")).await.unwrap().status(), 403);
}

#[tokio::test]
async fn a_signed_text_is_stored_before_the_200_and_a_redelivery_is_dropped() {
    let app = spawn_app().await;
    let message = Notification::message(&WebhookMessage::text("16505551234", "wamid.T1", "hello"));
    assert_eq!(app.post(&message).await, 200);
    let stored = app.sink.stored();
    assert_eq!(stored.len(), 1, "stored before the 200");
    let ChannelEvent::Message(m) = &stored[0] else {
        panic!("{stored:?}")
    };
    assert_eq!(
        (m.key.chat.as_str(), m.text.as_str(), m.event_id.as_str()),
        ("16505551234", "hello", "wamid.T1")
    );
    assert_eq!(app.post(&message).await, 200, "Meta redelivers");
    assert_eq!(app.sink.stored().len(), 1);
}

#[tokio::test]
async fn a_bad_signature_is_401_and_malformed_json_400_and_nothing_is_stored() {
    let app = spawn_app().await;
    let message = Notification::message(&WebhookMessage::text("16505551234", "wamid.B1", "hi"));
    assert_eq!(app.post_signed(&message, "wrong-secret").await, 401);
    let unsigned = reqwest::Client::new()
        .post(format!("{}{PATH}", app.base))
        .body(message.body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(unsigned.status(), 401);
    let garbage = Notification {
        body: json!("not an object"),
    };
    assert_eq!(app.post(&garbage).await, 400);
    assert!(app.sink.stored().is_empty());
}

#[tokio::test]
async fn a_store_failure_is_500_so_meta_redelivers() {
    let app = spawn_app().await;
    app.sink.set_failing(true);
    let message = Notification::message(&WebhookMessage::text("16505551234", "wamid.F1", "hi"));
    assert_eq!(app.post(&message).await, 500);
    app.sink.set_failing(false);
    assert_eq!(app.post(&message).await, 200);
    assert_eq!(app.sink.stored().len(), 1);
}

#[tokio::test]
async fn two_numbers_on_one_path_each_get_only_their_own_messages() {
    let app = spawn_with(&["1111111111", "2222222222"], |_| {}).await;
    let to = |number: &str, id: &str| {
        Notification::messages(number, &[WebhookMessage::text("16505551234", id, number)])
    };
    assert_eq!(app.post(&to("2222222222", "wamid.N2")).await, 200);
    assert_eq!(app.post(&to("1111111111", "wamid.N1")).await, 200);
    assert_eq!(
        app.post(&to("3333333333", "wamid.N3")).await,
        200,
        "an unknown number is acknowledged"
    );
    let owners: Vec<(String, String)> = app
        .sink
        .stored()
        .iter()
        .map(|e| match e {
            ChannelEvent::Message(m) => (m.key.channel.clone(), m.text.clone()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        owners,
        [
            ("wa1".into(), "2222222222".into()),
            ("wa0".into(), "1111111111".into())
        ]
    );
}

#[tokio::test]
async fn voice_notes_and_images_arrive_as_attachments_and_their_bytes_download() {
    let app = spawn_app().await;
    app.graph.add_media("MEDIA.V", "audio/ogg", b"OggS voice");
    app.graph
        .add_media("MEDIA.I", "image/jpeg", b"\xff\xd8 jpeg");
    let voice = WebhookMessage::voice("16505551234", "wamid.V1", "MEDIA.V");
    let image = WebhookMessage::image("16505551234", "wamid.I1", "MEDIA.I", "my cat");
    assert_eq!(
        app.post(&Notification::messages(
            FAKE_PHONE_NUMBER_ID,
            &[voice, image]
        ))
        .await,
        200
    );
    let stored = app.sink.stored();
    let attachments: Vec<_> = stored
        .iter()
        .map(|e| match e {
            ChannelEvent::Message(m) => m.attachments[0].clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(attachments[0].kind, AttachmentKind::Voice);
    assert_eq!(attachments[1].kind, AttachmentKind::Photo);
    let channel = app.channel();
    app.graph.expire_next_media_url();
    let bytes = channel
        .download(&attachments[0], 1024)
        .await
        .expect("looked up again after expiry");
    assert_eq!(bytes, b"OggS voice");
    assert_eq!(
        channel.download(&attachments[1], 1024).await.unwrap(),
        b"\xff\xd8 jpeg"
    );
    assert!(matches!(
        channel.download(&attachments[1], 4).await,
        Err(switchboard_channel::FileError::TooLarge { .. })
    ));
}

#[tokio::test]
async fn a_failed_delivery_status_is_counted_in_the_health_and_stores_nothing() {
    let app = spawn_app().await;
    let status =
        Notification::failed_status(FAKE_PHONE_NUMBER_ID, "wamid.OURS", "16505551234", 131_026);
    assert_eq!(app.post(&status).await, 200);
    assert!(app.sink.stored().is_empty());
    let health = app.channel().health();
    assert!(
        health.detail.contains("1 delivery failure"),
        "{}",
        health.detail
    );
}

#[tokio::test]
async fn a_person_allowed_by_number_is_known_by_it_and_one_without_a_number_by_their_user_id() {
    let app = spawn_with(&[FAKE_PHONE_NUMBER_ID], |c| {
        c.allowed_users = vec!["+1 650 555 1234".into()]
    })
    .await;
    // Someone else, who shows a username and no number.
    let mut hidden = WebhookMessage::text("16505559999", "wamid.H1", "hi");
    hidden.from = None;
    hidden.user_id = Some("US.13491208655302741918".into());
    let shown = WebhookMessage::text("16505551234", "wamid.S1", "hi");
    assert_eq!(
        app.post(&Notification::messages(
            FAKE_PHONE_NUMBER_ID,
            &[shown, hidden]
        ))
        .await,
        200
    );
    let users: Vec<String> = app
        .sink
        .stored()
        .iter()
        .map(|e| match e {
            ChannelEvent::Message(m) => m.user.id.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(users, ["16505551234", "US.13491208655302741918"]);
}

#[tokio::test]
async fn a_reply_to_one_of_our_messages_quotes_it() {
    let app = spawn_app().await;
    let first = WebhookMessage::text("16505551234", "wamid.Q0", "hi");
    assert_eq!(app.post(&Notification::message(&first)).await, 200);
    let key = switchboard_channel::ConversationKey::new("wa0", "16505551234");
    let ours = app
        .channel()
        .send(
            &key,
            &switchboard_channel::Outbound::text("Shall I book the 9:00?"),
        )
        .await
        .unwrap();
    let reply = WebhookMessage::of(
        "16505551234",
        "wamid.Q1",
        json!({"type": "text",
        "context": {"from": FAKE_PHONE_NUMBER_ID, "id": ours.id}, "text": {"body": "yes"}}),
    );
    assert_eq!(app.post(&Notification::message(&reply)).await, 200);
    let stored = app.sink.stored();
    let ChannelEvent::Message(m) = &stored[1] else {
        panic!("{stored:?}")
    };
    assert_eq!(m.text, "> Shall I book the 9:00?\n\nyes");
}
