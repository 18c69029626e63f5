//! Button presses: delivered as Button events, and always answered within Discord's 3 seconds
//! — by the core's answer when it is quick, by the channel's own deferral when it is not.

use serde_json::json;
use switchboard_channel::{Button, Channel, ConversationKey, MessageRef, Outbound};
use switchboard_discord::DiscordChannel;
use switchboard_standins::discord::{ButtonClick, FAKE_APPLICATION_ID, INTERACTION_DEADLINE};

use crate::helpers::{
    PROMPTLY, TestApp, alice, as_press, bob, config_for, settle, spawn_app, spawn_app_with,
};

const CHAT: &str = "6000000000000000001";

/// Post an approval request with two buttons through the channel; its message.
async fn ask(app: &TestApp) -> MessageRef {
    let ask = Outbound {
        text: "Run `rm -rf build/`?".into(),
        buttons: vec![
            Button {
                label: "Approve".into(),
                payload: "approve:42".into(),
            },
            Button {
                label: "Deny".into(),
                payload: "deny:42".into(),
            },
        ],
    };
    app.channel
        .send(&ConversationKey::new("discord", CHAT), &ask)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_press_reaches_the_sink_and_a_prompt_answer_updates_the_message_in_place() {
    let app = spawn_app().await;
    let message = ask(&app).await;
    let id = app
        .discord
        .press_button(&ButtonClick::new(CHAT, &alice(), "approve:42", &message.id));

    let events = app.sink.wait_for(1).await;
    let press = as_press(&events[0]);
    assert_eq!(press.event_id, format!("i{id}"));
    assert_eq!(press.payload, "approve:42");
    assert_eq!(press.key, ConversationKey::new("discord", CHAT));
    assert_eq!(press.message.as_ref(), Some(&message));
    assert_eq!(press.user.id, alice().id);
    app.channel
        .answer_button(press, "Approved by alice")
        .await
        .unwrap();

    let callback = &app.discord.callbacks()[0];
    assert_eq!(callback.kind, 7, "UPDATE_MESSAGE: {callback:?}");
    assert!(callback.after_dispatch < INTERACTION_DEADLINE);
    assert_eq!(callback.data["allowed_mentions"]["parse"], json!([]));
    let shown = &app.discord.messages(CHAT)[0];
    assert_eq!(shown.content, "Run `rm -rf build/`?\n\nApproved by alice");
    assert_eq!(shown.components, json!([]), "the buttons are gone");
    settle().await;
    assert_eq!(
        app.discord.callbacks().len(),
        1,
        "no deferral after the answer"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_press_the_core_answers_late_is_deferred_within_the_deadline_then_edited() {
    let app = spawn_app().await;
    let message = ask(&app).await;
    app.discord
        .press_button(&ButtonClick::new(CHAT, &alice(), "deny:42", &message.id));
    let events = app.sink.wait_for(1).await;

    let deferred = app.discord.wait_for_callbacks(1, PROMPTLY).await;
    assert_eq!(
        deferred[0].kind, 6,
        "DEFERRED_UPDATE_MESSAGE: {:?}",
        deferred[0]
    );
    assert_eq!(deferred[0].status, 204);
    assert!(
        deferred[0].after_dispatch < INTERACTION_DEADLINE,
        "{:?}",
        deferred[0].after_dispatch
    );
    tokio::time::sleep(INTERACTION_DEADLINE).await;
    app.channel
        .answer_button(as_press(&events[0]), "Denied")
        .await
        .unwrap();

    let edits = app.discord.calls_to("PATCH", "/webhooks/");
    assert_eq!(edits.len(), 1, "answered through the interaction webhook");
    assert!(edits[0].path.ends_with("/messages/@original"));
    let shown = &app.discord.messages(CHAT)[0];
    assert_eq!(shown.content, "Run `rm -rf build/`?\n\nDenied");
    assert_eq!(shown.components, json!([]));
    assert_eq!(
        app.discord.callbacks().len(),
        1,
        "one initial response only"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_not_yours_answer_is_ephemeral_and_keeps_the_buttons_for_the_right_person() {
    let app = spawn_app().await;
    let message = ask(&app).await;
    app.discord
        .press_button(&ButtonClick::new(CHAT, &bob(), "approve:42", &message.id));
    let events = app.sink.wait_for(1).await;
    app.channel
        .answer_button(
            as_press(&events[0]),
            "Not yours: only alice can approve this.",
        )
        .await
        .unwrap();

    let callback = &app.discord.callbacks()[0];
    assert_eq!(
        (callback.kind, callback.data["flags"].as_u64()),
        (4, Some(64)),
        "{callback:?}"
    );
    assert_eq!(
        callback.data["content"],
        "Not yours: only alice can approve this."
    );
    let shown = &app.discord.messages(CHAT)[0];
    assert_eq!(shown.content, "Run `rm -rf build/`?");
    assert_eq!(
        shown.components[0]["components"].as_array().map(Vec::len),
        Some(2)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_not_yours_answer_goes_out_as_an_ephemeral_follow_up() {
    let app = spawn_app().await;
    let message = ask(&app).await;
    app.discord
        .press_button(&ButtonClick::new(CHAT, &bob(), "approve:42", &message.id));
    let events = app.sink.wait_for(1).await;
    app.discord.wait_for_callbacks(1, PROMPTLY).await;
    app.channel
        .answer_button(as_press(&events[0]), "Not yours.")
        .await
        .unwrap();

    let followups = app.discord.followups();
    assert_eq!(followups.len(), 1);
    assert_eq!(
        (followups[0].content.as_str(), followups[0].flags),
        ("Not yours.", 64)
    );
    assert_eq!(
        app.discord.messages(CHAT)[0]
            .components
            .as_array()
            .map(Vec::len),
        Some(1)
    );
}

/// The core refuses the press (as its access decision does for someone it does not let
/// in): the channel answers it privately, in time, and nothing is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_press_the_core_refuses_is_answered_privately_and_not_stored() {
    let app = spawn_app_with(|c| c.allowed_users = vec![alice().id]).await;
    app.sink.refuse_user(&bob().id);
    let message = ask(&app).await;
    app.discord
        .press_button(&ButtonClick::new(CHAT, &bob(), "approve:42", &message.id));

    let callbacks = app.discord.wait_for_callbacks(1, PROMPTLY).await;
    assert_eq!(
        (callbacks[0].kind, callbacks[0].data["flags"].as_u64()),
        (4, Some(64))
    );
    assert!(callbacks[0].after_dispatch < INTERACTION_DEADLINE);
    settle().await;
    assert!(app.sink.stored().is_empty());
    assert_eq!(app.discord.callbacks().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_press_on_a_guild_message_is_delivered_with_the_presser() {
    let app = spawn_app().await;
    let message = ask(&app).await;
    let click =
        ButtonClick::new(CHAT, &alice(), "approve:42", &message.id).in_guild("6000000000000000009");
    app.discord.press_button(&click);
    let events = app.sink.wait_for(1).await;
    assert_eq!(as_press(&events[0]).user.id, alice().id);
    // Leave it unanswered: the channel still defers it in time.
    let callbacks = app.discord.wait_for_callbacks(1, PROMPTLY).await;
    assert!(callbacks[0].kind == 6 && callbacks[0].after_dispatch < INTERACTION_DEADLINE);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_for_a_press_from_before_a_restart_still_reaches_the_message() {
    let app = spawn_app().await;
    let message = ask(&app).await;
    app.discord
        .press_button(&ButtonClick::new(CHAT, &alice(), "approve:42", &message.id));
    let events = app.sink.wait_for(1).await;
    app.discord.wait_for_callbacks(1, PROMPTLY).await;

    // A new process knows nothing of the press; the deferral it cannot see is found out.
    let restarted = DiscordChannel::new("discord", config_for(&app.discord));
    restarted
        .answer_button(as_press(&events[0]), "Approved")
        .await
        .unwrap();
    assert_eq!(app.discord.calls_to("PATCH", "/webhooks/").len(), 1);
    assert!(app.discord.messages(CHAT)[0].content.ends_with("Approved"));

    // A press never acknowledged (the process died at once) has lapsed after 3 seconds:
    // the message itself is edited.
    let unanswered = ask(&app).await;
    let mut press = as_press(&events[0]).clone();
    let id = app.discord.press_button(&ButtonClick::new(
        CHAT,
        &alice(),
        "approve:43",
        &unanswered.id,
    ));
    app.sink.wait_for(2).await;
    press.message = Some(unanswered.clone());
    press.reply_token = Some(format!("{id}:{FAKE_APPLICATION_ID}:not-the-real-token"));
    tokio::time::sleep(INTERACTION_DEADLINE).await;
    restarted.answer_button(&press, "Expired").await.unwrap();
    let shown = &app.discord.messages(CHAT)[1];
    assert_eq!(
        shown.content, "Run `rm -rf build/`?\n\nExpired",
        "the question is kept"
    );
    assert_eq!(shown.components, json!([]));
}
