//! Normalisation rules, on serenity models parsed from the stand-in's payloads (so these also
//! prove the stand-in's JSON is what serenity can read).

use serenity::model::application::{ComponentInteraction, Interaction};
use serenity::model::channel::Message;
use serenity::model::gateway::Ready;
use switchboard_channel::{ChannelEvent, ConversationKey};
use switchboard_standins::discord::payloads::{INLINE_REPLY, ready_json};
use switchboard_standins::discord::{ButtonClick, FAKE_BOT_ID, FakeUser, IncomingMessage};

use super::*;

fn alice() -> FakeUser {
    FakeUser::new("2000000000000000001", "alice")
}

fn config() -> DiscordConfig {
    let mut config = DiscordConfig::new("test-token-not-real");
    config.allowed_users = vec!["*".into()];
    config
}

fn parse(message: &IncomingMessage) -> Message {
    serde_json::from_value(message.json("3000000000000000001"))
        .expect("serenity reads the fake's message")
}

fn verdict(config: &DiscordConfig, message: &IncomingMessage, parent: Option<&str>) -> Triage {
    let ctx = Context {
        name: "discord",
        config,
        bot_id: FAKE_BOT_ID,
    };
    message_verdict(&ctx, &parse(message), parent)
}

fn delivered_text(verdict: Triage) -> (ConversationKey, String) {
    match verdict {
        Triage::Deliver(event) => match *event {
            ChannelEvent::Message(m) => (m.key, m.text),
            other => panic!("expected a message, got {other:?}"),
        },
        other => panic!("expected a delivered message, got {other:?}"),
    }
}

#[test]
fn the_stand_ins_ready_and_interaction_payloads_parse_as_serenity_models() {
    let ready: Ready =
        serde_json::from_value(ready_json("s1", "ws://127.0.0.1:1/gateway")).unwrap();
    assert_eq!(ready.user.id.to_string(), FAKE_BOT_ID);
    let click = ButtonClick::new("10", &alice(), "approve:1", "11").in_guild("9");
    let message = serde_json::json!({"id": "11", "channel_id": "10", "author": FakeUser::the_bot().json(),
        "content": "Run it?", "timestamp": "2024-05-01T12:00:00.000000+00:00", "edited_timestamp": null,
        "tts": false, "mention_everyone": false, "mentions": [], "mention_roles": [], "attachments": [],
        "embeds": [], "pinned": false, "type": 0});
    let interaction: Interaction =
        serde_json::from_value(click.json("12", "tok", message)).unwrap();
    let Interaction::Component(press) = interaction else {
        panic!("a component interaction");
    };
    assert_eq!(
        press.user.id.to_string(),
        alice().id,
        "the member's user is the presser"
    );
}

#[test]
fn a_dm_is_delivered_with_the_dm_channel_as_its_conversation() {
    let (key, text) = delivered_text(verdict(
        &config(),
        &IncomingMessage::dm("50", &alice(), "hello"),
        None,
    ));
    assert_eq!(key, ConversationKey::new("discord", "50"));
    assert_eq!(text, "hello");
}

#[test]
fn a_guild_message_counts_only_when_it_mentions_or_replies_to_the_bot() {
    let plain = IncomingMessage::guild("9", "60", &alice(), "just chatting");
    assert!(matches!(
        verdict(&config(), &plain, None),
        Triage::Ignore(_)
    ));
    let (_, text) = delivered_text(verdict(&config(), &plain.clone().mentioning_bot(), None));
    assert_eq!(text, "just chatting");
    let reply = plain.clone().replying_to("61", &FakeUser::the_bot());
    assert_eq!(reply.kind, INLINE_REPLY);
    assert_eq!(
        delivered_text(verdict(&config(), &reply, None)).1,
        "just chatting"
    );
    let reply_to_someone = plain.replying_to("62", &alice());
    assert!(matches!(
        verdict(&config(), &reply_to_someone, None),
        Triage::Ignore(_)
    ));
}

#[test]
fn always_on_channels_and_their_threads_need_no_mention() {
    let mut config = config();
    config.always_on_channels = vec!["60".into()];
    let in_channel = IncomingMessage::guild("9", "60", &alice(), "hi");
    assert!(matches!(
        verdict(&config, &in_channel, None),
        Triage::Deliver(_)
    ));
    let in_thread = IncomingMessage::guild("9", "70", &alice(), "hi");
    let (key, _) = delivered_text(verdict(&config, &in_thread, Some("60")));
    assert_eq!(
        key,
        ConversationKey::new("discord", "70"),
        "the thread is its own conversation"
    );
    assert!(matches!(
        verdict(&config, &in_thread, None),
        Triage::Ignore(_)
    ));
    config.always_on_channels.clear();
    config.require_mention_in_guilds = false;
    assert!(matches!(
        verdict(&config, &in_thread, None),
        Triage::Deliver(_)
    ));
}

