//! Tests of the memory store (`memory.rs`): search queries, ranking, grouped autosaves.

use super::*;
use crate::store::SqliteStore;
use sqlx::Sqlite;

#[test]
fn queries_keep_only_words_so_search_syntax_cannot_be_injected() {
    assert_eq!(
        fts5_query("conv:tg:1", r#"my dog's "name" NEAR(x) -- OR *"#).unwrap(),
        r#"scope_token : 636f6e763a74673a31 AND {key content} : ("my" OR "dog" OR "name" OR "near" OR "or")"#
    );
    assert_eq!(
        websearch_query("conv:tg:1", "Where do I live?").unwrap(),
        "where or do or live"
    );
    assert!(fts5_query("conv:tg:1", "?! a").is_none());
}

fn memory(id: i64, content: &str) -> Memory {
    Memory {
        scope: MemoryScope::user("tg", "1"),
        key: format!("auto:{id}"),
        content: content.into(),
        category: "conversation".into(),
        updated_at: id,
    }
}

#[test]
fn a_scopes_matches_rank_by_the_words_they_share_with_the_query_best_first() {
    let found = vec![
        memory(1, "The weather was nice, the sun was out, the day was long"),
        memory(2, "The cat is called Miso"),
        memory(3, "We talked about the garden"),
        memory(4, "Cats and dogs: the cat sleeps"),
    ];
    let ranked = rank("what is the cat called?", found, 3);
    let order: Vec<i64> = ranked.iter().map(|m| m.updated_at).collect();
    // Rare words (cat, called) weigh more than the word every match holds (the), and a
    // match repeating a common word does not outrank one holding the rare ones.
    assert_eq!(order, [2, 4, 1]);
}

async fn store_in(dir: &tempfile::TempDir) -> SqliteStore {
    let url = format!("sqlite://{}", dir.path().join("memory.db").display());
    SqliteStore::connect(&url).await.unwrap()
}

/// An autosave of `content` in the user scope `scope`, keyed and dated `n`.
fn at(scope: &str, n: i64, content: &str) -> Memory {
    Memory {
        scope: MemoryScope::user("tg", scope),
        key: format!("auto:{n}"),
        content: content.into(),
        category: "conversation".into(),
        updated_at: n,
    }
}

/// Autosave `rows` as one group; whether each was stored, in order.
async fn autosave_as_one_group(store: &SqliteStore, rows: &[Memory]) -> Vec<bool> {
    let (group, answers): (Vec<_>, Vec<_>) = rows
        .iter()
        .map(|m| {
            let (tx, rx) = tokio::sync::oneshot::channel();
            ((Arc::new(m.clone()), tx), rx)
        })
        .unzip();
    store.write_autosaves(group).await;
    let mut stored = Vec::new();
    for answer in answers {
        stored.push(answer.await.expect("every caller is answered").unwrap());
    }
    stored
}

#[tokio::test]
async fn a_group_of_autosaves_stores_each_new_memory_once_exactly_and_searchable() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(&dir).await;
    let earlier = at("a", 1, "The kettle is in the left cupboard");
    assert!(store.remember(&earlier, true).await.unwrap());
    let odd = "quotes \" ' \\ and ünïcödé 🐈, NUL \u{0} and SQL '); DROP TABLE memories; --";
    let rows = [
        at("a", 2, "The kettle whistles"),
        earlier.clone(),                   // already stored
        at("b", 2, odd),                   // same key, another scope
        at("a", 2, "The kettle whistles"), // the same row twice in the group
        at("c", 7, "Lisbon kettle"),
    ];
    let stored = autosave_as_one_group(&store, &rows).await;
    assert_eq!(stored, [true, false, true, false, true]);
    let mut all = store.memories(None, 10).await.unwrap();
    all.sort_by(|x, y| (x.scope.to_string(), &x.key).cmp(&(y.scope.to_string(), &y.key)));
    let mut want = vec![
        earlier.clone(),
        rows[0].clone(),
        rows[2].clone(),
        rows[4].clone(),
    ];
    want.sort_by(|x, y| (x.scope.to_string(), &x.key).cmp(&(y.scope.to_string(), &y.key)));
    assert_eq!(all, want, "each new memory once, its text exact");
    // Every one is in the search index, under its own scope.
    for (row, words) in [
        (&rows[0], "kettle whistles"),
        (&rows[2], "unicode quotes"),
        (&rows[4], "Lisbon"),
    ] {
        let found = store.recall(&row.scope, words, 5).await.unwrap();
        assert!(found.contains(row), "{words}: {found:?}");
    }
}

#[tokio::test]
async fn concurrent_autosaves_are_each_answered_and_each_key_stored_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(store_in(&dir).await);
    let saves = (0..24).map(|i| {
        let store = Arc::clone(&store);
        let memory = at(
            &format!("s{}", i % 3),
            i64::from(i % 8),
            "Concurrent kettle",
        );
        tokio::spawn(async move { (memory.clone(), store.remember(&memory, true).await.unwrap()) })
    });
    let mut new = std::collections::HashSet::new();
    for save in saves.collect::<Vec<_>>() {
        let (memory, stored) = save.await.unwrap();
        if stored {
            assert!(
                new.insert((memory.scope.to_string(), memory.key)),
                "stored twice"
            );
        }
    }
    assert_eq!(new.len(), 24, "3 scopes x 8 keys, every one new");
}

#[test]
fn equal_matches_rank_newest_first_and_the_limit_holds() {
    let found = (1..=6).map(|id| memory(id, "the cat")).collect();
    let ranked = rank("cat", found, 2);
    let order: Vec<i64> = ranked.iter().map(|m| m.updated_at).collect();
    assert_eq!(order, [6, 5]);
    assert!(rank("cat", Vec::new(), 5).is_empty());
}

/// Recall's plan (`Dialect::recall_sql`): the search runs once, after the check that the
/// scope holds anything, and only its matches are looked up by id, never a search for
/// each of the scope's memories.
#[tokio::test]
async fn recall_searches_the_index_once_and_only_when_the_scope_holds_anything() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(&dir).await;
    let query = fts5_query("user:tg:1", "the cat").unwrap();
    let explain = format!("EXPLAIN QUERY PLAN {}", Sqlite::DIALECT.recall_sql);
    let rows = sqlx::query(&explain)
        .bind(&query)
        .bind("user:tg:1")
        .bind(-1_i64)
        .fetch_all(&store.pool)
        .await
        .unwrap();
    // Its columns are id, parent, (unused) and the step.
    let plan: Vec<String> = rows.iter().map(|r| r.get(3)).collect();
    let step = |wanted: &str| {
        plan.iter()
            .position(|line| line.starts_with(wanted))
            .unwrap_or_else(|| panic!("no {wanted:?} in {plan:#?}"))
    };
    let held = step("SCAN held");
    let search = step("SCAN f VIRTUAL TABLE");
    let by_id = step("SEARCH m USING INTEGER PRIMARY KEY");
    assert!(held < search && search < by_id, "{plan:#?}");

    // And what it finds is the scope's own.
    assert!(
        store
            .recall(&MemoryScope::user("tg", "1"), "the cat", 5)
            .await
            .unwrap()
            .is_empty()
    );
    autosave_as_one_group(
        &store,
        &[at("1", 1, "the cat is called Miso"), at("2", 2, "the cat")],
    )
    .await;
    let found = store
        .recall(&MemoryScope::user("tg", "1"), "the cat", 5)
        .await
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].content, "the cat is called Miso");
}
