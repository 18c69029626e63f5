//! Pause, not abort: when the loop guard stops a turn (the step cap, one call failing the
//! same way), the user gets a short summary and a Continue button (or "say continue" where
//! the channel has no buttons); pressing it runs on with a fresh step budget.

use serde_json::json;
use switchboard_channel::{ButtonPress, ChannelEvent, MessageRef, Place, UserRef};
use switchboard_standins::{FakeChannel, Op, Reply};

use crate::approvals::buttons_channel;
use crate::helpers::{TestApp, key, wait_inbox_idle, wait_transcript};

const THREE_STEPS: &str = "[agent]\nmax_tool_iterations = 3\n[tools]\nenabled = [\"shell\", \"file_read\"]\n[policy]\nmode = \"autonomous\"\n";

fn echo(i: usize) -> Reply {
    Reply::tool_call("shell", json!({"command": format!("echo step {i}")}))
}

#[tokio::test]
async fn an_iteration_cap_hit_shows_continue_and_pressing_it_resumes_and_finishes() {
    let app = TestApp::spawn_on(buttons_channel(), THREE_STEPS).await;
    for i in 0..3 {
        app.llm.push(echo(i));
    }
    let chat = key("cap");
    app.channel.say(&chat, "u1", "do a long job").await.unwrap();
    let t = wait_transcript(&app.channel, &chat, |t| {
        t.iter().any(|m| m.contains("paused after 3 steps"))
    })
    .await;
    assert!(
        t[0].contains("`shell` ×3"),
        "the summary says what was done: {t:?}"
    );
    let buttons = app.channel.last_buttons(&chat);
    assert_eq!(buttons.len(), 1, "{buttons:?}");
    assert!(buttons[0].label.contains("Continue"));
    wait_inbox_idle(&app.store()).await;

    // Pressing it: three more steps are allowed again; the model finishes in two.
    app.llm.push(echo(3)).push(Reply::text("All done."));
    let pause_msg = app
        .channel
        .calls()
        .into_iter()
        .rfind(|c| c.key == chat && !c.buttons.is_empty())
        .unwrap()
        .msg_id;
    let press = ButtonPress {
        key: chat.clone(),
        event_id: "press-continue-1".into(),
        user: UserRef {
            id: "u1".into(),
            name: None,
        },
        payload: buttons[0].payload.clone(),
        message: Some(MessageRef::new(pause_msg.clone())),
        reply_token: None,
        place: Place::Direct,
    };
    app.channel
        .inject(ChannelEvent::Button(press))
        .await
        .unwrap();
    let t = wait_transcript(&app.channel, &chat, |t| {
        t.last().is_some_and(|m| m == "All done.")
    })
    .await;
    assert!(
        t[0].contains("continued below"),
        "the button is taken away: {t:?}"
    );
    let last_edit = app
        .channel
        .calls()
        .into_iter()
        .rfind(|c| c.msg_id == pause_msg && c.op == Op::Edit)
        .unwrap();
    assert!(
        last_edit.buttons.is_empty(),
        "no Continue left to press twice"
    );
    assert_eq!(app.llm.requests().len(), 5);
    let resumed = app.llm.requests()[3]["messages"].to_string();
    assert!(
        resumed.contains("echo step 2") && resumed.contains("\"continue\""),
        "the resumed turn sees the paused work and the press as \"continue\""
    );
    assert!(
        app.channel
            .button_answers()
            .iter()
            .any(|a| a.contains("Continuing"))
    );
}

#[tokio::test]
async fn the_same_failing_call_pauses_with_a_summary_and_says_continue_without_buttons() {
    let app = TestApp::spawn_on(
        FakeChannel::new("fake"),
        THREE_STEPS.replace('3', "10").as_str(),
    )
    .await;
    for _ in 0..3 {
        app.llm.push(Reply::tool_call(
            "file_read",
            json!({"path": "missing.txt"}),
        ));
    }
    let chat = key("fails");
    app.channel.say(&chat, "u1", "read it").await.unwrap();
    let t = wait_transcript(&app.channel, &chat, |t| {
        t.iter().any(|m| m.contains("kept failing"))
    })
    .await;
    assert!(t[0].contains("say \"continue\""), "{t:?}");
    assert!(t[0].contains("`file_read` ×3"), "{t:?}");
    assert!(app.channel.last_buttons(&chat).is_empty());
    wait_inbox_idle(&app.store()).await;
    // Typing it works the same way as the button.
    app.llm
        .push(Reply::text("The file does not exist; create it first."));
    app.channel.say(&chat, "u1", "continue").await.unwrap();
    wait_transcript(&app.channel, &chat, |t| t.len() == 2).await;
}
