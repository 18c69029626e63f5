//! Hostile strings: message text and names with NUL and other control characters, emoji and
//! right-to-left text are answered and stored exactly on both databases; ids the inbox could
//! not key on (empty, or holding a control character) are refused at the edge with a 400.

use std::sync::Arc;
use std::time::Duration;

use switchboard::ids::{InboxKind, MemoryScope};
use switchboard::provider::{ChatMessage, Role};
use switchboard::store::{AccessRole, Grant, Memory, Store};
use switchboard_channel::{ChannelEvent, ConversationKey, Inbound, Place, UserRef};
use switchboard_standins::slack::{
    FAKE_SIGNING_SECRET, SignedRequest, SlackMessage, dm_event, url_verification,
};

use super::outage::SlackApp;
use crate::helpers::{TestApp, drop_postgres, postgres_url, wait_inbox_idle, wait_transcript};
use crate::store_contract::on_both_databases;

/// Texts no database may change: NUL, C0/C1 controls, ESC sequences, DEL, emoji with
/// joiners, right-to-left with marks, and the store's own escape marker.
const HOSTILE: [&str; 6] = [
    "nul\0in the middle\0",
    "\0",
    "bell\u{7} esc\u{1b}[31m del\u{7f} c1\u{85}\u{9f} tab\t cr\r\n",
    "family 👨‍👩‍👧‍👦 flag 🇮🇱 skin 👋🏽",
    "שלום עולם \u{200f}مرحبا بالعالم\u{200e} mixed",
    "\u{FDD0}\"looks\" like an escape\0",
];

/// A user name with controls, as a platform could send it.
const NAME: &str = "Ada\0 \u{1b}[1mLovelace\u{7f} 👩‍💻 עדה";

#[tokio::test]
async fn hostile_text_and_names_round_trip_exactly_through_every_text_column() {
    on_both_databases(hostile_round_trip).await;
}

async fn hostile_round_trip(store: Arc<dyn Store>) {
    let key = ConversationKey::new("web", "s1");
    for (i, text) in HOSTILE.iter().enumerate() {
        let event = ChannelEvent::Message(Inbound {
            key: key.clone(),
            event_id: format!("e{i}"),
            user: UserRef {
                id: "u1".into(),
                name: Some(NAME.into()),
            },
            text: (*text).into(),
            place: Place::Direct,
            attachments: Vec::new(),
        });
        store
            .insert_event(&event, InboxKind::Message, 1)
            .await
            .unwrap();
        let row = store
            .claim_next(&key, "me", 2, Duration::from_secs(60))
            .await
            .unwrap()
            .expect("claimed");
        assert_eq!(
            row.event, event,
            "the stored event comes back as it came in"
        );
        let mut result = ChatMessage::tool_result(format!("call\0{i}"), *text);
        result.content = format!("output: {text}");
        let turn = vec![
            ChatMessage::new(Role::User, *text),
            result,
            ChatMessage::new(Role::Assistant, format!("You said: {text}")),
        ];
        store
            .complete(row.claim(), &key, &turn, None, 3)
            .await
            .unwrap();
        let stored = store.history(&key, 3).await.unwrap();
        assert_eq!(stored, turn, "history of {text:?}");

        let scope = MemoryScope::Conversation(key.clone());
        let memory = Memory {
            scope: scope.clone(),
            key: format!("k\0{i}"),
            content: (*text).into(),
            category: "core".into(),
            updated_at: 4,
        };
        store.remember(&memory, false).await.unwrap();
        let listed = store.memories(Some(&scope), 1).await.unwrap();
        assert_eq!(listed, vec![memory.clone()]);
        assert!(store.forget(&scope, &memory.key).await.unwrap());
    }
    let grant = Grant {
        channel: "web".into(),
        user_id: "u1".into(),
        user_name: Some(NAME.into()),
        role: AccessRole::User,
        granted_at: 5,
    };
    store.grant(&grant).await.unwrap();
    assert_eq!(store.grants().await.unwrap(), vec![grant]);
}

