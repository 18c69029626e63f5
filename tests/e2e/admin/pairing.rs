//! A stranger's pairing request, allowed on the dashboard, lets them in: their next message
//! reaches the model and is answered.

use switchboard_standins::telegram::{FakeUser, UserMessage};
use switchboard_standins::{Reply, eventually};

use super::{act, csrf, get};
use crate::app::{Table, TestApp};
use crate::helpers::WAIT;

#[tokio::test]
async fn a_pairing_allowed_on_the_dashboard_lets_the_person_in() {
    let app = TestApp::builder().telegram(Table::example()).start().await;
    let stranger = FakeUser::human(3003, "mallory");
    app.telegram()
        .inject(&UserMessage::private(stranger.clone(), "hello?"));
    let code = eventually(WAIT, "a pairing request", async || {
        let waiting = app
            .store()
            .pairing_requests(crate::helpers::wall_ms())
            .await
            .unwrap();
        waiting.first().map(|r| r.code.clone()).ok_or(())
    })
    .await;
    let (_, page) = get(&app, "/access").await;
    assert!(page.contains(&code) && page.contains("mallory"), "{page}");
    assert!(page.contains(">Allow</button>") && page.contains(">Refuse</button>"));

    let csrf = csrf(&app).await;
    let form = [
        ("csrf", csrf.as_str()),
        ("channel", "telegram"),
        ("code", code.as_str()),
    ];
    assert_eq!(act(&app, "/access/allow", &form).await.0, 303);
    let (_, page) = get(&app, "/access").await;
    assert!(
        page.contains("Nobody is waiting.") && page.contains(">Revoke</button>"),
        "{page}"
    );

    app.llm.push(Reply::text("Welcome in."));
    app.telegram()
        .inject(&UserMessage::private(stranger, "now may I?"));
    eventually(WAIT, "the answer to the person let in", async || {
        let messages = app.telegram().messages(3003);
        if messages.iter().any(|m| m.text.contains("Welcome in.")) {
            Ok(())
        } else {
            Err(messages)
        }
    })
    .await;
    app.shutdown().await;
}
