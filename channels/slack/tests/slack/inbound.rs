//! Events API webhooks: signature, normalisation, dedup, acknowledgement.

use reqwest::StatusCode;
use serde_json::json;
use switchboard_channel::{ChannelEvent, ConversationKey, Delivery, Inbound, Place};
use switchboard_standins::slack::{
    FAKE_BOT_USER_ID, FAKE_SIGNING_SECRET, SignedRequest, SlackMessage, channel_message_event,
    dm_event, mention_deliveries, mention_event, unix_now, url_verification,
};

use crate::helpers::{spawn_app, spawn_app_with};

fn message(event: &ChannelEvent) -> &Inbound {
    match event {
        ChannelEvent::Message(m) => m,
        other => panic!("expected a message, got {other:?}"),
    }
}

#[tokio::test]
async fn a_signed_dm_is_stored_as_an_inbound_message_before_the_200() {
    let app = spawn_app().await;
    let dm = dm_event(&SlackMessage {
        event_id: "Ev1",
        user: "U1",
        channel: "D1",
        text: "what is 1 &lt; 2?",
        ts: "1700000100.000100",
        ..SlackMessage::default()
    });

    let response = app.post_event(&SignedRequest::event(&dm)).await;

    assert_eq!(response.status(), StatusCode::OK);
    let stored = app.sink.stored(); // already there when the 200 arrived
    assert_eq!(stored.len(), 1);
    let m = message(&stored[0]);
    assert_eq!(m.key, ConversationKey::new("slack", "D1"), "the DM itself");
    assert_eq!((m.event_id.as_str(), m.user.id.as_str()), ("Ev1", "U1"));
    assert_eq!(m.text, "what is 1 < 2?");
}

#[tokio::test]
async fn a_channel_mention_is_threaded_under_its_message_and_a_reply_in_that_thread_keeps_the_key()
{
    let app = spawn_app().await;
    let text = format!("<@{FAKE_BOT_USER_ID}> deploy please");
    let first = mention_event(&SlackMessage {
        event_id: "Ev1",
        channel: "C1",
        text: &text,
        ts: "1700000100.000100",
        ..SlackMessage::default()
    });
    let follow_up = mention_event(&SlackMessage {
        event_id: "Ev2",
        channel: "C1",
        text: &format!("<@{FAKE_BOT_USER_ID}> and then?"),
        ts: "1700000200.000200",
        thread_ts: Some("1700000100.000100"),
        ..SlackMessage::default()
    });

    for event in [&first, &follow_up] {
        let response = app.post_event(&SignedRequest::event(event)).await;
        assert_eq!(response.status(), StatusCode::OK);
    }

    let stored = app.sink.stored();
    let expected = ConversationKey::new("slack", "C1").in_thread("1700000100.000100");
    assert_eq!(message(&stored[0]).key, expected);
    assert_eq!(message(&stored[1]).key, expected);
    assert_eq!(message(&stored[0]).text, "deploy please");
    assert_eq!(message(&stored[1]).text, "and then?");
}

#[tokio::test]
async fn a_mention_without_reply_in_thread_stays_in_the_channel() {
    let app = spawn_app_with(|c| c.reply_in_thread = false).await;
    let event = mention_event(&SlackMessage {
        channel: "C1",
        ..SlackMessage::default()
    });
    app.post_event(&SignedRequest::event(&event)).await;
    assert_eq!(
        message(&app.sink.stored()[0]).key,
        ConversationKey::new("slack", "C1")
    );
}

#[tokio::test]
async fn a_redelivered_event_is_stored_once_and_acknowledged_every_time() {
    let app = spawn_app().await;
    let dm = dm_event(&SlackMessage::default());

    for request in [
        SignedRequest::event(&dm),
        SignedRequest::event(&dm).retry(1),
        SignedRequest::event(&dm).retry(2),
    ] {
        assert_eq!(app.post_event(&request).await.status(), StatusCode::OK);
    }

    assert_eq!(
        app.sink.outcomes(),
        [Delivery::Stored, Delivery::Duplicate, Delivery::Duplicate]
    );
    assert_eq!(app.sink.stored().len(), 1);
}

#[tokio::test]
async fn unsigned_stale_or_tampered_requests_get_401_and_nothing_is_stored() {
    let app = spawn_app().await;
    let body = dm_event(&SlackMessage::default());
    let signed = SignedRequest::event(&body);
    let url = format!("{}/slack/slack/events", app.base);

    let wrong_secret = app.post("events", &signed, "another-secret").await;
    let six_minutes_old = app
        .post_event(&SignedRequest::event(&body).at(unix_now() - 360))
        .await;
    let no_headers = app
        .client
        .post(&url)
        .body(signed.body.clone())
        .send()
        .await
        .unwrap();
    let tampered = {
        let mut request = signed.build(&app.client, &url, FAKE_SIGNING_SECRET);
        request = request.body(b"{\"type\":\"event_callback\",\"event_id\":\"Ev9\"}".to_vec());
        request.send().await.unwrap()
    };

    for response in [wrong_secret, six_minutes_old, no_headers, tampered] {
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    }
    assert!(app.sink.outcomes().is_empty());
}

#[tokio::test]
async fn url_verification_echoes_the_challenge() {
    let app = spawn_app().await;
    let response = app
        .post_event(&SignedRequest::event(&url_verification("3eZbrw1aB")))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["challenge"], "3eZbrw1aB");
}