#[tokio::test]
async fn hostile_messages_are_answered_and_stored_identically_on_sqlite_and_postgres() {
    let sqlite = answered_history(None).await;
    let Some(url) = postgres_url().await else {
        return;
    };
    let postgres = answered_history(Some(&url)).await;
    drop_postgres(&url).await;
    assert_eq!(sqlite, postgres);
}

/// Send every hostile text through a gateway on SQLite (or the PostgreSQL `url`), check each
/// answer, and return the conversation's stored history.
async fn answered_history(url: Option<&str>) -> Vec<ChatMessage> {
    let mut builder = TestApp::builder();
    if let Some(url) = url {
        builder = builder.database(url);
    }
    let app = builder.start().await;
    let (channel, gateway) = (&app.channel, app.gateway());
    let key = ConversationKey::new("fake", "hostile");
    for (i, text) in HOSTILE.iter().enumerate() {
        let event = ChannelEvent::Message(Inbound {
            key: key.clone(),
            event_id: format!("hostile-{i}"),
            user: UserRef {
                id: "u1".into(),
                name: Some(NAME.into()),
            },
            text: (*text).into(),
            place: Place::Direct,
            attachments: Vec::new(),
        });
        channel.inject(event).await.expect("stored");
        wait_transcript(channel, &key, |t| t.len() == i + 1).await;
    }
    wait_inbox_idle(&gateway.store()).await;
    let transcript = channel.transcript(&key);
    let history = gateway.store().history(&key, 100).await.unwrap();
    let counts = gateway.store().inbox_counts().await.unwrap();
    app.shutdown().await;
    assert_eq!((counts.done, counts.failed), (HOSTILE.len() as i64, 0));
    let expected: Vec<ChatMessage> = HOSTILE
        .iter()
        .flat_map(|text| {
            [
                ChatMessage::new(Role::User, *text),
                ChatMessage::new(Role::Assistant, format!("You said: {text}")),
            ]
        })
        .collect();
    assert_eq!(history, expected, "every turn stored exactly");
    assert_eq!(transcript.len(), HOSTILE.len(), "{transcript:#?}");
    history
}

#[tokio::test]
async fn slack_events_with_an_empty_or_control_character_id_get_400_and_are_not_stored() {
    let app = SlackApp::spawn(None).await;
    let bad_ids = ["", "Ev\0-1", "Ev\u{1b}2", "Ev\u{85}3"];
    for id in bad_ids {
        let msg = SlackMessage {
            event_id: id,
            text: "should not be stored",
            ..SlackMessage::default()
        };
        assert_eq!(
            app.post(&dm_event(&msg), None).await.0,
            400,
            "event id {id:?}"
        );
    }
    let bad_user = SlackMessage {
        event_id: "Ev0USER",
        user: "U\0X",
        ..SlackMessage::default()
    };
    assert_eq!(app.post(&dm_event(&bad_user), None).await.0, 400);
    let bad_chat = SlackMessage {
        event_id: "Ev0CHAT",
        channel: "D\u{7f}",
        ..SlackMessage::default()
    };
    assert_eq!(app.post(&dm_event(&bad_chat), None).await.0, 400);
    // Requests without an event id at all are not events: unaffected.
    let verification = SignedRequest::event(&url_verification("c-123"));
    let reply = verification
        .build(
            &reqwest::Client::new(),
            &app.events_url,
            FAKE_SIGNING_SECRET,
        )
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 200);
    // A good event with NUL in its text is stored and answered.
    let fine = SlackMessage {
        event_id: "Ev0FINE",
        text: "nul\0 in text is fine",
        ..SlackMessage::default()
    };
    assert_eq!(app.post(&dm_event(&fine), None).await.0, 200);
    wait_inbox_idle(&app.gateway.store()).await;
    let counts = app.gateway.store().inbox_counts().await.unwrap();
    assert_eq!(
        (
            counts.pending,
            counts.processing,
            counts.done,
            counts.failed
        ),
        (0, 0, 1, 0),
        "only the good event was stored"
    );
    assert_eq!(app.gateway.slack().messages(fine.channel).len(), 1);
}
