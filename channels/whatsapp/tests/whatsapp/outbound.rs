//! Messages out: text, buttons, the 24-hour window, rate limits, typing, files.

use std::time::Duration;

use switchboard_channel::{Button, Channel, ChannelError, ConversationKey, Outbound, OutboundFile};
use switchboard_standins::whatsapp::{FAKE_PHONE_NUMBER_ID, Failure, Notification, WebhookMessage};
use switchboard_whatsapp::ReminderTemplate;

use crate::helpers::{TestApp, spawn_app, spawn_with};

const PERSON: &str = "16505551234";

fn key() -> ConversationKey {
    ConversationKey::new("wa0", PERSON)
}

fn approval_buttons() -> Vec<Button> {
    ["Approve once", "Always allow", "Deny"]
        .iter()
        .enumerate()
        .map(|(i, label)| Button {
            label: (*label).into(),
            payload: format!("approval:{i}"),
        })
        .collect()
}

/// A message from the person, `ago` seconds old, so the window is known.
async fn wrote(app: &TestApp, id: &str, ago: u64) {
    let msg = WebhookMessage::text(PERSON, id, "hi").ago(ago);
    assert_eq!(app.post(&Notification::message(&msg)).await, 200);
}

#[tokio::test]
async fn a_text_is_rendered_and_sent_to_the_number() {
    let app = spawn_app().await;
    wrote(&app, "wamid.W1", 5).await;
    app.channel()
        .send(&key(), &Outbound::text("**Done**"))
        .await
        .unwrap();
    let sent = app.graph.sent_to(PERSON);
    assert_eq!(
        (sent[0].kind.as_str(), sent[0].text()),
        ("text", "*Done*".to_owned())
    );
}

