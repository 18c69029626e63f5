//! Tests of SQLite's own machinery: the two pools, start-up, write transactions, the
//! journal flush, grouped autosaves and the recall plan.

use sqlx::Connection;

use std::sync::Arc;

use sqlx::Row;
use switchboard_standins::eventually_every;

use crate::ids::MemoryScope;
use crate::store::memory::fts5_query;
use crate::store::{AccessRole, AccessStore, Memory, MemoryStore, Store};

use super::*;

/// With every connection of the work pool taken for longer than the front's acquire
/// timeout, an inbox insert, an access lookup and the readiness ping still get a
/// connection at once, and a query of the work waits its turn, then runs, instead of
/// failing with a timeout.
#[tokio::test]
async fn work_waits_its_turn_while_the_request_path_goes_past() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/lanes.db", dir.path().display());
    let hurried = Timeouts {
        acquire: Duration::from_millis(100),
        ..Timeouts::default()
    };
    let store = SqliteStore::connect_with(&url, hurried).await.unwrap();
    let mut taken = Vec::new();
    for _ in 0..store.pool.options().get_max_connections() {
        taken.push(store.pool.acquire().await.unwrap());
    }

    let row = PendingInsert {
        channel: "slack".into(),
        event_id: "Ev1".into(),
        key: "slack:D1".into(),
        payload: "{}".into(),
        now_ms: 1,
        kind: "message",
    };
    let id = store
        .insert_grouped(row)
        .await
        .expect("the insert goes past");
    assert!(id.is_some());
    let granted = store.has_grant("slack", "U1", AccessRole::User).await;
    assert!(!granted.expect("the access lookup goes past"));
    store.ping().await.expect("the ping goes past");

    let work = sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM inbox").fetch_one(&store.pool);
    let mut work = std::pin::pin!(work);
    let early = tokio::time::timeout(Duration::from_millis(300), &mut work).await;
    assert!(
        early.is_err(),
        "work took a connection while the work pool was all taken"
    );
    taken.pop();
    assert_eq!(work.await.expect("work runs once a connection is free"), 1);
}

/// Opening the store creates and migrates the file within the start-up wait, not the
/// request path's acquire timeout: a start on a slow disk (CI's, once) failed with
/// `PoolTimedOut` when both were one. An acquire timeout of one nanosecond leaves no
/// time to open any connection, and the store still opens, migrated.
#[tokio::test]
async fn a_new_file_is_created_and_migrated_whatever_the_acquire_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/sub/new.db", dir.path().display());
    let hurried = Timeouts {
        acquire: Duration::from_nanos(1),
        queue: Duration::from_nanos(1),
        ..Timeouts::default()
    };
    SqliteStore::connect_with(&url, hurried)
        .await
        .expect("the store opens");
    let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
    let applied: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM _sqlx_migrations")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(
        applied,
        sqlx::migrate!("migrations/sqlite").iter().count() as i64
    );
}

/// A transaction opened with `begin_write` holds the write lock from its start, so a
/// read first cannot be overtaken: another connection's commit between the read and the
/// write would otherwise make the write fail at once with `SQLITE_BUSY_SNAPSHOT` (as
/// checkpoints and rewinds did under load). Here the other writer does not wait: with
/// a deferred transaction it commits and the transaction's write is refused; with
/// `BEGIN IMMEDIATE` it is the one refused, and nothing is lost.
#[tokio::test]
async fn a_write_transaction_that_reads_first_is_not_overtaken_by_another_commit() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/tx.db", dir.path().display());
    let store = SqliteStore::connect(&url).await.unwrap();
    sqlx::query("CREATE TABLE t (x INTEGER)")
        .execute(&store.pool)
        .await
        .unwrap();

    let mut tx = store.begin_write().await.unwrap();
    let seen: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM t")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    assert_eq!(seen, 0);

    let mut other = store.pool.acquire().await.unwrap().detach();
    sqlx::query("PRAGMA busy_timeout = 0")
        .execute(&mut other)
        .await
        .unwrap();
    let overtaking = sqlx::query("INSERT INTO t VALUES (1)")
        .execute(&mut other)
        .await;
    assert!(
        overtaking.is_err(),
        "another connection committed inside the write transaction"
    );

    sqlx::query("INSERT INTO t VALUES (2)")
        .execute(&mut *tx)
        .await
        .expect("the transaction's own write");
    tx.commit().await.unwrap();
    let rows: Vec<i64> = sqlx::query_scalar("SELECT x FROM t")
        .fetch_all(&mut other)
        .await
        .unwrap();
    assert_eq!(rows, [2]);
    other.close().await.unwrap();
}

