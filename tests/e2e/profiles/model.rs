//! `/model`: lists the models the conversation's profile allows, switches the model of the
//! next request (seen at the LLM stand-in), refuses one the profile does not allow, and the
//! choice survives a restart.

use std::time::Duration;

use crate::helpers::{TestApp, key, wait_transcript};

const MODELS: &str = r#"
[agents.default]
models = ["fake-model", "fake-large"]
"#;

/// The model of the last request the stand-in saw.
fn last_model(app: &TestApp) -> String {
    let requests = app.llm.requests();
    let last = requests.last().expect("a request");
    last["model"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn model_switches_the_next_request_and_the_choice_survives_a_restart() {
    let mut app = TestApp::spawn_with(MODELS).await;
    let chat = key("m1");
    app.channel.say(&chat, "u1", "first").await.unwrap();
    wait_transcript(&app.channel, &chat, |t| {
        t.iter().any(|m| m.contains("You said: first"))
    })
    .await;
    assert_eq!(last_model(&app), "fake-model");

    app.channel.say(&chat, "u1", "/model").await.unwrap();
    let listed = wait_transcript(&app.channel, &chat, |t| {
        t.iter().any(|m| m.contains("Models for this conversation"))
    })
    .await;
    let list = listed.iter().find(|m| m.contains("Models for")).unwrap();
    assert!(
        list.contains("fake-model") && list.contains("(in use)") && list.contains("fake-large"),
        "{list}"
    );

    app.channel
        .say(&chat, "u1", "/model gpt-unknown")
        .await
        .unwrap();
    wait_transcript(&app.channel, &chat, |t| {
        t.iter()
            .any(|m| m.contains("is not a model of this conversation"))
    })
    .await;
    app.channel
        .say(&chat, "u1", "/model fake-large")
        .await
        .unwrap();
    wait_transcript(&app.channel, &chat, |t| {
        t.iter().any(|m| m.contains("Switched to"))
    })
    .await;
    app.channel.say(&chat, "u1", "second").await.unwrap();
    wait_transcript(&app.channel, &chat, |t| {
        t.iter().any(|m| m.contains("You said: second"))
    })
    .await;
    assert_eq!(last_model(&app), "fake-large");
    assert_eq!(
        app.llm.requests().len(),
        2,
        "commands never reach the model"
    );

    app.restart().await;
    app.channel.say(&chat, "u1", "third").await.unwrap();
    wait_transcript(&app.channel, &chat, |t| {
        t.iter().any(|m| m.contains("You said: third"))
    })
    .await;
    assert_eq!(last_model(&app), "fake-large");

    // Another conversation still starts on the profile's first model.
    let other = key("m2");
    app.channel.say(&other, "u1", "fourth").await.unwrap();
    wait_transcript(&app.channel, &other, |t| {
        t.iter().any(|m| m.contains("You said: fourth"))
    })
    .await;
    assert_eq!(last_model(&app), "fake-model");
    tokio::time::sleep(Duration::from_millis(10)).await;
}
