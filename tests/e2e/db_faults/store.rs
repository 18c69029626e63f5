//! The store contract under faults: a turn's completion write (history + done) that meets a
//! database it cannot reach fails with a transient error, is retried by [`Durable`], and
//! lands once the database answers again, on SQLite (another process holding the write
//! lock) and PostgreSQL (every connection cut by the proxy).

use std::sync::Arc;
use std::time::Duration;

use sqlx::{Connection, Executor, SqliteConnection};
use switchboard::ids::InboxKind;
use switchboard::provider::{ChatMessage, Role};
use switchboard::store::{Durable, InboxRow, SqliteStore, Store, Timeouts, connect_with};
use switchboard_channel::{ChannelEvent, ConversationKey, Inbound, Place, UserRef};
use switchboard_standins::TcpProxy;
use tokio_util::sync::CancellationToken;

use super::proxied;
use crate::helpers::{drop_postgres, postgres_url};

/// Short waits, so the failing attempt fails quickly.
const QUICK: Timeouts = Timeouts {
    acquire: Duration::from_millis(500),
    queue: Duration::from_millis(500),
    statement: Duration::from_millis(200),
    request: Duration::from_secs(1),
};

/// A way to take a store's database away and give it back.
trait Outage {
    async fn begin(&mut self);
    async fn end(&mut self);
}

/// SQLite: another connection holds the write lock, as a second process could.
struct WriteLock {
    url: String,
    holder: Option<SqliteConnection>,
}

impl Outage for WriteLock {
    async fn begin(&mut self) {
        let mut conn = SqliteConnection::connect(&self.url).await.unwrap();
        conn.execute("BEGIN EXCLUSIVE").await.unwrap();
        self.holder = Some(conn);
    }

    async fn end(&mut self) {
        let mut conn = self.holder.take().expect("locked");
        conn.execute("ROLLBACK").await.unwrap();
        conn.close().await.unwrap();
    }
}

/// PostgreSQL: the proxy between the store and the server cuts every connection.
struct Cut(TcpProxy);

impl Outage for Cut {
    async fn begin(&mut self) {
        self.0.cut();
    }

    async fn end(&mut self) {
        self.0.restore();
    }
}

#[tokio::test]
async fn a_completion_write_that_meets_a_lost_database_lands_once_it_answers_again() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/faults.db", dir.path().display());
    let store = Arc::new(SqliteStore::connect_with(&url, QUICK).await.unwrap());
    let lock = WriteLock { url, holder: None };
    completion_lands_after_the_outage(store, lock).await;

    if let Some(url) = postgres_url().await {
        let (proxy, through) = proxied(&url).await;
        let store = connect_with(&through, QUICK).await.expect("postgres store");
        completion_lands_after_the_outage(store, Cut(proxy)).await;
        drop_postgres(&url).await;
    }
}

#[tokio::test]
async fn a_sqlite_write_that_meets_a_brief_lock_waits_for_it_instead_of_failing() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/brief.db", dir.path().display());
    // The store's own busy handler (src/store/sqlite.rs) waits up to the statement timeout.
    let store = SqliteStore::connect_with(&url, QUICK).await.unwrap();
    let mut lock = WriteLock { url, holder: None };
    for round in 0..3 {
        lock.begin().await;
        let release = async {
            tokio::time::sleep(Duration::from_millis(40)).await;
            lock.end().await;
        };
        let event = hi(&ConversationKey::new("slack", "D2"), &format!("Ev{round}"));
        let (inserted, ()) =
            tokio::join!(store.insert_event(&event, InboxKind::Message, 1), release);
        inserted.expect("a lock held for less than the timeout is waited out");
    }
    assert_eq!(store.inbox_counts().await.unwrap().pending, 3);
}

