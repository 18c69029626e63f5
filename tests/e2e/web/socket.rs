//! The web chat's WebSocket protocol without a browser: limits, tokens, dedup, resync and
//! history across a restart.

use std::time::Duration;

use futures::SinkExt;
use serde_json::{Value, json};
use switchboard::channels;
use switchboard_channel::{Button, Outbound};
use switchboard_standins::Reply;
use tokio_tungstenite::tungstenite::{self, Message};

use super::{
    Door, close_frame, connect, json_where, new_session, next_json, say, spawn, try_connect,
    web_key,
};
use crate::helpers::{test_config, wait_inbox_idle};

fn ids(sync: &Value) -> Vec<String> {
    sync["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect()
}

fn is_final_answer(frame: &Value, text: &str) -> bool {
    matches!(frame["type"].as_str(), Some("send" | "edit"))
        && frame["message"]["role"] == "bot"
        && frame["message"]["html"]
            .as_str()
            .unwrap_or_default()
            .contains(text)
}

#[tokio::test]
async fn a_message_over_the_size_limit_closes_the_socket_with_1009_and_a_reason() {
    let app = spawn("max_message_chars = 50").await;
    let (mut ws, sync) = connect(&Door::of(&app), &new_session()).await;
    assert_eq!(sync["max_message_chars"], 50);
    say(&mut ws, "m1", &"x".repeat(51)).await;
    let (code, reason) = close_frame(&mut ws).await;
    assert_eq!(code, 1009);
    assert_eq!(reason, "message too long: 51 characters, the limit is 50");
    assert!(app.llm.requests().is_empty(), "nothing reached the model");
    app.shutdown().await;
}

#[tokio::test]
async fn malformed_and_binary_frames_close_the_socket_with_1008() {
    let app = spawn("").await;
    let session = new_session();
    let (mut ws, _) = connect(&Door::of(&app), &session).await;
    ws.send(Message::Text("{\"type\":\"shout\"}".into()))
        .await
        .unwrap();
    let (code, reason) = close_frame(&mut ws).await;
    assert_eq!(code, 1008);
    assert!(reason.starts_with("bad frame"), "{reason}");
    let (mut ws, _) = connect(&Door::of(&app), &session).await;
    ws.send(Message::Binary(vec![1, 2, 3].into()))
        .await
        .unwrap();
    assert_eq!(
        close_frame(&mut ws).await,
        (1008, "bad frame: binary frames are not accepted".into())
    );
    app.shutdown().await;
}

#[tokio::test]
async fn messages_past_the_rate_limit_are_refused_and_a_client_that_keeps_on_is_closed() {
    let app = spawn("max_messages_per_minute = 3").await;
    let session = new_session();
    let (mut ws, _) = connect(&Door::of(&app), &session).await;
    for i in 0..3 {
        let id = format!("ok-{i}");
        say(&mut ws, &id, "hello").await;
        json_where(&mut ws, |f| f["type"] == "ack" && f["id"] == id.as_str()).await;
    }
    say(&mut ws, "over-0", "hello").await;
    let refused = json_where(&mut ws, |f| f["type"] == "refused").await;
    assert_eq!(refused["id"], "over-0");
    let reason = refused["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("Slow down: at most 3 messages a minute"),
        "{reason}"
    );

    // A new socket of the same session does not get a fresh budget.
    let (mut second, _) = connect(&Door::of(&app), &session).await;
    say(&mut second, "over-1", "hello").await;
    let refused = json_where(&mut second, |f| f["type"] == "refused").await;
    assert_eq!(refused["id"], "over-1");
    drop(second);

    for i in 2..=4 {
        say(&mut ws, &format!("over-{i}"), "hello").await;
    }
    let (code, reason) = close_frame(&mut ws).await;
    assert_eq!(code, 1008);
    assert_eq!(reason, "rate limit exceeded: at most 3 messages a minute");
    wait_inbox_idle(&app.store()).await;
    assert_eq!(
        app.llm.requests().len(),
        3,
        "only admitted messages reached the model"
    );
    app.shutdown().await;
}

#[tokio::test]
async fn a_wrong_or_missing_token_gets_401_and_the_right_one_by_query_or_cookie_connects() {
    let app = spawn("access_token = \"tok-web-test\"").await;
    let (addr, session) = (app.addr(), new_session());
    let door = Door::bare(addr);
    for query in ["", "?token=wrong", "?token=tok-web-tes"] {
        match try_connect(&door, &session, query).await {
            Err(tungstenite::Error::Http(response)) => {
                assert_eq!(response.status().as_u16(), 401, "{query:?}");
            }
            other => panic!("{query:?} should be refused, got {:?}", other.map(|_| ())),
        }
    }
    assert!(
        try_connect(&door, &session, "?token=tok-web-test")
            .await
            .is_ok()
    );

    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let page = http.get(format!("http://{addr}/")).send().await.unwrap();
    assert_eq!(page.status().as_u16(), 401);
    let page = http
        .get(format!("http://{addr}/?token=tok-web-test"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        page.status().as_u16(),
        303,
        "the token leaves the address bar"
    );
    let cookies: Vec<&str> = page
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    let token_cookie = cookies
        .iter()
        .find(|c| c.starts_with("sb_web_token="))
        .expect("a token cookie");
    assert!(token_cookie.contains("HttpOnly") && token_cookie.contains("SameSite=Strict"));

    let mut request =
        tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(format!(
            "ws://{addr}/ws"
        ))
        .unwrap();
    let jar = format!("sb_web_session={session}; sb_web_token=tok-web-test");
    request.headers_mut().insert("cookie", jar.parse().unwrap());
    assert!(tokio_tungstenite::connect_async(request).await.is_ok());
    app.shutdown().await;
}

#[tokio::test]
async fn a_foreign_origin_is_refused_and_a_listed_one_connects() {
    let app = spawn("allowed_origins = [\"https://chat.example\"]").await;
    let addr = app.addr();
    for (origin, allowed) in [
        ("https://evil.example", false),
        ("https://chat.example", true),
        (&*format!("http://{addr}"), true),
    ] {
        let mut request =
            tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(
                format!("ws://{addr}/ws"),
            )
            .unwrap();
        let headers = request.headers_mut();
        let cookie = Door::of(&app).cookie(Some(&new_session()));
        headers.insert("cookie", cookie.parse().unwrap());
        headers.insert("origin", origin.parse().unwrap());
        match tokio_tungstenite::connect_async(request).await {
            Ok(_) => assert!(allowed, "{origin} should be refused"),
            Err(tungstenite::Error::Http(response)) => {
                assert!(!allowed, "{origin} should connect");
                assert_eq!(response.status().as_u16(), 403);
            }
            Err(other) => panic!("{origin}: {other}"),
        }
    }
    app.shutdown().await;
}

#[tokio::test]
async fn a_public_listen_address_without_an_access_token_gets_a_generated_one_in_data_dir() {
    use std::os::unix::fs::PermissionsExt;
    let llm = switchboard_standins::FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let web = "[channels.web]\nkind = \"web\"\n";
    let mut config = test_config(&llm.openai_url(), dir.path(), web);
    config.gateway.listen = switchboard::config::EnvString("0.0.0.0:8080".into());
    channels::from_config(&config).expect("builds with a generated token");
    let stored = dir.path().join("web/web.token");
    let token = std::fs::read_to_string(&stored).unwrap();
    assert_eq!(token.trim().len(), 64, "256 random bits in hex");
    let mode = std::fs::metadata(&stored).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    channels::from_config(&config).unwrap();
    let again = std::fs::read_to_string(&stored).unwrap();
    assert_eq!(again, token, "a second build reuses it");
}

#[test]
fn the_example_config_serves_the_web_chat_on_loopback_behind_a_generated_token() {
    let example = include_str!("../../../config/switchboard.example.toml");
    let mut config = switchboard::config::parse(example, "example", &[]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    config.gateway.data_dir = dir.path().to_owned();
    let built = channels::from_config(&config).expect("the example builds");
    let names: Vec<&str> = built.iter().map(|c| c.name()).collect();
    assert!(names.contains(&"web"), "{names:?}");
    let token = std::fs::read_to_string(dir.path().join("web/web.token")).unwrap();
    assert_eq!(token.trim().len(), 64, "on loopback too: {token:?}");
}

#[tokio::test]
async fn a_message_resent_after_a_reconnect_is_stored_shown_and_answered_once() {
    let app = spawn("").await;
    let session = new_session();
    let (mut ws, _) = connect(&Door::of(&app), &session).await;
    say(&mut ws, "resend-1", "only once please").await;
    json_where(&mut ws, |f| f["type"] == "ack").await;
    drop(ws);

    let (mut ws, _) = connect(&Door::of(&app), &session).await;
    say(&mut ws, "resend-1", "only once please").await;
    let ack = json_where(&mut ws, |f| f["type"] == "ack").await;
    assert_eq!(ack["id"], "resend-1");
    wait_inbox_idle(&app.store()).await;
    assert_eq!(
        app.llm.requests().len(),
        1,
        "the resend was dropped by the inbox"
    );

    let (_, sync) = connect(&Door::of(&app), &session).await;
    let shown = ids(&sync);
    assert_eq!(shown.len(), 2, "one question, one answer: {shown:?}");
    assert_eq!(shown[0], "u-resend-1");
    let answer = &sync["messages"][1]["html"];
    assert_eq!(answer, "<p>You said: only once please</p>");
    app.shutdown().await;
}

#[tokio::test]
async fn a_tab_reconnecting_mid_answer_gets_the_current_draft_once_by_id() {
    let app = spawn("").await;
    let answer: String = (1..=30)
        .map(|i| format!("Sentence {i} of a long answer. "))
        .collect();
    app.llm
        .push(Reply::paced(answer.clone(), 12, Duration::from_millis(40)));
    let session = new_session();
    let (mut ws, _) = connect(&Door::of(&app), &session).await;
    say(&mut ws, "q1", "tell me a lot").await;
    let draft = json_where(&mut ws, |f| {
        f["type"] == "send" && f["message"]["role"] == "bot"
    })
    .await;
    let draft_id = draft["message"]["id"].as_str().unwrap().to_owned();
    drop(ws);

    let (mut ws, sync) = connect(&Door::of(&app), &session).await;
    assert_eq!(ids(&sync), ["u-q1".to_owned(), draft_id.clone()]);
    let partial = sync["messages"][1]["html"].as_str().unwrap();
    assert!(
        !partial.contains("Sentence 30"),
        "still streaming: {partial}"
    );
    let last = answer.trim_end();
    let done = json_where(&mut ws, |f| {
        is_final_answer(f, "Sentence 30 of a long answer.")
    })
    .await;
    assert_eq!(done["type"], "edit", "the draft is finished in place");
    assert_eq!(done["message"]["id"], draft_id.as_str());

    let (_, sync) = connect(&Door::of(&app), &session).await;
    assert_eq!(ids(&sync), ["u-q1".to_owned(), draft_id]);
    let html = sync["messages"][1]["html"].as_str().unwrap();
    assert_eq!(html, format!("<p>{last}</p>"));
    app.shutdown().await;
}

#[tokio::test]
async fn history_survives_a_gateway_restart() {
    let mut app = spawn("").await;
    let session = new_session();
    let (mut ws, _) = connect(&Door::of(&app), &session).await;
    say(&mut ws, "before", "remember me").await;
    json_where(&mut ws, |f| is_final_answer(f, "You said: remember me")).await;
    wait_inbox_idle(&app.store()).await;

    app.restart().await;
    let (_, sync) = connect(&Door::of(&app), &session).await;
    let messages = sync["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{sync}");
    assert_eq!(messages[0]["html"], "<p class=\"typed\">remember me</p>");
    assert_eq!(messages[1]["html"], "<p>You said: remember me</p>");
    app.shutdown().await;
}

#[tokio::test]
async fn a_button_press_reaches_the_core_and_its_answer_replaces_the_buttons() {
    let app = spawn("").await;
    let session = new_session();
    let (mut ws, _) = connect(&Door::of(&app), &session).await;
    let buttons = vec![Button {
        label: "Approve".into(),
        payload: "web-test:ok".into(),
    }];
    let msg = Outbound {
        text: "Run `ls`?".into(),
        buttons,
    };
    let posted = app
        .built("web")
        .send(&web_key(&session), &msg)
        .await
        .unwrap();
    let shown = next_json(&mut ws).await;
    assert_eq!(shown["message"]["buttons"][0]["payload"], "web-test:ok");

    let forged =
        json!({"type": "button", "id": "p0", "message": posted.id, "payload": "web-test:forged"});
    ws.send(Message::Text(forged.to_string().into()))
        .await
        .unwrap();
    let refused = json_where(&mut ws, |f| f["type"] == "refused").await;
    assert_eq!(refused["reason"], "This button is no longer active.");

    let press =
        json!({"type": "button", "id": "p1", "message": posted.id, "payload": "web-test:ok"});
    ws.send(Message::Text(press.to_string().into()))
        .await
        .unwrap();
    json_where(&mut ws, |f| f["type"] == "ack" && f["id"] == "p1").await;
    let answered = json_where(&mut ws, |f| f["type"] == "edit").await;
    assert_eq!(answered["message"]["id"], posted.id.as_str());
    assert_eq!(
        answered["message"]["notice"],
        "This button is no longer active."
    );
    assert_eq!(answered["message"]["buttons"], json!([]));
    assert!(
        app.llm.requests().is_empty(),
        "a button press is not a chat message"
    );
    app.shutdown().await;
}
