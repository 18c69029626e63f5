//! The SQLite gateway on a full disk, through Slack, Telegram and the web chat.

use switchboard_standins::eventually;
use switchboard_standins::telegram::{FakeUser, UserMessage};

use super::{SmallDisk, asked, echo, readyz, slack_dm, wait_answered_on_slack, wait_ready};
use crate::app::{Table, TestApp};
use crate::helpers::{WAIT, wait_inbox_idle};
use crate::web::{Door, Ws, close_frame, connect, json_where, new_session, say};

/// Most Slack events sent before the disk must have refused one.
const MAX_TRIES: usize = 100;

/// Alice, who writes to the Telegram bot in her private chat (whose id is hers).
const ALICE: u64 = 1001;

#[tokio::test]
async fn on_a_full_disk_nothing_unstored_is_acknowledged_and_all_is_answered_once_space_returns() {
    let Some(disk) = SmallDisk::mount() else {
        return;
    };
    let data_dir = disk.path().to_owned();
    let app = TestApp::builder()
        .slack(Table::open())
        .telegram(Table::open())
        .web("")
        .database(&format!("sqlite://{}/test.db", disk.path().display()))
        .edit(move |c| c.gateway.data_dir = data_dir)
        .start()
        .await;
    // The disk works: an event before it fills is answered.
    assert_eq!(
        app.slack_post("events", slack_dm("Ev0BEFORE", "before"))
            .await,
        200
    );
    wait_answered_on_slack(&app, &["before"]).await;

    disk.fill();
    let (acked, refused) = slack_while_full(&app).await;
    let (status, body) = readyz(&app).await;
    assert_eq!(status, 503, "{body}");
    let detail = body["checks"][0]["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("test.db") && detail.contains("no space") && detail.contains("free space"),
        "/readyz names the file, the cause and the fix: {detail}"
    );
    let update = telegram_while_full(&app).await;
    let session = new_session();
    web_while_full(&app, &session).await;

    disk.free();
    wait_ready(&app).await;
    // Slack retries what it got no 200 for; Telegram fetches its update again by itself.
    let retry = slack_dm(&refused.0, &refused.1).retry(1);
    assert_eq!(app.slack_post("events", retry).await, 200);
    let (mut ws, _) = connect(&Door::of(&app), &session).await;
    say(&mut ws, "w1", "full-web").await;
    json_where(&mut ws, |f| f["type"] == "ack" && f["id"] == "w1").await;

    let mut slack_texts: Vec<&str> = acked.iter().map(String::as_str).collect();
    slack_texts.push(&refused.1);
    wait_answered_on_slack(&app, &slack_texts).await;
    wait_answered_on_telegram(&app, update).await;
    wait_web_answer(&mut ws, "full-web").await;
    wait_inbox_idle(&app.store()).await;
    for text in slack_texts.iter().copied().chain(["full-tg", "full-web"]) {
        assert_eq!(asked(&app, text), 1, "{text} was answered once");
    }
    app.shutdown().await;
}

/// Slack events while the disk is full, until one is refused: the texts of those
/// answered 200 (each must then be stored), and the refused one's event id and text.
async fn slack_while_full(app: &TestApp) -> (Vec<String>, (String, String)) {
    let mut acked = Vec::new();
    for i in 0..MAX_TRIES {
        let (event_id, text) = (format!("Ev0FULL{i:03}"), format!("full-slack-{i:03}"));
        let status = app.slack_post("events", slack_dm(&event_id, &text)).await;
        if status == 200 {
            acked.push(text);
            continue;
        }
        assert_eq!(status, 500, "a store failure is a 5xx, so Slack retries");
        return (acked, (event_id, text));
    }
    panic!("{MAX_TRIES} events were acknowledged on a full disk");
}

/// A Telegram update while the disk is full: fetched again and again, never confirmed.
async fn telegram_while_full(app: &TestApp) -> i64 {
    let tg = app.telegram();
    let before = tg.calls_to("getUpdates").len();
    let update = tg.inject(&UserMessage::private(
        FakeUser::human(ALICE, "alice"),
        "full-tg",
    ));
    eventually(WAIT, "three more polls", async || {
        let polls = tg.calls_to("getUpdates").len();
        if polls >= before + 3 {
            Ok(())
        } else {
            Err(polls)
        }
    })
    .await;
    assert!(
        tg.confirmed_offset() <= update.update_id,
        "the offset moved past an update that was not stored"
    );
    update.update_id
}

/// A web chat message while the disk is full: no ack; the socket asks the page to resend.
async fn web_while_full(app: &TestApp, session: &str) {
    let (mut ws, _) = connect(&Door::of(app), session).await;
    say(&mut ws, "w1", "full-web").await;
    let (code, reason) = close_frame(&mut ws).await;
    assert_eq!(code, 1013, "try again later: {reason}");
}

/// Until the update is confirmed and answered once.
async fn wait_answered_on_telegram(app: &TestApp, update: i64) {
    let tg = app.telegram();
    let answers = eventually(WAIT, "the update answered and confirmed", async || {
        let answers = (tg.messages(ALICE as i64).into_iter())
            .filter(|m| m.text.trim() == echo("full-tg"))
            .count();
        let confirmed = tg.confirmed_offset();
        if answers >= 1 && confirmed > update {
            Ok(answers)
        } else {
            Err((answers, confirmed))
        }
    })
    .await;
    assert_eq!(answers, 1, "answered once");
}

/// Until the web chat shows the final answer to `text`.
async fn wait_web_answer(ws: &mut Ws, text: &str) {
    let answer = echo(text);
    json_where(ws, |f| {
        matches!(f["type"].as_str(), Some("send" | "edit"))
            && f["message"]["role"] == "bot"
            && f["message"]["html"]
                .as_str()
                .unwrap_or_default()
                .contains(&answer)
    })
    .await;
}
