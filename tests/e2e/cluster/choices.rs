//! Per-conversation choices across two in-process replicas on one PostgreSQL: `/model` and
//! `/tz` run on one replica reach the conversation's actor on the other, which was started
//! (and read the choices) before they were made. Every event wakes both replicas, so each
//! holds an actor for the conversation; the choices alternate over several rounds, so a
//! replica answering from what it read at start would show the old one.

use std::sync::Arc;

use switchboard_channel::ConversationKey;
use switchboard_standins::{FakeChannel, FakeLlm, eventually};

use super::replicas::replica_a;
use crate::helpers::{WAIT, drop_postgres, key, postgres_url};

/// Two models to choose from (on the replicas' short leases).
const MODELS: &str = "[agents.default]\nmodels = [\"fake-model\", \"fake-large\"]\n";

/// Wait until one of `channels` shows a message in `chat` containing `text`.
async fn wait_shown(channels: &[&Arc<FakeChannel>; 2], chat: &ConversationKey, text: &str) {
    wait_count(channels, chat, text, 1).await;
}

/// How many messages in `chat`, on either channel, contain `text`.
fn count(channels: &[&Arc<FakeChannel>; 2], chat: &ConversationKey, text: &str) -> usize {
    let shown = channels.iter().flat_map(|c| c.transcript(chat));
    shown.filter(|m| m.contains(text)).count()
}

/// Wait until `n` messages in `chat` contain `text`.
async fn wait_count(
    channels: &[&Arc<FakeChannel>; 2],
    chat: &ConversationKey,
    text: &str,
    n: usize,
) {
    eventually(WAIT, &format!("{text:?} shown {n} times"), async || {
        if count(channels, chat, text) >= n {
            Ok(())
        } else {
            let shown = channels.iter().flat_map(|c| c.transcript(chat));
            Err(shown.collect::<Vec<_>>())
        }
    })
    .await;
}

/// The model of the last request the stand-in saw.
fn last_model(llm: &FakeLlm) -> String {
    let requests = llm.requests();
    let last = requests.last().expect("a request");
    last["model"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn model_and_tz_set_on_one_replica_reach_the_actor_on_the_other() {
    let Some(db) = postgres_url().await else {
        return;
    };
    let (ca, cb) = (FakeChannel::new("fake"), FakeChannel::new("fake"));
    let mut a = replica_a(&db, &ca, MODELS).await;
    let b = a.replica("b", &cb).await;
    let channels = [&ca, &cb];
    let chat = key("choices");
    ca.say_with_id(&chat, "u1", "hello 0", "ev-hello")
        .await
        .unwrap();
    wait_shown(&channels, &chat, "You said: hello 0").await;
    let rounds = [
        ("fake-large", "Europe/Paris"),
        ("fake-model", "Asia/Tokyo"),
        ("fake-large", "America/Chicago"),
        ("fake-model", "Australia/Sydney"),
    ];
    let mut asked = 0;
    for (round, (model, zone)) in rounds.into_iter().enumerate() {
        let (set, other) = if round % 2 == 0 {
            (&ca, &cb)
        } else {
            (&cb, &ca)
        };
        let id = |what: &str| format!("ev-{what}-{round}");
        set.say_with_id(&chat, "u1", &format!("/model {model}"), &id("model"))
            .await
            .unwrap();
        set.say_with_id(&chat, "u1", &format!("/tz {zone}"), &id("tz"))
            .await
            .unwrap();
        wait_shown(&channels, &chat, &format!("Time zone set to {zone}")).await;
        // Through the other replica: both actors are woken, either may answer.
        for ask in 0..2 {
            let text = format!("hello {round}{ask}");
            other
                .say_with_id(&chat, "u1", &text, &format!("ev-{text}"))
                .await
                .unwrap();
            wait_shown(&channels, &chat, &format!("You said: {text}")).await;
            assert_eq!(last_model(&a.llm), model, "round {round}");
            asked += 1;
            let id = format!("ev-tz-ask-{round}-{ask}");
            other.say_with_id(&chat, "u1", "/tz", &id).await.unwrap();
            wait_count(&channels, &chat, "time zone is", asked).await;
            let right = count(&channels, &chat, &format!("time zone is {zone}"));
            assert_eq!(right, ask + 1, "round {round}: {:#?}", ca.transcript(&chat));
        }
    }
    a.stop().await;
    b.shutdown().await;
    drop_postgres(&db).await;
}
