//! Unit tests for the Slack conversation model: messages and mentions → `ChannelEvent`.

use serde_json::json;
use switchboard_channel::ConversationKey;

use super::*;
use crate::config::SlackConfig;

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

fn message_of(event: ChannelEvent) -> Inbound {
    match event {
        ChannelEvent::Message(m) => m,
        other => panic!("expected a message, got {other:?}"),
    }
}

fn delivered(verdict: Triage) -> Inbound {
    match verdict {
        Triage::Deliver(mut events) if events.len() == 1 => message_of(events.remove(0)),
        other => panic!("expected one delivered event, got {other:?}"),
    }
}

fn with(mut event: Value, extra: Value) -> Value {
    event
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    event
}

fn dm(extra: Value) -> Value {
    let event = json!({
        "type": "message", "channel": "D1", "channel_type": "im", "user": "U1",
        "text": "hello", "ts": "1700000000.000100",
    });
    with(event, extra)
}

fn in_channel(kind: &str, extra: Value) -> Value {
    let event = json!({
        "type": kind, "channel": "C1", "channel_type": "channel", "user": "U1",
        "text": "hello", "ts": "1700000000.000200",
    });
    with(event, extra)
}

fn normalise(config: &SlackConfig, event: Value) -> Triage {
    normalise_event(&ctx(config), "Ev1", event).unwrap()
}

#[test]
fn top_level_dm_messages_are_the_dm_conversation_without_a_thread() {
    for reply_in_thread in [true, false] {
        let mut config = config();
        config.reply_in_thread = reply_in_thread;
        let m = delivered(normalise(&config, dm(json!({}))));
        assert_eq!(m.key, ConversationKey::new("slack", "D1"));
        assert_eq!(
            (m.event_id.as_str(), m.user.id.as_str(), m.text.as_str()),
            ("Ev1", "U1", "hello")
        );
        assert_eq!(m.place, Place::Direct);
    }
}

#[test]
fn a_reply_in_a_dm_thread_is_that_threads_conversation_but_a_root_is_not() {
    let config = config();
    let reply = dm(json!({"ts": "3.0", "thread_ts": "1.0"}));
    let m = delivered(normalise(&config, reply));
    assert_eq!(m.key, ConversationKey::new("slack", "D1").in_thread("1.0"));
    let root = dm(json!({"ts": "1.0", "thread_ts": "1.0"}));
    let m = delivered(normalise(&config, root));
    assert_eq!(m.key, ConversationKey::new("slack", "D1"));
}

#[test]
fn a_channel_mention_starts_a_thread_under_it_or_continues_the_one_it_is_in() {
    let mut config = config();
    let top = in_channel("app_mention", json!({"text": "<@UBOT> hi"}));
    let m = delivered(normalise(&config, top.clone()));
    assert_eq!(
        m.key,
        ConversationKey::new("slack", "C1").in_thread("1700000000.000200")
    );
    assert_eq!((m.text.as_str(), &m.place), ("hi", &Place::group("C1")));
    let inside = in_channel("app_mention", json!({"thread_ts": "1.0"}));
    let m = delivered(normalise(&config, inside));
    assert_eq!(m.key, ConversationKey::new("slack", "C1").in_thread("1.0"));
    config.reply_in_thread = false;
    let m = delivered(normalise(&config, top));
    assert_eq!(m.key, ConversationKey::new("slack", "C1"));
}

#[test]
fn a_channel_reply_without_a_mention_is_delivered_only_if_its_thread_is_known() {
    let config = config();
    for kind in ["channel", "group"] {
        let reply = in_channel(
            "message",
            json!({"channel_type": kind, "ts": "3.0", "thread_ts": "1.0"}),
        );
        let Triage::IfKnown(event) = normalise(&config, reply) else {
            panic!("a reply in a thread is delivered only if known");
        };
        let m = message_of(*event);
        assert_eq!(m.key, ConversationKey::new("slack", "C1").in_thread("1.0"));
        assert_eq!(m.place, Place::group("C1"));
    }
}

#[test]
fn both_deliveries_of_a_channel_mention_carry_one_event_id() {
    let config = config();
    let fields = json!({"ts": "3.0", "thread_ts": "1.0", "text": "<@UBOT> again"});
    let mention = delivered(
        normalise_event(
            &ctx(&config),
            "EvMENTION",
            in_channel("app_mention", fields.clone()),
        )
        .unwrap(),
    );
    let Triage::IfKnown(message) =
        normalise_event(&ctx(&config), "EvMESSAGE", in_channel("message", fields)).unwrap()
    else {
        panic!("the message.channels copy is a reply in a thread");
    };
    let message = message_of(*message);
    assert_eq!(mention.event_id, "C1:3.0");
    assert_eq!(message.event_id, mention.event_id);
    assert_eq!(message.key, mention.key);
    assert_eq!(message.text, "again");
}

#[test]
fn channel_chatter_outside_threads_and_mentions_in_dms_are_ignored() {
    let config = config();
    let chatter = in_channel("message", json!({}));
    let root = in_channel("message", json!({"thread_ts": "1700000000.000200"}));
    let mention_in_dm = json!({"type": "app_mention", "channel": "D1", "user": "U1",
        "text": "<@UBOT> hi", "ts": "2.0"});
    let user_change = json!({"type": "user_change", "user": {"id": "U1"}});
    for event in [chatter, root, mention_in_dm, user_change] {
        let verdict = normalise(&config, event.clone());
        assert!(
            matches!(verdict, Triage::Ignore(_)),
            "{event} gave {verdict:?}"
        );
    }
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
        for event in [
            dm(extra.clone()),
            in_channel("message", with(json!({"thread_ts": "1.0"}), extra.clone())),
        ] {
            let verdict = normalise(&config, event);
            assert!(
                matches!(verdict, Triage::Ignore(_)),
                "{extra} gave {verdict:?}"
            );
        }
    }
}

#[test]
fn a_thread_reply_also_sent_to_the_channel_is_still_a_reply() {
    let config = config();
    let broadcast = in_channel(
        "message",
        json!({"subtype": "thread_broadcast", "ts": "3.0", "thread_ts": "1.0"}),
    );
    assert!(matches!(normalise(&config, broadcast), Triage::IfKnown(_)));
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
    let m = delivered(normalise(&config, event));
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
    let direct = delivered(normalise(&config, dm(json!({}))));
    assert_eq!(direct.place, Place::Direct);
    let mention =
        json!({"type": "app_mention", "channel": "C1", "user": "U1", "ts": "2.0", "text": "x"});
    let group = delivered(normalise(&config, mention));
    assert_eq!(group.place, Place::group("C1"));
}
