//! What the web chat writes to disk: every saved transcript passes through the gateway's
//! credential scrubber, so a secret a person pasted or an answer quoted never lands in
//! `<data_dir>/web/<name>/`.

use switchboard_standins::Reply;

use super::{Door, connect, json_where, new_session, say, spawn};
use crate::app::TestApp;
use crate::helpers::wait_inbox_idle;

/// The configured provider key of [`crate::app::test_config`].
const CONFIGURED_SECRET: &str = "test-key-not-real";
/// A key no config names, caught by its `sk-` shape.
const SHAPED_KEY: &str = "sk-abcdefghijklmnopqrstuvwxyz0123456789";

/// Every transcript file the channel saved, concatenated.
fn saved_transcripts(app: &TestApp) -> String {
    let dir = app.config.gateway.data_dir.join("web").join("web");
    let mut all = String::new();
    for entry in std::fs::read_dir(&dir).expect("the transcript directory exists") {
        let path = entry.unwrap().path();
        all.push_str(&std::fs::read_to_string(&path).unwrap());
    }
    all
}

#[tokio::test]
async fn secrets_in_a_question_or_an_answer_are_never_written_to_the_saved_transcript() {
    let mut app = spawn("").await;
    app.llm.push(Reply::text(format!(
        "Your key {CONFIGURED_SECRET} and {SHAPED_KEY} are noted."
    )));
    let session = new_session();
    let (mut ws, _) = connect(&Door::of(&app), &session).await;
    let question = format!("keys: {CONFIGURED_SECRET} and {SHAPED_KEY} ok");
    say(&mut ws, "q1", &question).await;
    json_where(&mut ws, |f| {
        matches!(f["type"].as_str(), Some("send" | "edit"))
            && f["message"]["role"] == "bot"
            && f["message"]["html"]
                .as_str()
                .unwrap_or_default()
                .contains("are noted.")
    })
    .await;
    wait_inbox_idle(&app.store()).await;
    app.stop().await;

    let saved = saved_transcripts(&app);
    assert!(
        saved.contains("keys: ") && saved.contains("are noted."),
        "{saved}"
    );
    assert!(!saved.contains(CONFIGURED_SECRET), "{saved}");
    assert!(!saved.contains(SHAPED_KEY), "{saved}");
    assert!(saved.contains("*[REDACTED]"), "{saved}");
}
