//! The send side against the real Postfix: a 4xx is transient (retried by the core), a 5xx
//! fatal and visible in `/readyz`; files both ways byte for byte; an approval prompt decided
//! by a reply's first line, after a restart too; `check --probe` reports both servers.

use switchboard_channel::{
    Button, Channel, ChannelError, ChannelEvent, ConversationKey, Outbound, OutboundFile,
};
use switchboard_standins::RecordingSink;

use crate::support::{Draft, Person, Running, config, servers, state_dir};

#[tokio::test]
async fn a_4xx_is_transient_and_a_5xx_is_fatal_and_visible() {
    let Some(servers) = servers() else { return };
    let bot = servers.account().await;
    let channel = switchboard_email::EmailChannel::new(
        "mail",
        config(&servers, &bot, &[]),
        state_dir("smtp-failures"),
    )
    .unwrap();
    let to = |who: &str| {
        ConversationKey::new("mail", format!("{who}@people.test")).in_thread("t1@people.test")
    };
    let err = channel
        .send(&to("tempfail1"), &Outbound::text("hi"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, ChannelError::Transient(ref e) if e.contains("451")),
        "{err:?}"
    );
    assert!(!channel.health().detail.contains("refused"));
    let err = channel
        .send(&to("permfail1"), &Outbound::text("hi"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, ChannelError::Fatal(ref e) if e.contains("550")),
        "{err:?}"
    );
    assert!(
        channel.health().detail.contains("550"),
        "{}",
        channel.health().detail
    );
}

#[tokio::test]
async fn files_travel_both_ways_byte_for_byte() {
    let Some(servers) = servers() else { return };
    let (bot, alice) = (servers.account().await, servers.account().await);
    let person = servers.person(&alice);
    let sink = RecordingSink::new();
    let running = Running::start(
        config(&servers, &bot, &[&person.address]),
        &state_dir("files"),
        sink.clone(),
    );
    let bytes: Vec<u8> = (0..70_000u32).map(|i| (i * 7 % 256) as u8).collect();
    person
        .send(
            &format!("{}@bot.test", bot.user),
            Draft {
                subject: "invoice".into(),
                body: "attached".into(),
                attachment: Some(("invoice.bin".into(), bytes.clone())),
                ..Draft::default()
            },
        )
        .await;
    let stored = sink.wait_for(1).await;
    let ChannelEvent::Message(message) = &stored[0] else {
        panic!()
    };
    assert_eq!(message.attachments.len(), 1);
    let file = &message.attachments[0];
    assert_eq!(file.name, "invoice.bin");
    let channel = &running.channel;
    assert_eq!(
        channel.download(file, 1 << 20).await.unwrap(),
        bytes,
        "in, byte for byte"
    );
    assert!(
        channel.download(file, 1000).await.is_err(),
        "over the cap is refused"
    );

    files_go_out_attached_to_the_answer(channel, &person, &message.key).await;
    running.stop().await;
}

/// A file the turn posts arrives attached to its answer, byte for byte.
async fn files_go_out_attached_to_the_answer(
    channel: &switchboard_email::EmailChannel,
    person: &Person<'_>,
    key: &ConversationKey,
) {
    let out: Vec<u8> = (0..50_000u32).map(|i| (i * 13 % 251) as u8).collect();
    let outbound = OutboundFile {
        name: "report.bin".into(),
        bytes: out.clone(),
        mime: Some("application/octet-stream".into()),
        caption: String::new(),
    };
    channel.send_file(key, &outbound).await.unwrap();
    channel
        .send(key, &Outbound::text("Here it is."))
        .await
        .unwrap();
    let inbox = person.wait_inbox(1).await;
    let parsed = mail_parser::MessageParser::default()
        .parse(inbox[0].as_slice())
        .unwrap();
    let attached = parsed.attachment(0).expect("the file is attached");
    assert_eq!(
        mail_parser::MimeHeaders::attachment_name(attached),
        Some("report.bin")
    );
    assert_eq!(attached.contents(), out.as_slice(), "out, byte for byte");
    assert!(parsed.body_text(0).unwrap().contains("Here it is."));
}

