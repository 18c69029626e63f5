//! Tests of the grouped inbox insert (`grouped.rs`).

use tokio::sync::oneshot;

use super::*;
use crate::store::SqliteStore;

fn row(key: &str, event_id: &str) -> Arc<PendingInsert> {
    Arc::new(PendingInsert {
        channel: "slack".into(),
        event_id: event_id.into(),
        key: format!("slack:{key}"),
        payload: "{}".into(),
        now_ms: 1,
        kind: "message",
    })
}

/// Write `rows` as one group; each caller's outcome, in order.
async fn write(store: &SqliteStore, rows: &[Arc<PendingInsert>]) -> Vec<Outcome> {
    let (group, answers): (Vec<Queued>, Vec<_>) = rows
        .iter()
        .map(|r| {
            let (tx, rx) = oneshot::channel();
            ((Arc::clone(r), tx), rx)
        })
        .unzip();
    store.write_group(group).await;
    let mut outcomes = Vec::new();
    for answer in answers {
        outcomes.push(answer.await.expect("every caller is answered"));
    }
    outcomes
}

async fn event_of(store: &SqliteStore, id: i64) -> String {
    sqlx::query_scalar("SELECT event_id FROM inbox WHERE id = $1")
        .bind(id)
        .fetch_one(&store.pool)
        .await
        .unwrap()
}

#[test]
fn ranks_count_each_conversations_rows_in_queue_order() {
    let rows = [row("A", "1"), row("B", "2"), row("A", "3"), row("A", "4")];
    assert_eq!(ranks(&rows), vec![1, 1, 2, 3]);
}

#[tokio::test]
async fn a_group_of_any_size_stores_every_row_exactly_and_numbers_each_conversation_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/group.db", dir.path().display());
    let store = SqliteStore::connect(&url).await.unwrap();
    // K0 has a row already: the groups number its rows after it.
    assert!(matches!(
        write(&store, &[row("K0", "before")]).await[0],
        Ok(Some(_))
    ));
    let mut last: HashMap<String, i64> = HashMap::from([("slack:K0".to_owned(), 1)]);

    // Text that JSON must escape and SQLite must give back unchanged.
    let texts = [
        r#"{"text":"a \"quote\", a \\ backslash, \u0000, a\ttab"}"#,
        "ünïcødé ✓ 𝄞 \" \\ \n",
        "",
        "'; DROP TABLE inbox; --",
    ];
    for size in [2, 9, 64] {
        // Five conversations, each with several rows in the larger groups.
        let mut rows: Vec<_> = (0..size)
            .map(|i| {
                Arc::new(PendingInsert {
                    channel: "slack".into(),
                    event_id: format!("{size}-{i}"),
                    key: format!("slack:K{}", i % 5),
                    payload: format!("{}{i}", texts[i % texts.len()]),
                    now_ms: 1_000 + i as i64,
                    kind: if i % 2 == 0 { "message" } else { "control" },
                })
            })
            .collect();
        // A redelivery in the middle: no new row, and its number is left unused.
        rows.insert(size / 2, row("K0", "before"));
        let outcomes = write(&store, &rows).await;
        // Each row is numbered from its conversation's last number before the group.
        let base = last.clone();
        let mut rank: HashMap<&str, i64> = HashMap::new();
        for (i, (row, outcome)) in rows.iter().zip(outcomes).enumerate() {
            let rank = rank.entry(row.key.as_str()).or_insert(0);
            *rank += 1;
            let seq = base.get(&row.key).copied().unwrap_or(0) + *rank;
            let Some(id) = outcome.unwrap() else {
                assert_eq!(i, size / 2, "only the redelivery stores nothing");
                continue;
            };
            let stored: (String, String, String, i64, i64, String, i64) = sqlx::query_as(
                "SELECT event_id, conversation_key, payload, created_at, updated_at, kind, seq \
                 FROM inbox WHERE id = $1",
            )
            .bind(id)
            .fetch_one(&store.pool)
            .await
            .unwrap();
            let expected = (
                row.event_id.clone(),
                row.key.clone(),
                row.payload.clone(),
                row.now_ms,
                row.now_ms,
                row.kind.to_owned(),
                seq,
            );
            assert_eq!(stored, expected, "row {i} of a group of {}", rows.len());
            last.insert(row.key.clone(), seq);
        }
    }
}

#[tokio::test]
async fn a_group_tells_each_caller_its_own_row_and_a_refused_row_fails_alone() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/group.db", dir.path().display());
    let store = SqliteStore::connect(&url).await.unwrap();

    // One statement; a redelivery inside it stores nothing.
    let first = [row("X", "x1"), row("Y", "y1"), row("Z", "z1")];
    let outcomes = write(&store, &first).await;
    for (row, outcome) in first.iter().zip(outcomes) {
        let id = outcome.unwrap().expect("stored");
        assert_eq!(event_of(&store, id).await, row.event_id);
    }
    let again = write(&store, &[row("W", "w1"), row("Y", "y1")]).await;
    assert!(matches!(again[0], Ok(Some(_))));
    assert!(matches!(again[1], Ok(None)), "a redelivery is no new row");

    // A refused row makes its statement fail; its group is stored row by row.
    sqlx::query(
        "CREATE TRIGGER refuse_one BEFORE INSERT ON inbox WHEN NEW.event_id = 'bad' \
         BEGIN SELECT RAISE(ABORT, 'refused'); END",
    )
    .execute(&store.pool)
    .await
    .unwrap();
    let second = [
        row("A", "a1"),
        row("B", "bad"),
        row("A", "a2"),
        row("C", "c1"),
    ];
    let outcomes = write(&store, &second).await;
    assert!(outcomes[1].is_err(), "the refused row fails");
    for i in [0, 2, 3] {
        let id = outcomes[i].as_ref().unwrap().expect("stored");
        assert_eq!(event_of(&store, id).await, second[i].event_id);
    }
    // A's second row is numbered after its first.
    let seq_of = |event_id: &'static str| {
        sqlx::query_scalar::<_, i64>("SELECT seq FROM inbox WHERE event_id = $1")
            .bind(event_id)
            .fetch_one(&store.pool)
    };
    assert_eq!(
        (seq_of("a1").await.unwrap(), seq_of("a2").await.unwrap()),
        (1, 2)
    );
}
