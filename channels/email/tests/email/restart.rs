//! The cursor across restarts and mailbox changes: a mail stored before a stop is not
//! delivered again, a mail that arrived while the channel was down is delivered after, a
//! UIDVALIDITY change re-reads without storing anything twice, and a server without IDLE
//! is polled.

use std::process::Command;

use switchboard_standins::RecordingSink;

use crate::support::{Draft, Running, config, servers, state_dir};

fn draft(subject: &str) -> Draft {
    Draft {
        subject: subject.into(),
        body: "hello".into(),
        ..Draft::default()
    }
}

#[tokio::test]
async fn a_mail_that_arrives_while_down_is_delivered_after_a_restart_and_none_twice() {
    let Some(servers) = servers() else { return };
    let (bot, alice) = (servers.account().await, servers.account().await);
    let alice = servers.person(&alice);
    let to = format!("{}@bot.test", bot.user);
    let (sink, dir) = (RecordingSink::new(), state_dir("restart"));
    let config = config(&servers, &bot, &[&alice.address]);

    let running = Running::start(config.clone(), &dir, sink.clone());
    let before = alice.send(&to, draft("before")).await;
    sink.wait_for(1).await;
    running.stop().await;

    let during = alice.send(&to, draft("while down")).await;
    // Wait until the server holds it, so the restart finds it in the mailbox.
    switchboard_standins::eventually(
        std::time::Duration::from_secs(30),
        "delivered to the bot's mailbox",
        async || {
            let n = servers.inbox(&bot.user).await.len();
            if n == 2 { Ok(()) } else { Err(n) }
        },
    )
    .await;
    let running = Running::start(config, &dir, sink.clone());
    let after = alice.send(&to, draft("after")).await;
    sink.wait_for(3).await;
    running.stop().await;
    assert_eq!(
        sink.attempts(),
        [before, during, after],
        "each handed to the inbox once"
    );
}

#[tokio::test]
async fn a_uidvalidity_change_stores_nothing_twice() {
    let Some(servers) = servers() else { return };
    let (bot, alice) = (servers.account().await, servers.account().await);
    let alice = servers.person(&alice);
    let to = format!("{}@bot.test", bot.user);
    let (sink, dir) = (RecordingSink::new(), state_dir("uidvalidity"));
    let config = config(&servers, &bot, &[&alice.address]);
    let running = Running::start(config.clone(), &dir, sink.clone());
    let first = alice.send(&to, draft("first")).await;
    sink.wait_for(1).await;
    running.stop().await;

    // The server rebuilds the mailbox's UIDs (as after a restore or a migration); a value
    // of this run's own, as the account may have had another one set before.
    let validity = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        .to_string();
    let status = Command::new("doveadm")
        .arg("-c")
        .arg(servers.dir.join("dovecot/dovecot.conf"))
        .args([
            "mailbox",
            "update",
            "--uid-validity",
            &validity,
            "-u",
            &bot.user,
            "INBOX",
        ])
        .status()
        .expect("doveadm runs");
    assert!(status.success());
    // And the first mail unread again, as a restore that lost the flags: the re-read finds it.
    servers.mark_unread(&bot.user).await;
    let second = alice.send(&to, draft("second")).await;
    let running = Running::start(config, &dir, sink.clone());
    sink.wait_for(2).await;
    running.stop().await;
    let stored: Vec<String> = sink
        .stored()
        .iter()
        .map(|e| e.event_id().to_owned())
        .collect();
    assert_eq!(
        sink.attempts_for(&first),
        2,
        "the change re-read the first mail"
    );
    assert_eq!(stored, [first, second], "and the inbox stored it once");
}

#[tokio::test]
async fn a_server_without_idle_is_polled() {
    let Some(servers) = servers() else { return };
    let (bot, alice) = (servers.account().await, servers.account().await);
    let alice = servers.person(&alice);
    let to = format!("{}@bot.test", bot.user);
    let mut config = config(&servers, &bot, &[&alice.address]);
    // Dovecot's listener on 127.0.0.2 leaves IDLE out of its capabilities.
    config.imap.host = "127.0.0.2".into();
    config.poll_interval_secs = 1;
    let channel =
        switchboard_email::EmailChannel::new("mail", config.clone(), state_dir("noidle-probe"))
            .unwrap();
    let probe = channel.probe().await.expect("probe");
    assert!(probe.contains("no IDLE: polled"), "{probe}");
    let sink = RecordingSink::new();
    let running = Running::start(config, &state_dir("noidle"), sink.clone());
    // Two mails some polls apart: each found by a later look.
    let one = alice.send(&to, draft("one")).await;
    sink.wait_for(1).await;
    let two = alice.send(&to, draft("two")).await;
    sink.wait_for(2).await;
    running.stop().await;
    assert_eq!(sink.attempts(), [one, two]);
}
