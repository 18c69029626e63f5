//! Mail that must not be answered never becomes an event: a From nobody authenticated (an
//! unsigned mail, or one claiming an allowed address it was not signed for), anything
//! automatic (an auto-reply, a bounce, a mailing list), and a sender past the hourly limit.
//! Each test ends with a mail that is delivered, so "nothing was stored" is not just "not
//! yet".

use switchboard_standins::RecordingSink;

use crate::support::{Draft, Running, config, servers, state_dir};

fn draft(subject: &str) -> Draft {
    Draft {
        subject: subject.into(),
        body: "please answer".into(),
        ..Draft::default()
    }
}

#[tokio::test]
async fn a_spoofed_or_unsigned_from_gets_no_event() {
    let Some(servers) = servers() else { return };
    let (bot, alice, mallory) = (
        servers.account().await,
        servers.account().await,
        servers.account().await,
    );
    let (alice, mallory) = (servers.person(&alice), servers.person(&mallory));
    let to = format!("{}@bot.test", bot.user);
    let sink = RecordingSink::new();
    let running = Running::start(
        config(&servers, &bot, &[&alice.address]),
        &state_dir("spoof"),
        sink.clone(),
    );
    // Mallory writes as Alice, unsigned; then as Alice, signed with no key of Alice's domain
    // (the DKIM signature names people.test but the From is another domain).
    mallory
        .send(
            &to,
            Draft {
                from: Some(alice.address.clone()),
                unsigned: true,
                ..draft("spoofed")
            },
        )
        .await;
    mallory
        .send(
            &to,
            Draft {
                from: Some("ceo@bot.test".into()),
                ..draft("signed for another domain")
            },
        )
        .await;
    alice
        .send(
            &to,
            Draft {
                unsigned: true,
                ..draft("alice forgot to sign")
            },
        )
        .await;
    let real = alice.send(&to, draft("real")).await;
    let stored = sink.wait_for(1).await;
    running.stop().await;
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert_eq!(stored[0].event_id(), real);
    assert_eq!(
        sink.attempts(),
        [real],
        "the refused mails never reached the inbox"
    );
}

#[tokio::test]
async fn auto_replies_bounces_and_list_mail_get_no_event() {
    let Some(servers) = servers() else { return };
    let (bot, alice) = (servers.account().await, servers.account().await);
    let alice = servers.person(&alice);
    let to = format!("{}@bot.test", bot.user);
    let sink = RecordingSink::new();
    let running = Running::start(
        config(&servers, &bot, &[&alice.address]),
        &state_dir("loops"),
        sink.clone(),
    );
    for headers in [
        "Auto-Submitted: auto-replied\r\n",
        "Precedence: bulk\r\n",
        "List-Id: <team.lists.people.test>\r\n",
    ] {
        alice
            .send(
                &to,
                Draft {
                    extra_headers: headers.into(),
                    ..draft("automatic")
                },
            )
            .await;
    }
    alice
        .send(
            &to,
            Draft {
                from: Some("MAILER-DAEMON@people.test".into()),
                ..draft("Undelivered Mail")
            },
        )
        .await;
    let real = alice.send(&to, draft("real")).await;
    let stored = sink.wait_for(1).await;
    running.stop().await;
    assert_eq!(sink.attempts(), [real], "{stored:?}");
}

#[tokio::test]
async fn a_sender_past_the_hourly_limit_gets_no_more_events() {
    let Some(servers) = servers() else { return };
    let (bot, alice, bob) = (
        servers.account().await,
        servers.account().await,
        servers.account().await,
    );
    let (alice, bob) = (servers.person(&alice), servers.person(&bob));
    let to = format!("{}@bot.test", bot.user);
    let mut config = config(&servers, &bot, &[&alice.address, &bob.address]);
    config.max_mails_per_hour = 2;
    let sink = RecordingSink::new();
    let running = Running::start(config, &state_dir("limit"), sink.clone());
    let mut sent = Vec::new();
    for i in 0..3 {
        sent.push(alice.send(&to, draft(&format!("mail {i}"))).await);
    }
    let from_bob = bob.send(&to, draft("bob")).await;
    sink.wait_for(3).await;
    running.stop().await;
    assert_eq!(
        sink.attempts(),
        [sent[0].clone(), sent[1].clone(), from_bob]
    );
}
