//! Rooms with more people: only what mentions the bot starts a conversation, a thread it
//! answers in goes on without one, and only an approver's reaction approves.

use std::time::Duration;

use serde_json::json;
use switchboard_standins::Reply;

use super::approvals::{policy, shell_runs};
use super::{bot_messages, group, synapse, wait_bot, wait_prompt};

#[tokio::test]
async fn in_a_room_only_a_mention_is_answered_and_its_thread_goes_on_without_one() {
    let Some(hs) = synapse() else { return };
    let (app, bot, (alice, room), (bob, bobs)) = group(&hs, |_| String::new()).await;
    let me = &bot.account.id;

    alice.say(&room, "lunch at noon, anyone?").await;
    app.llm.push(Reply::text("Here to help."));
    alice
        .send(
            &room,
            json!({
                "msgtype": "m.text",
                "body": format!("{me}: can you help?"),
                "m.mentions": {"user_ids": [me]},
            }),
        )
        .await;
    let seen = wait_bot(&room, me, |s| s.iter().any(|m| m.text == "Here to help.")).await;
    assert_eq!(
        seen.len(),
        1,
        "the unaddressed message got nothing: {seen:#?}"
    );
    assert_eq!(app.llm.requests().len(), 1);

    // A reply to the bot's message needs no mention.
    app.llm.push(Reply::text("Replying to your reply."));
    bob.send(
        &bobs,
        json!({
            "msgtype": "m.text",
            "body": "why?",
            "m.relates_to": {"m.in_reply_to": {"event_id": seen[0].id}},
        }),
    )
    .await;
    wait_bot(&room, me, |s| {
        s.iter().any(|m| m.text == "Replying to your reply.")
    })
    .await;
    assert_eq!(app.llm.requests().len(), 2);

    // A thread: opened with a mention, then continued without one.
    let topic = alice.say(&room, "a thread about the release").await;
    app.llm.push(Reply::text("In the thread."));
    alice
        .send(
            &room,
            json!({
                "msgtype": "m.text",
                "body": format!("{me}: what is left?"),
                "m.mentions": {"user_ids": [me]},
                "m.relates_to": {"rel_type": "m.thread", "event_id": topic, "is_falling_back": true,
                                 "m.in_reply_to": {"event_id": topic}},
            }),
        )
        .await;
    let seen = wait_bot(&room, me, |s| s.iter().any(|m| m.text == "In the thread.")).await;
    let in_thread = seen.iter().find(|m| m.text == "In the thread.").unwrap();
    assert_eq!(in_thread.content["m.relates_to"]["rel_type"], "m.thread");
    assert_eq!(
        in_thread.content["m.relates_to"]["event_id"],
        topic.as_str()
    );
    app.llm.push(Reply::text("Still in the thread."));
    bob.send(
        &bobs,
        json!({
            "msgtype": "m.text",
            "body": "and the docs?",
            "m.relates_to": {"rel_type": "m.thread", "event_id": topic, "is_falling_back": true,
                             "m.in_reply_to": {"event_id": topic}},
        }),
    )
    .await;
    wait_bot(&room, me, |s| {
        s.iter().any(|m| m.text == "Still in the thread.")
    })
    .await;
    assert_eq!(app.llm.requests().len(), 4);
}

#[tokio::test]
async fn only_an_approvers_reaction_runs_the_call() {
    let Some(hs) = synapse() else { return };
    let (app, bot, (alice, room), (bob, bobs)) = group(&hs, policy).await;
    let me = &bot.account.id;

    app.llm
        .push(Reply::tool_call(
            "shell",
            json!({"command": "touch made.txt"}),
        ))
        .push(Reply::text("Made it."));
    bob.send(
        &bobs,
        json!({
            "msgtype": "m.text",
            "body": format!("{me}: make a file"),
            "m.mentions": {"user_ids": [me]},
        }),
    )
    .await;
    let prompt = wait_prompt(&room, me).await;
    bob.react(&bobs, &prompt.id, "✅").await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(shell_runs(&app).await, 0, "bob is no approver");
    let told = wait_bot(&room, me, |s| {
        s.iter().any(|m| m.content["msgtype"] == "m.notice")
    })
    .await;
    let notice = told
        .iter()
        .find(|m| m.content["msgtype"] == "m.notice")
        .unwrap();
    assert!(
        notice.text.starts_with(bob.id.as_str()),
        "addressed to bob: {notice:#?}"
    );
    assert_eq!(notice.content["m.mentions"]["user_ids"][0], bob.id.as_str());
    assert_eq!(
        notice.content["m.relates_to"]["rel_type"], "m.thread",
        "kept out of the room"
    );
    assert_eq!(
        notice.content["m.relates_to"]["event_id"],
        prompt.id.as_str()
    );
    let still = bot_messages(&room, me).await;
    assert!(
        still
            .iter()
            .any(|m| m.id == prompt.id && m.content.get("ch.switchboard.choices").is_some()),
        "the prompt still waits: {still:#?}"
    );
    alice.react(&room, &prompt.id, "✅").await;
    wait_bot(&room, me, |s| s.iter().any(|m| m.text.contains("Made it."))).await;
    assert_eq!(shell_runs(&app).await, 1);
}