/// On SQLite a turn's completion is one query holding its own `BEGIN` and `COMMIT`. Dropped
/// while that call waits for the write lock (a turn cancelled at shutdown), the connection
/// takes the lock once it is free and stops there, with its transaction open: were it
/// pooled again, it would hold the write lock for good. It is closed instead, which rolls
/// the transaction back; the claim still holds and completes later.
#[tokio::test]
async fn a_completion_dropped_while_it_waits_for_the_lock_leaves_no_transaction_open() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/dropped.db", dir.path().display());
    let patient = Timeouts {
        statement: Duration::from_secs(3),
        ..QUICK
    };
    let store = Arc::new(SqliteStore::connect_with(&url, patient).await.unwrap());
    let key = ConversationKey::new("slack", "D3");
    let row = stored_and_claimed(store.as_ref(), &key).await;
    let turn = hi_and("hello");

    let mut lock = WriteLock {
        url: url.clone(),
        holder: None,
    };
    lock.begin().await;
    let (writer, claim, turn2, key2) = (Arc::clone(&store), row.claim(), turn.clone(), key.clone());
    let completion =
        tokio::spawn(async move { writer.complete(claim, &key2, &turn2, None, 3).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    completion.abort();
    assert!(completion.await.unwrap_err().is_cancelled());
    lock.end().await;
    // The dropped call's connection takes the lock it waited for.
    tokio::time::sleep(Duration::from_millis(200)).await;

    // Another process can write: no transaction was left holding the lock.
    let mut other = SqliteConnection::connect(&url).await.unwrap();
    other.execute("PRAGMA busy_timeout = 5000").await.unwrap();
    other
        .execute("BEGIN IMMEDIATE")
        .await
        .expect("the write lock is free");
    other.execute("ROLLBACK").await.unwrap();
    other.close().await.unwrap();
    completes_later(&*store, &row, &key, &turn).await;
}

/// The same completion refused by the database halfway (a trigger stands in for any
/// failure of one of its statements): SQLite ends the statement but not the transaction the
/// query opened, so the connection is closed rather than pooled, and nothing of the turn
/// is left stored or holding the lock.
#[tokio::test]
async fn a_completion_refused_halfway_leaves_nothing_stored_and_no_transaction_open() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/halfway.db", dir.path().display());
    let store = SqliteStore::connect_with(&url, QUICK).await.unwrap();
    let key = ConversationKey::new("slack", "D4");
    let row = stored_and_claimed(&store, &key).await;
    let mut side = SqliteConnection::connect(&url).await.unwrap();
    side.execute(
        "CREATE TRIGGER refuse_messages BEFORE INSERT ON messages \
         BEGIN SELECT RAISE(ABORT, 'refused'); END",
    )
    .await
    .unwrap();
    let turn = hi_and("hello");
    let refused = store.complete(row.claim(), &key, &turn, None, 3).await;
    assert!(refused.is_err(), "{refused:?}");

    side.execute("PRAGMA busy_timeout = 5000").await.unwrap();
    side.execute("DROP TRIGGER refuse_messages")
        .await
        .expect("no transaction was left holding the lock");
    let conversations: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM conversations")
        .fetch_one(&mut side)
        .await
        .unwrap();
    assert_eq!(
        conversations, 0,
        "the refused turn's conversation row was kept"
    );
    side.close().await.unwrap();
    completes_later(&store, &row, &key, &turn).await;
}

/// On SQLite, inbox inserts that arrive while a group is being written go in the next group
/// (rows of distinct conversations in one statement), or are written alone when no group
/// took them in time. Either way, a row the database refuses (a trigger stands in for any
/// failure of one row) refuses only its own event; the unit tests in `src/store/inbox.rs`
/// drive the group's fallback directly.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_refused_row_in_a_group_of_inbox_inserts_refuses_only_its_own_event() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/group.db", dir.path().display());
    let store = Arc::new(
        SqliteStore::connect_with(&url, Timeouts::default())
            .await
            .unwrap(),
    );
    let mut side = SqliteConnection::connect(&url).await.unwrap();
    side.execute(
        "CREATE TRIGGER refuse_one BEFORE INSERT ON inbox WHEN NEW.event_id = 'EvBad' \
         BEGIN SELECT RAISE(ABORT, 'refused'); END",
    )
    .await
    .unwrap();
    let mut lock = WriteLock { url, holder: None };
    lock.begin().await;
    // The first insert takes the writer's turn and waits for the lock; the others queue
    // behind it, then are written alone or as a group once it is released.
    // Each event in a conversation of its own, so the group is one statement.
    let insert = |id: String| {
        let key = ConversationKey::new("slack", format!("D-{id}"));
        let (store, event) = (Arc::clone(&store), hi(&key, &id));
        tokio::spawn(async move { (id, store.insert_event(&event, InboxKind::Message, 1).await) })
    };
    let mut inserts = vec![insert("Ev0".into())];
    tokio::time::sleep(Duration::from_millis(50)).await;
    inserts.extend((1..8).map(|i| insert(format!("Ev{i}"))));
    inserts.push(insert("EvBad".into()));
    inserts.extend((8..12).map(|i| insert(format!("Ev{i}"))));
    tokio::time::sleep(Duration::from_millis(100)).await;
    lock.end().await;
    for done in inserts {
        let (id, inserted) = done.await.unwrap();
        match inserted {
            Err(err) => assert_eq!(id, "EvBad", "{id} refused: {err}"),
            Ok(_) => assert_ne!(id, "EvBad", "the refused row was stored"),
        }
    }
    assert_eq!(store.inbox_counts().await.unwrap().pending, 12);
}

