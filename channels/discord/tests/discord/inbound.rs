//! Messages from the gateway to the sink: which count, under which conversation key, with
//! which text; bots and strangers kept out.

use switchboard_channel::ConversationKey;
use switchboard_standins::discord::{FakeUser, IncomingMessage};

use crate::helpers::{alice, as_message, bob, settle, spawn_app, spawn_app_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dm_is_delivered_as_inbound_keyed_by_its_dm_channel() {
    let app = spawn_app().await;
    let id = app.discord.send_message(&IncomingMessage::dm(
        "4000000000000000001",
        &alice(),
        "hello bot",
    ));

    let events = app.sink.wait_for(1).await;
    let message = as_message(&events[0]);
    assert_eq!(
        message.key,
        ConversationKey::new("discord", "4000000000000000001")
    );
    assert_eq!(message.event_id, format!("m{id}"));
    assert_eq!(message.text, "hello bot");
    assert_eq!(message.user.id, alice().id);
    assert_eq!(message.user.name.as_deref(), Some("alice"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unmentioned_guild_message_is_ignored_and_a_mention_is_delivered_without_it() {
    let app = spawn_app().await;
    let (guild, channel) = ("4100000000000000001", "4100000000000000002");
    app.discord.send_message(&IncomingMessage::guild(
        guild,
        channel,
        &alice(),
        "talking to bob",
    ));
    let mentioned =
        IncomingMessage::guild(guild, channel, &alice(), "what time is it?").mentioning_bot();
    assert!(
        mentioned.content.starts_with("<@"),
        "the fake puts the mention in the text"
    );
    app.discord.send_message(&mentioned);

    let events = app.sink.wait_for(1).await;
    settle().await;
    assert_eq!(
        app.sink.stored().len(),
        1,
        "only the mention counts: {events:?}"
    );
    let message = as_message(&events[0]);
    assert_eq!(message.text, "what time is it?");
    assert_eq!(message.key, ConversationKey::new("discord", channel));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_to_the_bot_counts_without_a_mention() {
    let app = spawn_app().await;
    let (guild, channel) = ("4200000000000000001", "4200000000000000002");
    let earlier = app
        .discord
        .post_as_bot(channel, "Here you go.", serde_json::json!([]));
    let reply = IncomingMessage::guild(guild, channel, &alice(), "thanks, and one more thing")
        .replying_to(&earlier, &FakeUser::the_bot());
    app.discord.send_message(&reply);

    let events = app.sink.wait_for(1).await;
    assert_eq!(as_message(&events[0]).text, "thanks, and one more thing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_is_its_own_conversation_and_inherits_its_parents_allowlisting() {
    let (guild, parent, thread) = (
        "4300000000000000001",
        "4300000000000000002",
        "4300000000000000003",
    );
    let app = spawn_app_with(|c| c.allowed_channels = vec![parent.to_owned()]).await;
    app.discord.add_text_channel(guild, parent);
    app.discord.add_thread(guild, parent, thread);

    app.discord.send_message(
        &IncomingMessage::guild(guild, parent, &alice(), "in the channel").mentioning_bot(),
    );
    app.discord.send_message(
        &IncomingMessage::guild(guild, thread, &alice(), "in the thread").mentioning_bot(),
    );
    app.discord
        .send_message(&IncomingMessage::guild(guild, thread, &bob(), "also here").mentioning_bot());

    let events = app.sink.wait_for(3).await;
    let key_of = |text: &str| {
        let found = events.iter().map(as_message).find(|m| m.text == text);
        found
            .unwrap_or_else(|| panic!("{text:?} not delivered: {events:?}"))
            .key
            .clone()
    };
    assert_eq!(
        key_of("in the channel"),
        ConversationKey::new("discord", parent)
    );
    assert_eq!(
        key_of("in the thread"),
        ConversationKey::new("discord", thread)
    );
    assert_eq!(key_of("also here"), key_of("in the thread"));
    let lookups = app.discord.calls_to("GET", &format!("/channels/{thread}"));
    assert!(!lookups.is_empty(), "the thread's parent is looked up");
    assert!(
        app.discord
            .calls_to("GET", &format!("/channels/{parent}"))
            .is_empty(),
        "a listed channel needs no lookup"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bots_own_and_other_bots_messages_are_ignored() {
    let app = spawn_app().await;
    let dm = "4400000000000000001";
    app.discord.send_message(&IncomingMessage::dm(
        dm,
        &FakeUser::the_bot(),
        "my own answer",
    ));
    let other = FakeUser::other_bot("2100000000000000001", "otherbot");
    app.discord
        .send_message(&IncomingMessage::dm(dm, &other, "beep boop"));
    app.discord
        .send_message(&IncomingMessage::dm(dm, &alice(), "a human"));

    let events = app.sink.wait_for(1).await;
    settle().await;
    assert_eq!(app.sink.stored().len(), 1, "{events:?}");
    assert_eq!(as_message(&events[0]).text, "a human");
}

/// Who gets in is the core's decision (it sees the grants in the database and sends
/// pairing codes), so the channel delivers every person's DM, marked as a DM.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_persons_dm_is_delivered_for_the_core_to_decide_whatever_allowed_users_says() {
    let app = spawn_app_with(|c| c.allowed_users = vec![bob().id]).await;
    let dm = "4500000000000000001";
    app.discord
        .send_message(&IncomingMessage::dm(dm, &alice(), "let me in"));
    app.discord
        .send_message(&IncomingMessage::dm(dm, &bob(), "hello"));
    let events = app.sink.wait_for(2).await;
    settle().await;
    let mut senders: Vec<String> = events
        .iter()
        .map(|e| as_message(e).user.id.clone())
        .collect();
    senders.sort();
    assert_eq!(senders, [alice().id, bob().id]);
    assert!(events.iter().all(|e| e.place().is_direct()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guilds_and_channels_outside_the_allowlists_are_ignored() {
    let (guild, channel, other_guild) = (
        "4600000000000000001",
        "4600000000000000002",
        "4600000000000000009",
    );
    let app = spawn_app_with(|c| {
        c.allowed_guilds = vec![guild.to_owned()];
        c.allowed_channels = vec![channel.to_owned()];
    })
    .await;
    app.discord.send_message(
        &IncomingMessage::guild(other_guild, channel, &alice(), "wrong guild").mentioning_bot(),
    );
    app.discord.send_message(
        &IncomingMessage::guild(guild, "4600000000000000003", &alice(), "wrong channel")
            .mentioning_bot(),
    );
    app.discord.send_message(
        &IncomingMessage::guild(guild, channel, &alice(), "right place").mentioning_bot(),
    );

    let events = app.sink.wait_for(1).await;
    settle().await;
    assert_eq!(app.sink.stored().len(), 1, "{events:?}");
    assert_eq!(as_message(&events[0]).text, "right place");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_always_on_channel_needs_no_mention() {
    let (guild, channel) = ("4700000000000000001", "4700000000000000002");
    let app = spawn_app_with(|c| c.always_on_channels = vec![channel.to_owned()]).await;
    app.discord.send_message(&IncomingMessage::guild(
        guild,
        channel,
        &alice(),
        "no mention needed here",
    ));

    let events = app.sink.wait_for(1).await;
    assert_eq!(as_message(&events[0]).text, "no mention needed here");
}
