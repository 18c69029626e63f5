//! Tests of the memory store: search queries and ranking (SQLite's grouped autosaves and
//! recall plan are tested in `sqlite/tests.rs`).

use super::*;

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

#[test]
fn equal_matches_rank_newest_first_and_the_limit_holds() {
    let found = (1..=6).map(|id| memory(id, "the cat")).collect();
    let ranked = rank("cat", found, 2);
    let order: Vec<i64> = ranked.iter().map(|m| m.updated_at).collect();
    assert_eq!(order, [6, 5]);
    assert!(rank("cat", Vec::new(), 5).is_empty());
}
