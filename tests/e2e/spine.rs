//! The spine end to end: message in → streamed draft → final answer → history stored, and the
//! promises around it (dedup, restart, ordering, concurrency, limits).

use std::sync::Arc;
use std::time::Duration;

use switchboard::provider::Role;
use switchboard_channel::{ChannelError, Delivery, LengthUnit, Limits};
use switchboard_standins::{FakeChannel, Op, Reply};

use switchboard::clock::Clock;

use crate::helpers::{TestApp, WAIT, key, wait_inbox_idle, wait_transcript, wall_ms};

fn long_answer() -> String {
    (1..=30)
        .map(|i| format!("Sentence number {i} of a long streamed answer. "))
        .collect()
}

#[tokio::test]
async fn a_message_streams_into_one_edited_draft_and_the_history_is_stored() {
    let app = TestApp::spawn().await;
    let answer = long_answer();
    app.llm
        .push(Reply::paced(answer.clone(), 25, Duration::from_millis(15)));
    let chat = key("c1");
    assert_eq!(
        app.channel
            .say(&chat, "u1", "tell me a story")
            .await
            .unwrap(),
        Delivery::Stored
    );

    wait_transcript(&app.channel, &chat, |t| {
        t == [answer.trim_end()] || t == [answer.as_str()]
    })
    .await;
    let writes = app.channel.writes();
    assert_eq!(
        writes.iter().filter(|c| c.op == Op::Send).count(),
        1,
        "one message, edited in place"
    );
    assert!(
        writes.iter().filter(|c| c.op == Op::Edit).count() >= 2,
        "the draft grew while streaming: {writes:#?}"
    );

    wait_inbox_idle(&app.store()).await;
    let history = app.store().history(&chat, 10).await.unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(
        (history[0].role, history[0].content.as_str()),
        (Role::User, "tell me a story")
    );
    assert_eq!(history[1].role, Role::Assistant);
    assert_eq!(history[1].content, answer);
}

#[tokio::test]
async fn draft_edits_respect_the_minimum_interval_and_chunk_size() {
    let app = TestApp::spawn_with("").await;
    app.llm
        .push(Reply::paced(long_answer(), 5, Duration::from_millis(5)));
    let chat = key("pace");
    app.channel.say(&chat, "u1", "go").await.unwrap();
    wait_inbox_idle(&app.store()).await;
    let writes: Vec<_> = app.channel.writes();
    // Every intermediate edit waited 50 ms after the previous write (the final one may not).
    for pair in writes[..writes.len() - 1].windows(2) {
        assert!(
            pair[1].at - pair[0].at >= Duration::from_millis(45),
            "edits too close: {pair:#?}"
        );
    }
    // Every intermediate edit carried at least chunk_min_chars (20) new characters, so the
    // 5-character chunks were coalesced rather than sent one by one.
    for pair in writes[..writes.len() - 1].windows(2) {
        let grown = pair[1]
            .text
            .chars()
            .count()
            .saturating_sub(pair[0].text.chars().count());
        assert!(
            grown >= 20,
            "an edit with only {grown} new characters: {pair:#?}"
        );
    }
}

#[tokio::test]
async fn a_redelivered_event_is_answered_once() {
    let app = TestApp::spawn().await;
    let chat = key("dup");
    assert_eq!(
        app.channel
            .say_with_id(&chat, "u1", "hello", "evt-1")
            .await
            .unwrap(),
        Delivery::Stored
    );
    assert_eq!(
        app.channel
            .say_with_id(&chat, "u1", "hello", "evt-1")
            .await
            .unwrap(),
        Delivery::Duplicate
    );
    wait_transcript(&app.channel, &chat, |t| t.len() == 1).await;
    wait_inbox_idle(&app.store()).await;
    assert_eq!(app.llm.requests().len(), 1);
    assert_eq!(app.channel.transcript(&chat), vec!["You said: hello"]);
}

#[tokio::test]
async fn messages_in_one_conversation_are_answered_in_order_with_history() {
    let app = TestApp::spawn().await;
    let chat = key("order");
    for text in ["one", "two", "three"] {
        app.channel.say(&chat, "u1", text).await.unwrap();
    }
    let transcript = wait_transcript(&app.channel, &chat, |t| {
        t.last().is_some_and(|l| l == "You said: three")
    })
    .await;
    assert_eq!(
        transcript,
        vec!["You said: one", "You said: two", "You said: three"]
    );
    assert_eq!(
        app.llm.max_in_flight(),
        1,
        "one turn at a time per conversation"
    );
    let third = &app.llm.requests()[2];
    let contents: Vec<&str> = third["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(
        contents.contains(&"one") && contents.contains(&"You said: two"),
        "{contents:?}"
    );
}

