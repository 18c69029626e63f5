//! A direct room: the answer streams into one message by edits, arrives once across a
//! restart, and a stranger is answered with a pairing code instead.

use std::time::Duration;

use switchboard::access::cli::{AccessAction, apply};
use switchboard_channel::{Channel, ChannelError, ConversationKey, Outbound};
use switchboard_standins::Reply;

use super::{Bot, Person, bot_messages, dm, synapse, wait_bot, wait_joined};

#[tokio::test]
async fn a_direct_message_gets_a_streamed_answer_in_one_edited_message() {
    let Some(hs) = synapse() else { return };
    let t = dm(&hs, false, |_| String::new()).await;
    let answer: String = (1..=12)
        .map(|i| format!("Line {i} of a **streamed** answer.\n"))
        .collect();
    t.app
        .llm
        .push(Reply::paced(answer, 40, Duration::from_millis(250)));
    t.alice.say(&t.room, "hello").await;
    let seen = wait_bot(&t.room, &t.bot.account.id, |s| {
        s.iter().any(|m| m.text.contains("Line 12"))
    })
    .await;
    assert_eq!(seen.len(), 1, "one message, edited as it grew: {seen:#?}");
    let answer = &seen[0];
    assert!(answer.edits >= 1, "{answer:#?}");
    let html = answer.content["formatted_body"]
        .as_str()
        .unwrap_or_default();
    assert!(html.contains("<strong>streamed</strong>"), "{html}");
    assert_eq!(answer.content["m.mentions"], serde_json::json!({}));
}