#[tokio::test]
async fn malformed_json_gets_400_and_unknown_event_types_get_200() {
    let app = spawn_app().await;
    let not_json = SignedRequest::raw("{not json", "application/json");
    let no_event_id = SignedRequest::event(&json!({"type": "event_callback", "event": {}}));
    let bad_text = SignedRequest::event(&json!({"type": "event_callback", "event_id": "Ev1",
        "event": {"type": "message", "channel_type": "im", "text": ["not", "text"]}}));
    for request in [not_json, no_event_id, bad_text] {
        assert_eq!(
            app.post_event(&request).await.status(),
            StatusCode::BAD_REQUEST
        );
    }

    let reaction = json!({"type": "event_callback", "event_id": "Ev2",
        "event": {"type": "reaction_added", "user": "U1", "reaction": "thumbsup"}});
    let rate_notice = json!({"type": "app_rate_limited", "minute_rate_limited": 1});
    for body in [reaction, rate_notice] {
        let response = app.post_event(&SignedRequest::event(&body)).await;
        assert_eq!(response.status(), StatusCode::OK);
    }
    assert!(app.sink.outcomes().is_empty());
}

#[tokio::test]
async fn a_sink_failure_answers_500_so_slack_retries_and_the_retry_is_stored() {
    let app = spawn_app().await;
    let dm = dm_event(&SlackMessage::default());
    app.sink.set_failing(true);
    let first = app.post_event(&SignedRequest::event(&dm)).await;
    assert_eq!(first.status(), StatusCode::INTERNAL_SERVER_ERROR);

    app.sink.set_failing(false);
    let retry = app.post_event(&SignedRequest::event(&dm).retry(1)).await;
    assert_eq!(retry.status(), StatusCode::OK);
    assert_eq!(app.sink.outcomes(), [Delivery::Stored]);
}

/// The channel no longer filters: who gets in is decided in the core's sink, which sees
/// grants the crate cannot (tests/e2e/slack.rs checks the refusals end to end).
#[tokio::test]
async fn users_and_channels_off_the_allowlists_are_delivered_with_their_place_for_the_core() {
    let app = spawn_app_with(|c| {
        c.allowed_users = vec!["U1".into()];
        c.allowed_channels = vec!["C1".into()];
    })
    .await;
    let stranger = dm_event(&SlackMessage {
        event_id: "Ev1",
        user: "U2",
        ..SlackMessage::default()
    });
    let other_channel = mention_event(&SlackMessage {
        event_id: "Ev2",
        user: "U1",
        channel: "C2",
        ..SlackMessage::default()
    });
    let allowed = mention_event(&SlackMessage {
        event_id: "Ev3",
        user: "U1",
        channel: "C1",
        ..SlackMessage::default()
    });
    for event in [&stranger, &other_channel, &allowed] {
        let response = app.post_event(&SignedRequest::event(event)).await;
        assert_eq!(response.status(), StatusCode::OK);
    }
    let ids: Vec<String> = app
        .sink
        .stored()
        .iter()
        .map(|e| e.event_id().to_owned())
        .collect();
    let ts = SlackMessage::default().ts;
    assert_eq!(
        ids,
        ["Ev1".to_owned(), format!("C2:{ts}"), format!("C1:{ts}")]
    );
    let places: Vec<Place> = app
        .sink
        .stored()
        .iter()
        .map(|e| e.place().clone())
        .collect();
    assert_eq!(
        places,
        [Place::Direct, Place::group("C2"), Place::group("C1")]
    );
}

#[tokio::test]
async fn the_bots_own_messages_learned_from_auth_test_are_not_delivered() {
    let app = spawn_app().await;
    assert_eq!(app.channel.bot_user_id(), Some(FAKE_BOT_USER_ID));
    let own = dm_event(&SlackMessage {
        user: FAKE_BOT_USER_ID,
        ..SlackMessage::default()
    });
    let response = app.post_event(&SignedRequest::event(&own)).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(app.sink.outcomes().is_empty());
}

fn in_thread<'a>(event_id: &'a str, text: &'a str, ts: &'a str) -> SlackMessage<'a> {
    SlackMessage {
        event_id,
        channel: "C1",
        text,
        ts,
        thread_ts: Some("1700000100.000100"),
        ..SlackMessage::default()
    }
}

#[tokio::test]
async fn a_reply_without_a_mention_is_stored_only_in_a_thread_the_bot_is_part_of() {
    let app = spawn_app().await;
    let stray = channel_message_event(&in_thread("Ev1", "not for the bot", "1700000150.000100"));
    let response = app.post_event(&SignedRequest::event(&stray)).await;
    assert_eq!(response.status(), StatusCode::OK, "acknowledged");
    assert!(app.sink.outcomes().is_empty(), "nothing stored");

    let text = format!("<@{FAKE_BOT_USER_ID}> join in");
    for event in mention_deliveries(&in_thread("Ev2", &text, "1700000200.000100")) {
        let response = app.post_event(&SignedRequest::event(&event)).await;
        assert_eq!(response.status(), StatusCode::OK);
    }
    let reply = channel_message_event(&in_thread("Ev3", "thanks", "1700000300.000100"));
    assert_eq!(
        app.post_event(&SignedRequest::event(&reply)).await.status(),
        StatusCode::OK
    );

    assert_eq!(
        app.sink.outcomes(),
        [Delivery::Stored, Delivery::Duplicate, Delivery::Stored],
        "the mention's two deliveries are one event"
    );
    let stored = app.sink.stored();
    let thread = ConversationKey::new("slack", "C1").in_thread("1700000100.000100");
    assert!(stored.iter().all(|e| e.key() == &thread), "{stored:?}");
    assert_eq!(message(&stored[1]).text, "thanks");
}

#[tokio::test]
async fn a_failing_thread_lookup_answers_500_so_slack_retries() {
    let app = spawn_app().await;
    app.sink.set_failing(true);
    let reply = channel_message_event(&in_thread("Ev1", "thanks", "1700000300.000100"));
    let response = app.post_event(&SignedRequest::event(&reply)).await;
    assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
}
