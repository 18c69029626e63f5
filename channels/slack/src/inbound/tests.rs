//! Unit tests for button presses → `ChannelEvent`.

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
    let Triage::Deliver(events) = normalise_actions(&ctx(&config), &payload) else {
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

#[test]
fn a_press_on_a_thread_root_belongs_to_the_conversation_at_top_level() {
    let config = config();
    let payload: BlockActions = serde_json::from_value(json!({
        "type": "block_actions",
        "user": {"id": "U1"},
        "trigger_id": "1.2.root",
        "channel": {"id": "D1"},
        "message": {"ts": "5.0", "thread_ts": "5.0"},
        "actions": [{"value": "approve:1"}],
    }))
    .unwrap();
    let Triage::Deliver(events) = normalise_actions(&ctx(&config), &payload) else {
        panic!("not delivered");
    };
    assert_eq!(events[0].key(), &ConversationKey::new("slack", "D1"));
    assert_eq!(events[0].place(), &Place::Direct);
}