#[tokio::test]
async fn after_a_restart_new_messages_are_answered_and_old_ones_not_again() {
    let Some(hs) = synapse() else { return };
    let mut t = dm(&hs, false, |_| String::new()).await;
    t.app.llm.push(Reply::text("first answer"));
    t.alice.say(&t.room, "one").await;
    wait_bot(&t.room, &t.bot.account.id, |s| {
        s.iter().any(|m| m.text == "first answer")
    })
    .await;
    t.app.stop().await;
    // Written while the gateway is down: read from the saved sync token when it is back.
    t.alice.say(&t.room, "two").await;
    t.app.llm.push(Reply::text("second answer"));
    t.app.start().await;
    let seen = wait_bot(&t.room, &t.bot.account.id, |s| {
        s.iter().any(|m| m.text == "second answer")
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let seen_later = bot_messages(&t.room, &t.bot.account.id).await;
    let texts: Vec<&str> = seen_later.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(
        texts,
        ["first answer", "second answer"],
        "nothing answered twice: {seen:#?}"
    );
}

#[tokio::test]
async fn a_stranger_gets_a_pairing_code_and_is_answered_once_allowed() {
    let Some(hs) = synapse() else { return };
    let bot = Bot::new(&hs, "").await;
    let app = bot.app("").start().await;
    let stranger = Person::new(&hs, "stranger").await;
    let room = stranger.room(&bot.account.id, true, false, &[]).await;
    wait_joined(&room, &bot.account.id).await;
    stranger.say(&room, "hi, who are you?").await;
    let seen = wait_bot(&room, &bot.account.id, |s| {
        s.iter().any(|m| m.text.contains("pairing code"))
    })
    .await;
    let text = &seen[0].text;
    let code = text
        .split("switchboard access allow matrix ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_alphanumeric()).next())
        .expect("the reply names the command");
    let action = AccessAction::Allow {
        channel: "matrix".into(),
        code: code.into(),
    };
    let now = switchboard::clock::Clock::wall().now_ms();
    apply(app.store().as_ref(), &action, now)
        .await
        .expect("the grant is stored");
    assert!(
        app.llm.requests().is_empty(),
        "nothing reached the model before"
    );
    app.llm.push(Reply::text("Now I know you."));
    stranger.say(&room, "hello again").await;
    wait_bot(&room, &bot.account.id, |s| {
        s.iter().any(|m| m.text == "Now I know you.")
    })
    .await;
}

#[tokio::test]
async fn a_gateway_killed_mid_answer_finishes_it_by_editing_the_same_message() {
    let Some(hs) = synapse() else { return };
    let mut t = super::dm_built(&hs, false, |_| String::new(), |b| b.killable()).await;
    let me = t.bot.account.id.clone();
    let first_part: String = "The first part of the answer. ".repeat(8);
    t.app.llm.push(Reply::paced(
        format!("{first_part}{}", "never sent ".repeat(200)),
        40,
        Duration::from_millis(400),
    ));
    t.alice.say(&t.room, "a long question").await;
    wait_bot(&t.room, &me, |s| {
        s.iter().any(|m| m.text.contains("The first part"))
    })
    .await;
    t.app.kill();
    t.app.llm.push(Reply::text("The whole answer, at last."));
    t.app.start().await;
    let seen = wait_bot(&t.room, &me, |s| {
        s.iter().any(|m| m.text == "The whole answer, at last.")
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let seen_later = bot_messages(&t.room, &me).await;
    assert_eq!(
        seen_later.len(),
        1,
        "one message, edited to the answer: {seen:#?}"
    );
}

#[tokio::test]
async fn a_second_process_on_the_same_account_folder_is_refused_not_let_in() {
    let Some(hs) = synapse() else { return };
    let t = dm(&hs, false, |_| String::new()).await;
    t.app.llm.push(Reply::text("first"));
    t.alice.say(&t.room, "hi").await;
    wait_bot(&t.room, &t.bot.account.id, |s| {
        s.iter().any(|m| m.text == "first")
    })
    .await;
    // What a second replica sharing data_dir would build.
    let config = switchboard_matrix::MatrixConfig::new(
        &hs.url,
        t.bot.account.id.as_str(),
        &t.bot.account.password,
    );
    let dir = t.app.config.gateway.data_dir.join("matrix/matrix");
    let second = switchboard_matrix::MatrixChannel::new("matrix", config, dir).unwrap();
    let key = ConversationKey::new("matrix", t.room.room_id().as_str());
    let refused = second.send(&key, &Outbound::text("from the second")).await;
    match refused {
        Err(ChannelError::Transient(why)) => {
            assert!(why.contains("in use by another gateway process"), "{why}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn an_access_token_of_an_existing_login_is_the_bots_device() {
    let Some(hs) = synapse() else { return };
    let alice = Person::new(&hs, "alice").await;
    let account = hs.register("bot").await;
    let login: serde_json::Value = reqwest::Client::new()
        .post(format!("{}/_matrix/client/v3/login", hs.url))
        .json(&serde_json::json!({
            "type": "m.login.password",
            "identifier": {"type": "m.id.user", "user": account.id.as_str()},
            "password": account.password,
            "device_id": "TOKENDEVICE",
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = login["access_token"].as_str().unwrap();
    let table = format!(
        "[channels.matrix]\nkind = \"matrix\"\nhomeserver = \"{}\"\nuser_id = \"{}\"\naccess_token = \"{token}\"\nsync_timeout_secs = 2\nallowed_users = [\"{}\"]\n",
        hs.url, account.id, alice.id
    );
    let app = crate::app::TestApp::builder().config(&table).start().await;
    let room = alice.room(&account.id, true, true, &[]).await;
    wait_joined(&room, &account.id).await;
    app.llm.push(Reply::text("Logged in by token."));
    alice.say(&room, "hello").await;
    wait_bot(&room, &account.id, |s| {
        s.iter().any(|m| m.text == "Logged in by token.")
    })
    .await;
    let devices = alice
        .client
        .encryption()
        .get_user_devices(&account.id)
        .await
        .unwrap();
    let ids: Vec<String> = devices
        .devices()
        .map(|d| d.device_id().to_string())
        .collect();
    assert_eq!(ids, ["TOKENDEVICE"], "the token's own device, no new login");
}