#[tokio::test]
async fn an_approval_has_three_reply_buttons_and_a_long_one_comes_as_text_then_buttons() {
    let app = spawn_app().await;
    wrote(&app, "wamid.W2", 5).await;
    let prompt = Outbound {
        text: "Run `ls -la`?".into(),
        buttons: approval_buttons(),
    };
    app.channel().send(&key(), &prompt).await.unwrap();
    let long = Outbound {
        text: "x".repeat(1100),
        buttons: approval_buttons(),
    };
    app.channel().send(&key(), &long).await.unwrap();
    let sent = app.graph.sent_to(PERSON);
    assert_eq!(sent.len(), 3, "{sent:#?}");
    let titles: Vec<String> = sent[0].buttons().into_iter().map(|(_, t)| t).collect();
    assert_eq!(titles, ["Approve once", "Always allow", "Deny"]);
    assert_eq!(
        (sent[1].kind.as_str(), sent[1].text().len()),
        ("text", 1100)
    );
    assert_eq!(
        (sent[2].kind.as_str(), sent[2].buttons().len()),
        ("interactive", 3)
    );
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_typed() {
    let app = spawn_app().await;
    wrote(&app, "wamid.W3", 5).await;
    for (failure, expect_rate) in [
        (Failure::rate_limited(), true),
        (Failure::pair_limited(), true),
        (Failure::ServerError, false),
    ] {
        app.graph.fail_next(1, failure);
        let err = app
            .channel()
            .send(&key(), &Outbound::text("hi"))
            .await
            .unwrap_err();
        match err {
            ChannelError::RateLimited { retry_after } => {
                assert!(expect_rate && retry_after > Duration::ZERO)
            }
            ChannelError::Transient(_) => assert!(!expect_rate),
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn outside_the_window_the_template_goes_out_with_the_text_flattened() {
    let app = spawn_with(&[FAKE_PHONE_NUMBER_ID], |c| {
        c.reminder_template = Some(ReminderTemplate {
            name: "reminder".into(),
            language: "en".into(),
        });
    })
    .await;
    wrote(&app, "wamid.OLD", 25 * 3600).await;
    app.channel()
        .send(&key(), &Outbound::text("Reminder:\n\ncall Bob"))
        .await
        .unwrap();
    let sent = app.graph.sent_to(PERSON);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].kind, "template");
    assert_eq!(sent[0].body["template"]["name"], "reminder");
    assert_eq!(sent[0].text(), "Reminder: · call Bob");
    assert!(
        app.graph.refused().is_empty(),
        "chosen before sending, not after a 131047"
    );
}

#[tokio::test]
async fn outside_the_window_without_a_template_the_message_is_undeliverable_and_shown() {
    let app = spawn_app().await;
    wrote(&app, "wamid.OLD", 25 * 3600).await;
    let err = app
        .channel()
        .send(&key(), &Outbound::text("late answer"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, ChannelError::Fatal(ref why) if why.contains("24-hour")),
        "{err:?}"
    );
    assert!(app.graph.sent().is_empty());
    let health = app.channel().health();
    assert!(health.detail.contains("undeliverable"), "{}", health.detail);
}

#[tokio::test]
async fn a_131047_after_a_restart_is_handled_like_a_closed_window() {
    let app = spawn_with(&[FAKE_PHONE_NUMBER_ID], |c| {
        c.reminder_template = Some(ReminderTemplate {
            name: "reminder".into(),
            language: "en".into(),
        });
    })
    .await;
    app.graph.close_window(PERSON);
    app.channel()
        .send(&key(), &Outbound::text("hello again"))
        .await
        .unwrap();
    let sent = app.graph.sent_to(PERSON);
    assert_eq!((sent.len(), sent[0].kind.as_str()), (1, "template"));
    assert_eq!(app.graph.refused()[0].0, 131_047);
}

#[tokio::test]
async fn typing_marks_the_last_message_read_and_is_renewed_only_after_twenty_seconds() {
    let app = spawn_app().await;
    wrote(&app, "wamid.TY", 1).await;
    app.channel().typing(&key()).await.unwrap();
    app.channel().typing(&key()).await.unwrap();
    assert_eq!(app.graph.typing(), ["wamid.TY"]);
}

#[tokio::test]
async fn a_file_is_uploaded_then_sent_as_a_document() {
    let app = spawn_app().await;
    wrote(&app, "wamid.F", 1).await;
    let file = OutboundFile {
        name: "report.pdf".into(),
        bytes: b"%PDF-1.4 report".to_vec(),
        mime: Some("application/pdf".into()),
        caption: "Here it is".into(),
    };
    app.channel().send_file(&key(), &file).await.unwrap();
    let sent = app.graph.sent_to(PERSON);
    assert_eq!(sent[0].kind, "document");
    assert_eq!(sent[0].body["document"]["filename"], "report.pdf");
    let id = sent[0].body["document"]["id"].as_str().unwrap();
    assert_eq!(app.graph.media(id).unwrap().1, b"%PDF-1.4 report");
}

#[tokio::test]
async fn a_rate_limit_between_the_text_and_its_buttons_is_waited_out_without_repeating_the_text() {
    let app = spawn_app().await;
    wrote(&app, "wamid.W4", 5).await;
    app.graph.pass_next(1);
    app.graph.fail_next(1, Failure::rate_limited());
    let long = Outbound {
        text: "z".repeat(1100),
        buttons: approval_buttons(),
    };
    app.channel().send(&key(), &long).await.unwrap();
    let sent = app.graph.sent_to(PERSON);
    assert_eq!(sent.len(), 2, "the text once, then the buttons: {sent:#?}");
    assert_eq!(
        (sent[0].kind.as_str(), sent[1].kind.as_str()),
        ("text", "interactive")
    );
    assert_eq!(
        app.graph.refused().len(),
        1,
        "the buttons met the limit once"
    );
}

#[tokio::test]
async fn a_message_reported_failed_for_the_window_goes_out_again_as_the_template() {
    let app = spawn_with(&[FAKE_PHONE_NUMBER_ID], |c| {
        c.reminder_template = Some(ReminderTemplate {
            name: "reminder".into(),
            language: "en".into(),
        });
    })
    .await;
    let ours = app
        .channel()
        .send(&key(), &Outbound::text("**Late** answer"))
        .await
        .unwrap();
    let failed = Notification::failed_status(FAKE_PHONE_NUMBER_ID, &ours.id, PERSON, 131_047);
    assert_eq!(app.post(&failed).await, 200);
    let sent = app.graph.wait_for(PERSON, 2, Duration::from_secs(5)).await;
    assert_eq!(
        (sent[1].kind.as_str(), sent[1].text()),
        ("template", "*Late* answer".to_owned())
    );
}

#[tokio::test]
async fn without_a_template_a_message_failed_for_the_window_is_undeliverable() {
    let app = spawn_app().await;
    let ours = app
        .channel()
        .send(&key(), &Outbound::text("late"))
        .await
        .unwrap();
    let failed = Notification::failed_status(FAKE_PHONE_NUMBER_ID, &ours.id, PERSON, 131_047);
    assert_eq!(app.post(&failed).await, 200);
    switchboard_standins::eventually(
        Duration::from_secs(5),
        "undeliverable in health",
        async || {
            let detail = app.channel().health().detail;
            if detail.contains("undeliverable") {
                Ok(())
            } else {
                Err(detail)
            }
        },
    )
    .await;
}
