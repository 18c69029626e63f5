//! A person's authenticated mail becomes one message in its thread's conversation; the
//! answer is one mail, threaded in the person's real mailbox, with a text and an HTML part;
//! a reply continues the conversation and a new subject starts another.

use switchboard_channel::{Channel, ChannelEvent, Outbound, Place};
use switchboard_standins::RecordingSink;

use crate::support::{Draft, Person, Running, config, header, servers, state_dir};

#[tokio::test]
async fn an_authenticated_mail_is_answered_once_in_its_thread_with_an_html_part() {
    let Some(servers) = servers() else { return };
    let (bot, alice) = (servers.account().await, servers.account().await);
    let person = servers.person(&alice);
    let bot_address = format!("{}@bot.test", bot.user);
    let sink = RecordingSink::new();
    let dir = state_dir("thread");
    let running = Running::start(
        config(&servers, &bot, &[&person.address]),
        &dir,
        sink.clone(),
    );

    let first = person
        .send(
            &bot_address,
            Draft {
                subject: "Lunch plan".into(),
                body: "Shall we meet at noon?\n\n-- \nAlice".into(),
                ..Draft::default()
            },
        )
        .await;
    let stored = sink.wait_for(1).await;
    let ChannelEvent::Message(message) = &stored[0] else {
        panic!("a message: {stored:?}")
    };
    assert_eq!(message.event_id, first);
    assert_eq!(message.user.id, person.address);
    assert_eq!(message.place, Place::Direct);
    assert_eq!(
        message.text, "Subject: Lunch plan\n\nShall we meet at noon?",
        "signature trimmed"
    );
    assert_eq!(message.key.chat, person.address);
    assert_eq!(message.key.thread.as_deref(), Some(first.as_str()));

    let answer = Outbound::text("**Noon** works. See <https://example.org/menu>.");
    let sent = running
        .channel
        .send(&message.key, &answer)
        .await
        .expect("answer sent");
    let inbox = person.wait_inbox(1).await;
    assert_threaded_answer(&inbox[0], &first, &sent.id);
    replies_continue_and_new_subjects_start(&person, &bot_address, &sink, &first, &sent.id).await;
}

/// The answer's headers thread it under `first`, and it has a text and an HTML part.
fn assert_threaded_answer(mail: &[u8], first: &str, sent: &str) {
    assert_eq!(header(mail, "Subject").as_deref(), Some("Re: Lunch plan"));
    assert_eq!(header(mail, "In-Reply-To"), Some(format!("<{first}>")));
    assert_eq!(header(mail, "References"), Some(format!("<{first}>")));
    assert_eq!(header(mail, "Message-ID"), Some(format!("<{sent}>")));
    assert_eq!(
        header(mail, "Auto-Submitted").as_deref(),
        Some("auto-replied")
    );
    let parsed = mail_parser::MessageParser::default().parse(mail).unwrap();
    assert!(parsed.body_text(0).unwrap().contains("**Noon** works"));
    let html = parsed.body_html(0).expect("an HTML part");
    assert!(html.contains("<strong>Noon</strong>"), "{html}");
    assert!(
        header(mail, "Content-Type")
            .unwrap()
            .starts_with("multipart/alternative")
    );
}

/// The person answers the bot's mail (`sent`): same conversation. A new subject: a new one.
async fn replies_continue_and_new_subjects_start(
    person: &Person<'_>,
    bot_address: &str,
    sink: &RecordingSink,
    first: &str,
    sent: &str,
) {
    let reply = person
        .send(
            bot_address,
            Draft {
                subject: "Re: Lunch plan".into(),
                body: "Great!\n\nOn Mon, Bot wrote:\n> Noon works.".into(),
                in_reply_to: Some(sent.to_owned()),
                references: vec![first.to_owned(), sent.to_owned()],
                ..Draft::default()
            },
        )
        .await;
    let fresh = person
        .send(
            bot_address,
            Draft {
                subject: "Invoices".into(),
                body: "Another thing".into(),
                ..Draft::default()
            },
        )
        .await;
    let stored = sink.wait_for(3).await;
    let keys: Vec<_> = stored.iter().map(|e| e.key().clone()).collect();
    assert_eq!(stored[1].event_id(), reply);
    assert_eq!(
        keys[1], keys[0],
        "a reply continues the thread's conversation"
    );
    let ChannelEvent::Message(second) = &stored[1] else {
        panic!()
    };
    assert_eq!(second.text, "Great!", "quoted history trimmed");
    assert_eq!(stored[2].event_id(), fresh);
    assert_ne!(keys[2], keys[0], "a new subject is a new conversation");
}