#[tokio::test]
async fn a_reply_decides_an_approval_prompt_also_after_a_restart() {
    let Some(servers) = servers() else { return };
    let (bot, alice) = (servers.account().await, servers.account().await);
    let person = servers.person(&alice);
    let to = format!("{}@bot.test", bot.user);
    let (sink, dir) = (RecordingSink::new(), state_dir("approval"));
    let config = config(&servers, &bot, &[&person.address]);
    let running = Running::start(config.clone(), &dir, sink.clone());
    let first = person
        .send(
            &to,
            Draft {
                subject: "clean up".into(),
                body: "delete the logs".into(),
                ..Draft::default()
            },
        )
        .await;
    let stored = sink.wait_for(1).await;
    let key = stored[0].key().clone();
    let prompt_ref = prompt(&running.channel, &key, &person).await;
    running.stop().await;

    // Restarted; the reply's first line decides, the rest is ignored for the decision.
    let running = Running::start(config, &dir, sink.clone());
    let reply = person
        .send(
            &to,
            Draft {
                subject: "Re: clean up".into(),
                body: "Approve\n\nbut deny the next one\n\nOn Mon, bot wrote:\n> Run it?".into(),
                in_reply_to: Some(prompt_ref.id.clone()),
                references: vec![first, prompt_ref.id.clone()],
                ..Draft::default()
            },
        )
        .await;
    let stored = sink.wait_for(2).await;
    running.stop().await;
    let ChannelEvent::Button(press) = &stored[1] else {
        panic!("a press: {stored:?}")
    };
    assert_eq!(press.event_id, reply);
    assert_eq!(press.payload, "approval:0");
    assert_eq!(press.key, key);
    assert_eq!(
        press.message.as_ref().map(|m| m.id.as_str()),
        Some(prompt_ref.id.as_str())
    );
}

/// Mail the approval prompt in `key`'s thread; the person sees its choices named.
async fn prompt(
    channel: &switchboard_email::EmailChannel,
    key: &ConversationKey,
    person: &Person<'_>,
) -> switchboard_channel::MessageRef {
    let buttons = ["Approve once", "Always allow", "Deny"]
        .iter()
        .enumerate()
        .map(|(i, label)| Button {
            label: (*label).into(),
            payload: format!("approval:{i}"),
        })
        .collect();
    let prompt = Outbound {
        text: "Run `rm -r logs`?".into(),
        buttons,
    };
    let prompt_ref = channel.send(key, &prompt).await.unwrap();
    let inbox = person.wait_inbox(1).await;
    let text = mail_parser::MessageParser::default()
        .parse(inbox[0].as_slice())
        .unwrap();
    let text = text.body_text(0).unwrap().into_owned();
    assert!(
        text.contains("**approve**") && text.contains("**deny**"),
        "the choices are named: {text}"
    );
    prompt_ref
}

#[tokio::test]
async fn the_probe_reports_both_servers() {
    let Some(servers) = servers() else { return };
    let bot = servers.account().await;
    let channel = switchboard_email::EmailChannel::new(
        "mail",
        config(&servers, &bot, &[]),
        state_dir("probe"),
    )
    .unwrap();
    let report = channel.probe().await.expect("both servers answer");
    assert!(
        report.contains("IMAP 127.0.0.1 logged in") && report.contains("(IDLE)"),
        "{report}"
    );
    assert!(
        report.contains("SMTP 127.0.0.1 accepted the login"),
        "{report}"
    );
    let mut wrong = config(&servers, &bot, &[]);
    wrong.imap.password = switchboard_channel::Secret::new("wrong");
    let channel =
        switchboard_email::EmailChannel::new("mail", wrong, state_dir("probe-wrong")).unwrap();
    let err = channel.probe().await.unwrap_err();
    assert!(err.contains("login refused"), "{err}");
}