/// "hi" from U1 in `key`, as event `event_id`.
fn hi(key: &ConversationKey, event_id: &str) -> ChannelEvent {
    ChannelEvent::Message(Inbound {
        key: key.clone(),
        event_id: event_id.into(),
        user: UserRef {
            id: "U1".into(),
            name: None,
        },
        text: "hi".into(),
        place: Place::Direct,
        attachments: Vec::new(),
    })
}

/// `key`'s event "Ev1" stored and claimed by "me".
async fn stored_and_claimed(store: &dyn Store, key: &ConversationKey) -> InboxRow {
    store
        .insert_event(&hi(key, "Ev1"), InboxKind::Message, 1)
        .await
        .unwrap();
    store
        .claim_next(key, "me", 2, Duration::from_secs(60))
        .await
        .unwrap()
        .expect("claimed")
}

/// A turn: the user's "hi" and the assistant's `answer`.
fn hi_and(answer: &str) -> Vec<ChatMessage> {
    vec![
        ChatMessage::new(Role::User, "hi"),
        ChatMessage::new(Role::Assistant, answer),
    ]
}

/// Nothing of the turn was stored, and its claim still completes it.
async fn completes_later(
    store: &dyn Store,
    row: &InboxRow,
    key: &ConversationKey,
    turn: &[ChatMessage],
) {
    assert!(store.history(key, 10).await.unwrap().is_empty());
    store
        .complete(row.claim(), key, turn, None, 4)
        .await
        .unwrap();
    assert_eq!(store.history(key, 10).await.unwrap(), turn);
}

async fn completion_lands_after_the_outage(store: Arc<dyn Store>, mut outage: impl Outage) {
    let key = ConversationKey::new("slack", "D1");
    let row = stored_and_claimed(store.as_ref(), &key).await;
    let turn = hi_and("hello (already posted)");

    // The answer was posted; now the database goes away under the completion write.
    outage.begin().await;
    let first = store.complete(row.claim(), &key, &turn, None, 3).await;
    let err = first.expect_err("the database is away");
    assert!(err.is_transient(), "a lost database is transient: {err}");

    let durable = Durable::new(CancellationToken::new());
    let (writer, claim, turn2, key2) = (Arc::clone(&store), row.claim(), turn.clone(), key.clone());
    let mut write = tokio::spawn(async move {
        let complete = || writer.complete(claim, &key2, &turn2, None, 4);
        durable.write("turn completion", complete).await
    });
    if let Ok(early) = tokio::time::timeout(Duration::from_millis(1500), &mut write).await {
        panic!("the write should wait for the database, but ended: {early:?}");
    }

    outage.end().await;
    let landed = tokio::time::timeout(Duration::from_secs(10), write)
        .await
        .expect("the write lands soon after the database is back")
        .unwrap();
    landed.expect("stored, not failed");
    assert_eq!(store.history(&key, 10).await.unwrap(), turn);
    let counts = store.inbox_counts().await.unwrap();
    assert_eq!(
        (counts.done, counts.processing, counts.failed),
        (1, 0, 0),
        "{counts:?}"
    );
}