#[test]
fn bots_webhooks_and_system_messages_are_ignored() {
    let own = IncomingMessage::dm("50", &FakeUser::the_bot(), "my own answer");
    assert_eq!(
        verdict(&config(), &own, None),
        Triage::Ignore("the bot's own message")
    );
    let other = IncomingMessage::dm(
        "50",
        &FakeUser::other_bot("2100000000000000001", "otherbot"),
        "beep",
    );
    assert!(matches!(
        verdict(&config(), &other, None),
        Triage::Ignore(_)
    ));
    let mut hooked = IncomingMessage::dm("50", &alice(), "from a webhook");
    hooked.webhook_id = Some("2200000000000000001".into());
    assert!(matches!(
        verdict(&config(), &hooked, None),
        Triage::Ignore(_)
    ));
    let mut pinned = IncomingMessage::dm("50", &alice(), "pinned a message");
    pinned.kind = 6;
    assert!(matches!(
        verdict(&config(), &pinned, None),
        Triage::Ignore(_)
    ));
    let only_mention = IncomingMessage::guild("9", "60", &alice(), "").mentioning_bot();
    assert!(matches!(
        verdict(&config(), &only_mention, None),
        Triage::Ignore(_)
    ));
}

#[test]
fn guild_and_channel_lists_refuse_places_and_people_are_left_to_the_core() {
    let mut config = config();
    config.allowed_users = vec![];
    let dm = IncomingMessage::dm("50", &alice(), "hello");
    let Triage::Deliver(event) = verdict(&config, &dm, None) else {
        panic!("a stranger's DM is delivered for the core to decide");
    };
    assert!(event.place().is_direct());

    config.allowed_guilds = vec!["8".into()];
    let elsewhere = IncomingMessage::guild("9", "60", &alice(), "hi").mentioning_bot();
    assert_eq!(
        verdict(&config, &elsewhere, None),
        Triage::RefusedPlace("guild 9".into())
    );
    assert!(
        matches!(verdict(&config, &dm, None), Triage::Deliver(_)),
        "DMs are not guild-checked"
    );
    config.allowed_guilds = vec!["9".into()];
    config.allowed_channels = vec!["61".into()];
    assert_eq!(
        verdict(&config, &elsewhere, None),
        Triage::RefusedPlace("channel 60".into())
    );
    assert!(matches!(
        verdict(&config, &elsewhere, Some("61")),
        Triage::Deliver(_)
    ));
}

#[test]
fn an_unmentioned_stranger_is_ignored_rather_than_refused() {
    let mut config = config();
    config.allowed_users = vec![];
    let chatter = IncomingMessage::guild("9", "60", &alice(), "not for the bot");
    assert!(matches!(
        verdict(&config, &chatter, None),
        Triage::Ignore(_)
    ));
}

#[test]
fn both_mention_forms_are_stripped_with_their_space() {
    assert_eq!(strip_mention("<@42> hi there", "42"), "hi there");
    assert_eq!(strip_mention("hey <@!42> you", "42"), "hey you");
    assert_eq!(
        strip_mention("<@43> is someone else", "42"),
        "<@43> is someone else"
    );
}

#[test]
fn a_button_press_carries_its_payload_message_and_reply_token() {
    let click = ButtonClick::new("50", &alice(), "approve:7", "51");
    let message = serde_json::json!({"id": "51", "channel_id": "50", "author": FakeUser::the_bot().json(),
        "content": "Run it?", "timestamp": "2024-05-01T12:00:00.000000+00:00", "edited_timestamp": null,
        "tts": false, "mention_everyone": false, "mentions": [], "mention_roles": [], "attachments": [],
        "embeds": [], "pinned": false, "type": 0});
    let press: ComponentInteraction =
        serde_json::from_value(click.json("52", "tok-1", message)).unwrap();
    let config = config();
    let ctx = Context {
        name: "discord",
        config: &config,
        bot_id: FAKE_BOT_ID,
    };
    let Triage::Deliver(delivered) = press_verdict(&ctx, &press, None) else {
        panic!("a delivered press");
    };
    let ChannelEvent::Button(event) = *delivered else {
        panic!("a press, not a message");
    };
    assert_eq!(event.event_id, "i52");
    assert_eq!(event.payload, "approve:7");
    assert_eq!(event.message.unwrap().id, "51");
    assert_eq!(event.key, ConversationKey::new("discord", "50"));
    let token = PressToken::parse(event.reply_token.as_deref().unwrap()).unwrap();
    assert_eq!(
        (token.interaction_id.as_str(), token.token.as_str()),
        ("52", "tok-1")
    );
}

#[test]
fn an_attachment_without_text_is_delivered_as_a_reference_with_its_url() {
    let file = serde_json::json!({
        "id": "1300000000000000009", "filename": "notes.txt", "size": 12,
        "url": "https://cdn.discord.test/attachments/1/1300000000000000009/notes.txt",
        "proxy_url": "https://media.discord.test/notes.txt", "content_type": "text/plain",
    });
    let message = IncomingMessage::dm("42", &alice(), "").with_attachment(file);
    let Triage::Deliver(event) = verdict(&config(), &message, None) else {
        panic!("an attachment alone is a message");
    };
    let ChannelEvent::Message(inbound) = *event else {
        panic!("expected a message");
    };
    let att = &inbound.attachments[0];
    assert_eq!(att.kind, switchboard_channel::AttachmentKind::Document);
    assert_eq!((att.name.as_str(), att.size), ("notes.txt", Some(12)));
    assert!(
        att.url
            .as_deref()
            .is_some_and(|u| u.ends_with("/notes.txt"))
    );
}
