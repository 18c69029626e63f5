//! Slack through the whole gateway: signed events stored before 200, answers streamed into a
//! draft through the Web API stand-in, redeliveries dropped, bad requests refused. The
//! conversation model (DMs, threads, channels) is in `slack_threads`.

use std::time::Duration;

use switchboard_standins::Reply;
use switchboard_standins::slack::{FAKE_SIGNING_SECRET, SignedRequest, SlackMessage, dm_event};

use crate::app::{Table, TestApp};
use crate::helpers::{WAIT, wait_inbox_idle};

/// Where Slack delivers events for the channel named `slack`.
const EVENTS: &str = "/slack/slack/events";

async fn spawn() -> TestApp {
    TestApp::builder().slack(Table::open()).start().await
}

async fn post(app: &TestApp, request: SignedRequest, secret: &str) -> u16 {
    request
        .build(&reqwest::Client::new(), &app.url(EVENTS), secret)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn a_signed_dm_gets_a_streamed_answer_at_top_level() {
    let app = spawn().await;
    let answer: String = (1..=12)
        .map(|i| format!("Part {i} of the answer. "))
        .collect();
    app.llm
        .push(Reply::paced(answer.clone(), 20, Duration::from_millis(40)));
    let msg = SlackMessage {
        text: "hello bot",
        ..SlackMessage::default()
    };
    assert_eq!(
        post(
            &app,
            SignedRequest::event(&dm_event(&msg)),
            FAKE_SIGNING_SECRET
        )
        .await,
        200
    );
    wait_inbox_idle(&app.store()).await;
    let messages = app.slack().messages(msg.channel);
    assert_eq!(messages.len(), 1, "{messages:#?}");
    assert_eq!(messages[0].thread_ts, None, "a DM is answered at top level");
    assert_eq!(messages[0].text.trim(), answer.trim());
    assert!(
        !app.slack().calls_to("chat.update").is_empty(),
        "the answer streamed into the draft"
    );
}

#[tokio::test]
async fn an_event_delivered_three_times_is_answered_once() {
    let app = spawn().await;
    let msg = SlackMessage {
        event_id: "Ev0REPEAT",
        text: "once please",
        ..SlackMessage::default()
    };
    let event = dm_event(&msg);
    assert_eq!(
        post(&app, SignedRequest::event(&event), FAKE_SIGNING_SECRET).await,
        200
    );
    for n in 1..=2 {
        assert_eq!(
            post(
                &app,
                SignedRequest::event(&event).retry(n),
                FAKE_SIGNING_SECRET
            )
            .await,
            200
        );
    }
    wait_inbox_idle(&app.store()).await;
    assert_eq!(app.slack().calls_to("chat.postMessage").len(), 1);
    assert_eq!(app.llm.requests().len(), 1);
}

#[tokio::test]
async fn bad_signatures_stale_timestamps_and_missing_headers_get_401_and_store_nothing() {
    let app = spawn().await;
    let event = dm_event(&SlackMessage::default());
    assert_eq!(
        post(&app, SignedRequest::event(&event), "wrong-secret").await,
        401
    );
    let stale = super::helpers_now() - 6 * 60;
    assert_eq!(
        post(
            &app,
            SignedRequest::event(&event).at(stale),
            FAKE_SIGNING_SECRET
        )
        .await,
        401
    );
    let unsigned = reqwest::Client::new()
        .post(app.url(EVENTS))
        .body(event.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(unsigned.status(), 401);
    let counts = app.store().inbox_counts().await.unwrap();
    assert_eq!(counts.pending + counts.processing + counts.done, 0);
}

#[tokio::test]
async fn malformed_json_is_400_and_an_oversized_body_is_413() {
    let app = spawn().await;
    let bad = SignedRequest::raw("{not json", "application/json");
    assert_eq!(post(&app, bad, FAKE_SIGNING_SECRET).await, 400);
    let huge = SignedRequest::raw(vec![b' '; 2 * 1024 * 1024], "application/json");
    assert_eq!(post(&app, huge, FAKE_SIGNING_SECRET).await, 413);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(WAIT > Duration::ZERO);
}
