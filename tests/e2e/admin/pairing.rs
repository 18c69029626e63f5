//! A stranger's pairing request, allowed on the dashboard, lets them in: their next message
//! reaches the model and is answered.

use std::time::Duration;

use switchboard_standins::Reply;
use switchboard_standins::telegram::{FakeUser, UserMessage};

use super::{act, csrf, get};
use crate::app::{Table, TestApp};
use crate::helpers::WAIT;

#[tokio::test]
async fn a_pairing_allowed_on_the_dashboard_lets_the_person_in() {
    let app = TestApp::builder().telegram(Table::example()).start().await;
    let stranger = FakeUser::human(3003, "mallory");
    app.telegram()
        .inject(&UserMessage::private(stranger.clone(), "hello?"));
    let deadline = std::time::Instant::now() + WAIT;
    let code = loop {
        let waiting = app
            .store()
            .pairing_requests(crate::helpers::wall_ms())
            .await
            .unwrap();
        if let Some(r) = waiting.first() {
            break r.code.clone();
        }
        assert!(std::time::Instant::now() < deadline, "no pairing request");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
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
    let deadline = std::time::Instant::now() + WAIT;
    while !app
        .telegram()
        .messages(3003)
        .iter()
        .any(|m| m.text.contains("Welcome in."))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "never answered: {:#?}",
            app.telegram().messages(3003)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    app.shutdown().await;
}
