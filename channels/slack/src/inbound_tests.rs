//! Unit tests for the Slack JSON → `ChannelEvent` edge.

use serde_json::json;
use switchboard_channel::{ChannelEvent, ConversationKey};

use super::*;

fn config() -> SlackConfig {
    let mut config = SlackConfig::new("xoxb-test-fake", "test-signing-secret");
    config.allowed_users = vec!["*".into()];
    config
}

fn ctx(config: &SlackConfig) -> Context<'_> {
    Context {
        name: "slack",
        config,
        bot_user_id: Some("UBOT"),
    }
}

fn delivered_message(verdict: Verdict) -> Inbound {
    match verdict {
        Verdict::Deliver(mut events) if events.len() == 1 => match events.remove(0) {
            ChannelEvent::Message(m) => m,
            other => panic!("expected a message, got {other:?}"),
        },
        other => panic!("expected one delivered event, got {other:?}"),
    }
}

fn dm(extra: Value) -> Value {
    let mut event = json!({
        "type": "message", "channel": "D1", "channel_type": "im", "user": "U1",
        "text": "hello", "ts": "1700000000.000100",
    });
    event
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    event
}

#[test]
fn a_dm_becomes_an_inbound_message_keyed_by_channel_and_ts() {
    let config = config();
    let m = delivered_message(normalise_event(&ctx(&config), "Ev1", dm(json!({}))).unwrap());
    assert_eq!(
        m.key,
        ConversationKey::new("slack", "D1").in_thread("1700000000.000100")
    );
    assert_eq!(
        (m.event_id.as_str(), m.user.id.as_str(), m.text.as_str()),
        ("Ev1", "U1", "hello")
    );
}

#[test]
fn a_dm_without_thread_has_no_thread_when_reply_in_thread_is_off() {
    let mut config = config();
    config.reply_in_thread = false;
    let m = delivered_message(normalise_event(&ctx(&config), "Ev1", dm(json!({}))).unwrap());
    assert_eq!(m.key, ConversationKey::new("slack", "D1"));
    let m = delivered_message(
        normalise_event(&ctx(&config), "Ev2", dm(json!({"thread_ts": "1.0"}))).unwrap(),
    );
    assert_eq!(m.key.thread.as_deref(), Some("1.0"));
}

#[test]
fn bots_edits_deletions_and_the_bot_itself_are_ignored() {
    let config = config();
    for extra in [
        json!({"bot_id": "B1"}),
        json!({"subtype": "bot_message"}),
        json!({"subtype": "message_changed"}),
        json!({"subtype": "message_deleted"}),
        json!({"user": "UBOT"}),
    ] {
        let verdict = normalise_event(&ctx(&config), "Ev", dm(extra.clone())).unwrap();
        assert!(
            matches!(verdict, Verdict::Ignore(_)),
            "{extra} gave {verdict:?}"
        );
    }
}

#[test]
fn other_event_types_and_plain_channel_messages_are_ignored() {
    let config = config();
    let user_change = json!({"type": "user_change", "user": {"id": "U1"}});
    let channel_msg = dm(json!({"channel": "C1", "channel_type": "channel"}));
    for event in [user_change, channel_msg] {
        let verdict = normalise_event(&ctx(&config), "Ev", event).unwrap();
        assert!(matches!(verdict, Verdict::Ignore(_)), "{verdict:?}");
    }
}

#[test]
fn a_message_with_fields_of_the_wrong_type_is_malformed() {
    let config = config();
    assert!(normalise_event(&ctx(&config), "Ev", dm(json!({"text": 5}))).is_err());
}

#[test]
fn the_bot_mention_is_stripped_and_slack_escapes_undone() {
    let config = config();
    let event = json!({
        "type": "app_mention", "channel": "C1", "user": "U1", "ts": "2.0",
        "text": "<@UBOT> is 1 &lt; 2 &amp;&amp; <@U9>?",
    });
    let m = delivered_message(normalise_event(&ctx(&config), "Ev", event).unwrap());
    assert_eq!(m.text, "is 1 < 2 && <@U9>?");
    assert_eq!(
        strip_mention("hey <@UBOT|bot> there", Some("UBOT")),
        "hey there"
    );
    assert_eq!(strip_mention("<@UANY> hi", None), "hi");
}

#[test]
fn strangers_are_delivered_marked_with_their_place_for_the_core_to_decide() {
    let mut config = config();
    config.allowed_users = Vec::new();
    config.allowed_channels = vec!["C2".into()];
    let direct = delivered_message(normalise_event(&ctx(&config), "Ev", dm(json!({}))).unwrap());
    assert_eq!(direct.place, Place::Direct);
    let mention =
        json!({"type": "app_mention", "channel": "C1", "user": "U1", "ts": "2.0", "text": "x"});
    let group = delivered_message(normalise_event(&ctx(&config), "Ev", mention).unwrap());
    assert_eq!(group.place, Place::group("C1"));
}

#[test]
fn each_block_action_becomes_a_button_press_with_a_unique_id() {
    let config = config();
    let payload: BlockActions = serde_json::from_value(json!({
        "type": "block_actions",
        "user": {"id": "U1", "username": "ada"},
        "trigger_id": "111.222.abc",
        "channel": {"id": "C1"},
        "message": {"ts": "5.0", "thread_ts": "4.0", "blocks": []},
        "response_url": "https://hooks.example/actions/1",
        "actions": [{"value": "approve:1", "action_ts": "6.0"}, {"value": "deny:1"}],
    }))
    .unwrap();
    let Verdict::Deliver(events) = normalise_actions(&ctx(&config), &payload) else {
        panic!("not delivered");
    };
    let ids: Vec<&str> = events.iter().map(ChannelEvent::event_id).collect();
    assert_eq!(ids, ["111.222.abc", "111.222.abc:1"]);
    let ChannelEvent::Button(press) = &events[0] else {
        panic!("not a button");
    };
    assert_eq!(
        press.key,
        ConversationKey::new("slack", "C1").in_thread("4.0")
    );
    assert_eq!(press.payload, "approve:1");
    assert_eq!(press.message, Some(MessageRef::new("5.0")));
    assert_eq!(
        press.reply_token.as_deref(),
        Some("https://hooks.example/actions/1")
    );
    assert_eq!(press.user.name.as_deref(), Some("ada"));
}
