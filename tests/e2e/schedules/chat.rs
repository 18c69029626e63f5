//! The whole gateway, a stand-in channel with buttons and a scripted model, on a manual
//! clock: reminders made from a message, `/schedules`, cancelling, firing as a new message,
//! restarts and downtime; the operator's `[[schedules]]` and `switchboard schedules`.

use std::process::Command;
use std::time::Duration;

use serde_json::json;
use switchboard::clock::Clock;
use switchboard::config::OperatorJob;
use switchboard::schedule::when::rfc3339;
use switchboard_channel::ConversationKey;
use switchboard_standins::Reply;

use crate::approvals::buttons_channel;
use crate::helpers::{TestApp, WAIT, key, wait_transcript, wall_ms};

/// Let the gateway run for a moment of real time (to show nothing more happens).
async fn settle() {
    tokio::time::sleep(Duration::from_millis(300)).await;
}

/// Script the model to make a one-shot reminder due at `due`, then confirm.
fn script_reminder(app: &TestApp, prompt: &str, due: i64, confirm: &str) {
    let args = json!({"action": "create", "prompt": prompt, "at": rfc3339(due, "UTC")});
    app.llm
        .push(Reply::tool_call("schedule", args))
        .push(Reply::text(confirm));
}

async fn ask(app: &TestApp, chat: &ConversationKey, text: &str, expect_last: &str) {
    app.channel.say(chat, "alice", text).await.unwrap();
    wait_transcript(&app.channel, chat, |t| {
        t.last().is_some_and(|m| m == expect_last)
    })
    .await;
}

#[tokio::test]
async fn a_reminder_made_from_a_message_is_listed_and_fires_once_as_a_new_message() {
    let clock = Clock::manual(wall_ms());
    let mut app = TestApp::spawn_with_clock(buttons_channel(), "", clock.clone()).await;
    let chat = key("remind");
    let due = clock.now_ms() + 3_600_000;
    script_reminder(
        &app,
        "Remind them to call the bank",
        due,
        "I'll remind you in an hour.",
    );
    ask(
        &app,
        &chat,
        "remind me in an hour to call the bank",
        "I'll remind you in an hour.",
    )
    .await;
    let told = app.llm.requests()[0]["tools"].to_string();
    assert!(
        told.contains("time zone is UTC"),
        "the model is told the zone: {told}"
    );

    ask_listing(&app, &chat).await;
    let jobs = app.store().active_schedules(Some(&chat)).await.unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(
        jobs[0].job.requester, "alice",
        "fires as the person who asked"
    );
    let buttons = app.channel.last_buttons(&chat);
    assert_eq!(buttons[0].label, format!("Cancel #{}", jobs[0].id));

    app.llm.push(Reply::text("📞 Time to call the bank!"));
    clock.advance(Duration::from_secs(3599));
    settle().await;
    assert_eq!(app.llm.requests().len(), 2, "not a second early");
    let posted = app.channel.transcript(&chat).len();
    clock.advance(Duration::from_secs(1));
    let t = wait_transcript(&app.channel, &chat, |t| {
        t.last().is_some_and(|m| m == "📞 Time to call the bank!")
    })
    .await;
    assert_eq!(t.len(), posted + 1, "the answer is a new message");
    let fired = app.llm.requests()[2]["messages"].to_string();
    assert!(
        fired.contains("is due now") && fired.contains("call the bank"),
        "{fired}"
    );

    // A restart right after the fire does not fire it again.
    app.restart().await;
    clock.advance(Duration::from_secs(120));
    settle().await;
    assert_eq!(app.llm.requests().len(), 3);
    assert_eq!(app.channel.transcript(&chat).len(), posted + 1);
}

async fn ask_listing(app: &TestApp, chat: &ConversationKey) {
    app.channel.say(chat, "alice", "/schedules").await.unwrap();
    wait_transcript(&app.channel, chat, |t| {
        t.last()
            .is_some_and(|m| m.contains("Scheduled tasks in this conversation"))
    })
    .await;
}

#[tokio::test]
async fn cancelling_from_schedules_stops_a_reminder() {
    let clock = Clock::manual(wall_ms());
    let app = TestApp::spawn_with_clock(buttons_channel(), "", clock.clone()).await;
    let chat = key("cancel");
    script_reminder(&app, "Say hi", clock.now_ms() + 600_000, "Will do.");
    ask(&app, &chat, "say hi in ten minutes", "Will do.").await;
    ask_listing(&app, &chat).await;
    let cancel = app.channel.last_buttons(&chat)[0].clone();
    app.channel
        .press(&chat, "alice", &cancel.payload)
        .await
        .unwrap();
    app.channel
        .wait_until(WAIT, "the press to cancel", |_| {
            app.channel
                .button_answers()
                .iter()
                .any(|a| a.starts_with("🗑 Cancelled"))
        })
        .await;
    assert!(
        app.store()
            .active_schedules(Some(&chat))
            .await
            .unwrap()
            .is_empty()
    );
    clock.advance(Duration::from_secs(3600));
    settle().await;
    assert_eq!(
        app.llm.requests().len(),
        2,
        "a cancelled reminder never fires"
    );
    ask(
        &app,
        &chat,
        "/unschedule 99",
        "There is no active scheduled task #99 in this conversation.",
    )
    .await;
    app.channel
        .say(&chat, "alice", "/tz Europe/Paris")
        .await
        .unwrap();
    wait_transcript(&app.channel, &chat, |t| {
        t.last()
            .is_some_and(|m| m.starts_with("🕒 Time zone set to Europe/Paris"))
    })
    .await;
}