/// A connection's checkpoint (`wal_checkpoint(TRUNCATE)`), begun and held open: it has
/// copied the WAL and waits, holding SQLite's checkpoint lock, for `reader` to leave.
/// Returns once the lock is seen held (another checkpoint then reports busy at once).
async fn hold_the_checkpoint_lock(store: &SqliteStore) -> tokio::task::JoinHandle<(i64, i64, i64)> {
    let mut probe = store.pool.acquire().await.unwrap().detach();
    let mut holding: Option<tokio::task::JoinHandle<(i64, i64, i64)>> = None;
    // Tried often: the holder may finish between two tries.
    let (within, every) = (Duration::from_secs(10), Duration::from_millis(2));
    let held = eventually_every(within, every, "the checkpoint lock held", async || {
        // The probe is refused while the holder has the lock; it may also take the lock
        // first, and the holder then returns at once: begin again.
        let held = match holding.take() {
            Some(held) if !held.is_finished() => held,
            _ => {
                let mut holder = store.pool.acquire().await.unwrap().detach();
                tokio::spawn(async move {
                    let done = sqlx::query_as("PRAGMA wal_checkpoint(TRUNCATE)")
                        .fetch_one(&mut holder)
                        .await
                        .unwrap();
                    holder.close().await.unwrap();
                    done
                })
            }
        };
        let (busy, _, _): (i64, i64, i64) = sqlx::query_as("PRAGMA wal_checkpoint(PASSIVE)")
            .fetch_one(&mut probe)
            .await
            .unwrap();
        if busy == 1 {
            Ok(held)
        } else {
            holding = Some(held);
            Err(busy)
        }
    })
    .await;
    probe.close().await.unwrap();
    held
}

/// The journal flush that follows a decided approval's overwritten raw call runs again
/// while another connection holds the checkpoint (the store's WAL task, in production):
/// a flush that ran once would report busy and leave the WAL, and the raw call in it,
/// as it was (`stored_secrets` caught that race once).
#[tokio::test]
async fn the_journal_flush_waits_out_another_connections_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/flush.db", dir.path().display());
    // No checkpoint but this test's: the store's task would take the lock at moments of
    // its own, and would let the reader below read from the file instead of the WAL.
    let never = WalBounds {
        background_at: c_int::MAX,
        inline_at: c_int::MAX,
    };
    let store = SqliteStore::open(&url, Timeouts::default(), never)
        .await
        .unwrap();
    sqlx::query("CREATE TABLE t (x TEXT)")
        .execute(&store.pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO t VALUES ('a raw call')")
        .execute(&store.pool)
        .await
        .unwrap();
    let wal = dir.path().join("flush.db-wal");

    let mut reader = store.pool.acquire().await.unwrap().detach();
    let mut reading = reader.begin().await.unwrap();
    let _: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM t")
        .fetch_one(&mut *reading)
        .await
        .unwrap();
    let held = hold_the_checkpoint_lock(&store).await;
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert!(!held.is_finished(), "the checkpoint waits for the reader");

    let flush = tokio::spawn(async move {
        let result = store.flush_wal().await;
        (store, result)
    });
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(
        !flush.is_finished(),
        "the flush returned while another connection held the checkpoint"
    );
    assert!(std::fs::metadata(&wal).unwrap().len() > 0);

    reading.commit().await.unwrap();
    assert_eq!(held.await.unwrap().0, 0, "the holder's checkpoint");
    let (_store, result) = flush.await.unwrap();
    result.expect("the flush, once the checkpoint was done");
    assert_eq!(std::fs::metadata(&wal).unwrap().len(), 0, "the WAL emptied");
    reader.close().await.unwrap();
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