#[tokio::test]
async fn two_conversations_are_answered_concurrently() {
    let app = TestApp::spawn().await;
    for _ in 0..2 {
        app.llm.push(Reply::Stream {
            text: "slow answer".into(),
            tool_calls: vec![],
            chunk_chars: 4,
            first_delay: Duration::from_millis(400),
            delay: Duration::ZERO,
            max_tokens: false,
        });
    }
    app.channel.say(&key("a"), "u1", "hi").await.unwrap();
    app.channel.say(&key("b"), "u2", "hi").await.unwrap();
    wait_transcript(&app.channel, &key("a"), |t| t == ["slow answer"]).await;
    wait_transcript(&app.channel, &key("b"), |t| t == ["slow answer"]).await;
    assert_eq!(app.llm.max_in_flight(), 2);
}

#[tokio::test]
async fn a_gateway_killed_mid_turn_answers_exactly_once_after_restart() {
    let mut app = TestApp::builder().killable().start().await;
    let channel = Arc::clone(&app.channel);
    let slow = long_answer();
    app.llm
        .push(Reply::paced(slow.clone(), 10, Duration::from_millis(40)));
    let chat = key("crash");
    channel.say(&chat, "u1", "long please").await.unwrap();
    // Killed after the draft was posted and edited, before the answer finished.
    channel
        .wait_until(WAIT, "a draft edit", |c| c.iter().any(|c| c.op == Op::Edit))
        .await;
    app.kill();

    app.llm.push(Reply::text(slow.clone()));
    app.start().await;
    let transcript = wait_transcript(&channel, &chat, |t| t.len() == 1 && t[0] == slow).await;
    assert_eq!(
        transcript.len(),
        1,
        "the restarted turn edits the draft it already posted"
    );
    wait_inbox_idle(&app.store()).await;
    assert_eq!(
        channel.writes().iter().filter(|c| c.op == Op::Send).count(),
        1
    );
    let history = app.store().history(&chat, 10).await.unwrap();
    assert_eq!(
        history.len(),
        2,
        "user + assistant stored once: {history:#?}"
    );
    app.shutdown().await;
}

#[tokio::test]
async fn an_event_held_by_a_dead_replica_is_taken_over_once_its_lease_runs_out() {
    // Both replicas read one manual clock; nothing waits for the 600 s lease in real time.
    let clock = Clock::manual(wall_ms());
    let mut app = TestApp::builder()
        .clock(clock.clone())
        .edit(|c| c.gateway.instance_id = Some("a".into()))
        .killable()
        .start()
        .await;
    let channel = Arc::clone(&app.channel);
    app.llm.push(Reply::Stall(Duration::from_secs(30)));
    let chat = key("lease");
    channel.say(&chat, "u1", "are you there").await.unwrap();
    // Replica a claimed the event.
    channel
        .wait_until(WAIT, "typing", |c| c.iter().any(|c| c.op == Op::Typing))
        .await;
    app.kill();
    app.config.gateway.instance_id = Some("b".into());
    app.start().await;
    let registry = app.gateway().registry();
    assert_eq!(registry.sweep().await.unwrap(), 0, "a's lease still holds");
    clock.advance(Duration::from_secs(599));
    assert_eq!(registry.sweep().await.unwrap(), 0, "one second left");
    clock.advance(Duration::from_secs(2));
    assert_eq!(registry.sweep().await.unwrap(), 1, "the lease ran out");
    wait_transcript(&channel, &chat, |t| t == ["You said: are you there"]).await;
    wait_inbox_idle(&app.store()).await;
    app.shutdown().await;
}

#[tokio::test]
async fn a_graceful_shutdown_leaves_unfinished_events_for_the_next_start() {
    let mut app = TestApp::spawn().await;
    app.llm.push(Reply::Stall(Duration::from_secs(30)));
    let chat = key("grace");
    app.channel.say(&chat, "u1", "are you there").await.unwrap();
    app.channel
        .wait_until(WAIT, "typing", |c| c.iter().any(|c| c.op == Op::Typing))
        .await;
    app.restart().await; // grace is 1 s; the stalled turn is handed back, then resumed
    wait_transcript(&app.channel, &chat, |t| t == ["You said: are you there"]).await;
    wait_inbox_idle(&app.store()).await;
}