#[tokio::test]
async fn fires_missed_while_down_run_inside_the_grace_window_and_are_reported_outside_it() {
    let clock = Clock::manual(wall_ms());
    let mut app = TestApp::spawn_with_clock(buttons_channel(), "", clock.clone()).await;
    let chat = key("down");
    let now = clock.now_ms();
    let make = |prompt: &str, due: i64| {
        let args = json!({"action": "create", "prompt": prompt, "at": rfc3339(due, "UTC")});
        ("schedule".to_owned(), args)
    };
    app.llm
        .push(Reply::tool_calls(vec![
            make("Water the plants", now + 600_000),
            make("Feed the cat", now + 3_000_000),
        ]))
        .push(Reply::text("Two reminders set."));
    ask(&app, &chat, "two reminders please", "Two reminders set.").await;
    assert_eq!(
        app.store()
            .active_schedules(Some(&chat))
            .await
            .unwrap()
            .len(),
        2
    );

    app.gateway.take().unwrap().shutdown().await;
    // Down for an hour: the plants were due 50 min ago (past the 15 min grace), the cat 10.
    clock.advance(Duration::from_secs(3600));
    app.llm.push(Reply::text("🐈 Time to feed the cat."));
    app.restart().await;
    let t = wait_transcript(&app.channel, &chat, |t| {
        t.iter().any(|m| m == "🐈 Time to feed the cat.")
            && t.iter().any(|m| m.contains("While I was offline"))
    })
    .await;
    let notice = t
        .iter()
        .find(|m| m.contains("While I was offline"))
        .unwrap();
    assert!(
        notice.contains("Water the plants") && notice.contains("skipped"),
        "{notice}"
    );
    settle().await;
    assert_eq!(
        app.llm.requests().len(),
        3,
        "only the cat's fire reached the model"
    );
}

#[tokio::test]
async fn an_operator_job_runs_in_its_conversation_every_time_it_is_due() {
    let clock = Clock::manual(wall_ms());
    // `[[schedules]]` names a configured channel; the stand-in is added in code, so the
    // entry is too (the file check is covered by the CLI test below).
    let job = OperatorJob {
        name: "digest".into(),
        cron: "*/10 * * * *".into(),
        zone: Some("UTC".into()),
        channel: "fake".into(),
        chat: "ops".into(),
        thread: None,
        prompt: "Summarise the night's alerts.".into(),
    };
    let app = TestApp::builder()
        .fake(buttons_channel())
        .clock(clock.clone())
        .edit(|c| c.schedules.push(job))
        .start()
        .await;
    let (llm, channel) = (&app.llm, &app.channel);
    let ops = key("ops");
    for round in 1..=2 {
        llm.push(Reply::text(format!("Digest {round}: all quiet.")));
        clock.advance(Duration::from_secs(600));
        let want = format!("Digest {round}: all quiet.");
        wait_transcript(channel, &ops, |t| t.last().is_some_and(|m| *m == want)).await;
    }
    let asked = llm.requests()[0]["messages"].to_string();
    assert!(
        asked.contains("scheduled job \\\"digest\\\"") && asked.contains("night's alerts"),
        "{asked}"
    );
    app.shutdown().await;
}

#[test]
fn switchboard_schedules_lists_the_operator_jobs_with_their_next_run() {
    let dir = tempfile::tempdir().unwrap();
    let example = std::fs::read_to_string("config/switchboard.example.toml").unwrap();
    let file = dir.path().join("ops.toml");
    let jobs = "\n[[schedules]]\nname = \"morning-digest\"\ncron = \"0 8 * * 1-5\"\n\
                zone = \"Europe/Paris\"\nchannel = \"web\"\nchat = \"ops\"\n\
                prompt = \"Summarise the night's alerts.\"\n";
    std::fs::write(&file, format!("{example}{jobs}")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["schedules", "--config"])
        .arg(&file)
        .env_remove("DISCORD_BOT_TOKEN")
        .env_remove("SLACK_BOT_TOKEN")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("morning-digest  `0 8 * * 1-5` Europe/Paris  in web:ops  next ")
            && stdout.contains(" 08:00 CE")
            && stdout.contains("Summarise the night's alerts."),
        "{stdout}"
    );

    let bad = jobs.replace("0 8 * * 1-5", "0 25 * * *");
    std::fs::write(&file, format!("{example}{bad}")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["check", "--config"])
        .arg(&file)
        .env_remove("DISCORD_BOT_TOKEN")
        .env_remove("SLACK_BOT_TOKEN")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("key `schedules`") && stderr.contains("morning-digest"),
        "{stderr}"
    );
}
