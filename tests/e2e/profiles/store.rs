//! The stored `/model` choice on SQLite and PostgreSQL: set, replaced, read back per
//! conversation.

use std::sync::Arc;

use switchboard::store::{ModelChoice, Store};
use switchboard_channel::ConversationKey;

use crate::helpers::{drop_postgres, postgres_url, sqlite_store};

async fn model_choices_are_kept_per_conversation(store: Arc<dyn Store>) {
    let (a, b) = (
        ConversationKey::new("telegram", "-100"),
        ConversationKey::new("slack", "D1"),
    );
    assert_eq!(store.model_choice(&a).await.unwrap(), None);
    let choice = |model: &str| ModelChoice {
        profile: "coder".into(),
        model: model.into(),
    };
    store.set_model(&a, &choice("small"), 1).await.unwrap();
    store.set_model(&a, &choice("large"), 2).await.unwrap();
    store.set_model(&b, &choice("small"), 3).await.unwrap();
    assert_eq!(store.model_choice(&a).await.unwrap(), Some(choice("large")));
    assert_eq!(store.model_choice(&b).await.unwrap(), Some(choice("small")));
}

#[tokio::test]
async fn model_choices_are_kept_per_conversation_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    model_choices_are_kept_per_conversation(sqlite_store(&dir).await).await;
}

#[tokio::test]
async fn model_choices_are_kept_per_conversation_on_postgres() {
    let Some(url) = postgres_url().await else {
        return;
    };
    let store = switchboard::store::connect(&url).await.unwrap();
    model_choices_are_kept_per_conversation(store).await;
    drop_postgres(&url).await;
}
