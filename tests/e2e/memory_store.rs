//! Memory at the store and operator level: recall ranking and scope isolation on both
//! databases, and the `switchboard memory` command.

use std::sync::Arc;

use switchboard::ids::MemoryScope;
use switchboard::store::{self, Memory, Store};
use switchboard_channel::ConversationKey;

use crate::store_contract::on_both_databases;

const FACT: &str = "My cat is called Miso and she likes turquoise blankets.";

async fn recall_contract(store: Arc<dyn Store>) {
    let a = MemoryScope::Conversation(ConversationKey::new("tg", "a"));
    let b = MemoryScope::Conversation(ConversationKey::new("tg", "b"));
    let m = |scope: &MemoryScope, key: &str, content: &str| Memory {
        scope: scope.clone(),
        key: key.into(),
        content: content.into(),
        category: "core".into(),
        updated_at: 1,
    };
    store
        .remember(&m(&a, "pet", "The cat is called Miso"), false)
        .await
        .unwrap();
    store
        .remember(&m(&a, "os", "The server runs Debian"), false)
        .await
        .unwrap();
    store
        .remember(&m(&b, "pet", "The dog is called Rex"), false)
        .await
        .unwrap();
    assert!(
        !store
            .remember(&m(&a, "pet", "ignored"), true)
            .await
            .unwrap(),
        "only_new keeps the first"
    );
    let found = store
        .recall(&a, "what is the cat called?", 5)
        .await
        .unwrap();
    assert_eq!(found[0].content, "The cat is called Miso");
    assert!(found.iter().all(|f| f.scope == a));
    assert!(
        store.recall(&a, "Rex", 5).await.unwrap().is_empty(),
        "no crossing scopes"
    );
    assert!(
        store
            .recall(&a, "\"); DROP TABLE memories; --", 5)
            .await
            .unwrap()
            .is_empty()
    );
    store
        .remember(&m(&a, "pet", "The cat is called Luna now"), false)
        .await
        .unwrap();
    assert_eq!(
        store.recall(&a, "cat", 5).await.unwrap()[0].content,
        "The cat is called Luna now"
    );
    assert!(store.forget(&a, "pet").await.unwrap());
    assert!(store.recall(&a, "cat", 5).await.unwrap().is_empty());
    assert_eq!(store.forget_scope(&a).await.unwrap(), 1);
    assert_eq!(store.memories(None, 10).await.unwrap().len(), 1);
}

#[tokio::test]
async fn recall_ranks_within_a_scope_on_both_databases() {
    on_both_databases(recall_contract).await;
}

#[tokio::test]
async fn user_scopes_round_trip_through_the_database() {
    on_both_databases(user_scopes).await;
}

async fn user_scopes(store: Arc<dyn Store>) {
    // A user id may itself contain ':'; the scope must still decode to the same user.
    let scope = MemoryScope::user("tg", "switchboard:system");
    let memory = Memory {
        scope: scope.clone(),
        key: "tz".into(),
        content: "The user lives in Lisbon".into(),
        category: "core".into(),
        updated_at: 5,
    };
    assert!(store.remember(&memory, false).await.unwrap());
    assert_eq!(
        store.memories(Some(&scope), 10).await.unwrap(),
        vec![memory.clone()]
    );
    assert_eq!(
        store.recall(&scope, "Lisbon", 5).await.unwrap(),
        vec![memory.clone()]
    );
    let other = MemoryScope::user("tg", "switchboard");
    assert!(store.memories(Some(&other), 10).await.unwrap().is_empty());
    // Any characters a user id holds (SQLite names the scope in its search index by the
    // UTF-8 of the scope as stored).
    let unusual = MemoryScope::user("tg", "zoë \"🐈\" OR *");
    let memory = Memory {
        scope: unusual.clone(),
        ..memory
    };
    assert!(store.remember(&memory, false).await.unwrap());
    assert_eq!(
        store.recall(&unusual, "Lisbon", 5).await.unwrap(),
        vec![memory]
    );
    assert_eq!(store.recall(&other, "Lisbon", 5).await.unwrap(), vec![]);
}

#[test]
fn the_operator_lists_searches_and_forgets_memories_from_the_command_line() {
    let bin = env!("CARGO_BIN_EXE_switchboard");
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("c.toml");
    std::fs::write(
        &config,
        format!(
            "[gateway]\ndatabase_url = \"sqlite://{}/m.db\"\n",
            dir.path().display()
        ),
    )
    .unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let store = store::connect(&format!("sqlite://{}/m.db", dir.path().display()))
            .await
            .unwrap();
        let m = Memory {
            scope: "conv:web:s1".parse().unwrap(),
            key: "pet".into(),
            content: FACT.into(),
            category: "core".into(),
            updated_at: 1,
        };
        store.remember(&m, false).await.unwrap();
    });
    let run = |args: &[&str]| {
        let out = std::process::Command::new(bin)
            .arg("memory")
            .arg("--config")
            .arg(&config)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(run(&["list"]).contains("called Miso"));
    assert!(run(&["search", "--scope", "conv:web:s1", "cat"]).contains("pet"));
    assert_eq!(
        run(&["forget", "--scope", "conv:web:s1", "--key", "pet"]).trim(),
        "forgotten"
    );
    assert!(run(&["list"]).contains("no memories"));
}