#[tokio::test]
async fn a_long_answer_is_split_to_the_limit_with_code_fences_intact() {
    let limits = Limits {
        max_message_len: 300,
        length_unit: LengthUnit::Chars,
        min_edit_interval: Duration::ZERO,
        ..Limits::default()
    };
    let app = TestApp::spawn_on(FakeChannel::with_limits("fake", limits, None), "").await;
    let code: String = (0..40).map(|i| format!("let value_{i} = {i};\n")).collect();
    let answer = format!("Here you go:\n\n```rust\n{code}```\n\nThat is all.");
    app.llm
        .push(Reply::paced(answer, 40, Duration::from_millis(2)));
    let chat = key("split");
    app.channel.say(&chat, "u1", "code").await.unwrap();
    wait_inbox_idle(&app.store()).await;
    let transcript = app.channel.transcript(&chat);
    assert!(transcript.len() >= 3, "{transcript:#?}");
    for part in &transcript {
        assert!(part.chars().count() <= 300);
        assert_eq!(
            part.matches("```").count() % 2,
            0,
            "fence left open in {part:?}"
        );
    }
    let lines: usize = transcript
        .iter()
        .map(|p| p.lines().filter(|l| l.starts_with("let value_")).count())
        .sum();
    assert_eq!(lines, 40);
    assert!(
        app.channel.writes().iter().all(|c| !c.refused),
        "nothing was too long"
    );
}

#[tokio::test]
async fn a_rate_limited_final_edit_is_retried_until_delivered() {
    let app = TestApp::spawn().await;
    app.llm.push(Reply::text("short answer"));
    app.channel.fail_next([
        ChannelError::RateLimited {
            retry_after: Duration::from_millis(100),
        },
        ChannelError::RateLimited {
            retry_after: Duration::from_millis(100),
        },
        ChannelError::Transient("502".into()),
    ]);
    let chat = key("429");
    app.channel.say(&chat, "u1", "hi").await.unwrap();
    wait_transcript(&app.channel, &chat, |t| t == ["short answer"]).await;
}

#[tokio::test]
async fn an_llm_failure_tells_the_user_briefly_with_a_trace_id() {
    let app = TestApp::spawn().await;
    for _ in 0..3 {
        app.llm.push(Reply::Status(500, None));
    }
    let chat = key("err");
    app.channel.say(&chat, "u1", "hi").await.unwrap();
    let transcript = wait_transcript(&app.channel, &chat, |t| t.len() == 1).await;
    assert!(transcript[0].contains("(trace "), "{transcript:?}");
    assert!(!transcript[0].contains("500"), "details stay in the log");
    assert_eq!(app.llm.requests().len(), 3, "max_retries = 2");
}

#[tokio::test]
async fn slash_new_forgets_the_conversation_history() {
    let app = TestApp::spawn().await;
    let chat = key("new");
    app.channel.say(&chat, "u1", "remember me").await.unwrap();
    app.channel.say(&chat, "u1", "/new").await.unwrap();
    app.channel.say(&chat, "u1", "who am i").await.unwrap();
    wait_transcript(&app.channel, &chat, |t| t.len() == 3).await;
    let last = app.llm.requests().pop().unwrap();
    let text = last["messages"].to_string();
    assert!(!text.contains("remember me"), "{text}");
    assert_eq!(
        app.llm.requests().len(),
        2,
        "/new is answered by the gateway"
    );
}

#[tokio::test]
async fn slash_stop_cancels_the_running_turn_and_keeps_the_partial_answer() {
    let app = TestApp::spawn().await;
    app.llm.push(Reply::paced(
        "partial words ".repeat(200),
        14,
        Duration::from_millis(50),
    ));
    let chat = key("stop");
    app.channel.say(&chat, "u1", "talk a lot").await.unwrap();
    app.channel
        .wait_until(WAIT, "a send", |c| c.iter().any(|c| c.op == Op::Send))
        .await;
    app.channel.say(&chat, "u1", "/stop").await.unwrap();
    let transcript = wait_transcript(&app.channel, &chat, |t| t.len() == 2).await;
    assert!(
        transcript[0].contains("partial words") && transcript[0].ends_with("_(stopped)_"),
        "{transcript:?}"
    );
    assert_eq!(transcript[1], "⏹ Stopped.");
}

#[tokio::test]
async fn the_health_endpoint_answers_and_readiness_checks_the_database() {
    let app = TestApp::spawn().await;
    let base = format!("http://{}", app.gateway().addr());
    let health = reqwest::get(format!("{base}/healthz")).await.unwrap();
    assert_eq!(health.status(), 200);
    let ready = reqwest::get(format!("{base}/readyz")).await.unwrap();
    assert_eq!(ready.status(), 200);
    let body: serde_json::Value = ready.json().await.unwrap();
    assert_eq!(body["checks"][0]["name"], "database");
}
