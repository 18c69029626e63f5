//! SQLite's WAL checkpoints, moved off the commits that grow the WAL.
//!
//! SQLite checkpoints by itself inside the commit that takes the WAL past 1,000 pages: that
//! commit copies the WAL into the database file and syncs both before its caller hears back,
//! so the webhooks whose rows it carried waited for it, and every read meanwhile searched a
//! WAL of up to 1,000 pages. Here every connection gets a WAL hook instead, which runs after
//! each commit with the WAL's size:
//! - once [`WalBounds::background_at`] pages wait to be copied (counted from what the last
//!   checkpoint copied), it wakes a task of the store that checkpoints on a pooled
//!   connection of its own, while the request paths go on;
//! - from [`WalBounds::inline_at`] pages (SQLite's own threshold) it checkpoints in the
//!   commit, as SQLite would have, so the WAL stays as bounded as before when that task
//!   cannot keep up or has stopped.
//!
//! Under the ingest load the WAL kept small by the task stored about a quarter more events
//! per second with the p99 about halved (BENCHMARKS.md, "WAL checkpoints in a task").
//!
//! Also here: the journal flush after a raw value was overwritten ([`SqlStore::flush_wal`]).
//!
//! Both are `PASSIVE` checkpoints, SQLite's automatic kind: they never wait for a lock and
//! never block a reader or writer.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::ptr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

use libsqlite3_sys as ffi;
use sqlx::{Pool, Sqlite};
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use crate::store::StoreError;
use crate::store::backend::SqlStore;

impl SqlStore<Sqlite> {
    /// Copy the WAL into the file (where `secure_delete` zeroed the old value) and empty it,
    /// so an overwritten raw value is in neither. The flush reports busy, and leaves the WAL
    /// as it was, while another connection checkpoints (the task below) or reads an older
    /// snapshot: it runs again until it is done, within the statement bound (then `Timeout`:
    /// the caller's durable write tries the whole removal again).
    pub(super) async fn flush_wal(&self) -> Result<(), StoreError> {
        let started = std::time::Instant::now();
        loop {
            let (busy, _, _): (i64, i64, i64) = sqlx::query_as("PRAGMA wal_checkpoint(TRUNCATE)")
                .fetch_one(&self.pool)
                .await?;
            if busy == 0 {
                return Ok(());
            }
            if started.elapsed() >= self.timeouts.statement {
                return Err(StoreError::Timeout);
            }
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
    }
}

/// When a commit asks for a checkpoint, in WAL pages.
#[derive(Debug, Clone, Copy)]
pub(super) struct WalBounds {
    /// The background task is woken: frames its last checkpoint did not copy.
    pub background_at: c_int,
    /// The commit checkpoints by itself: the bound on the WAL.
    pub inline_at: c_int,
}

impl WalBounds {
    /// 50 pages (200 KiB) not yet copied wake the task; 1,000 (about 4 MiB) is SQLite's own
    /// threshold.
    pub(super) const DEFAULT: Self = Self {
        background_at: 50,
        inline_at: 1_000,
    };
}

/// What a connection's hook shares with the store's task.
#[derive(Debug)]
struct Watch {
    bounds: WalBounds,
    wanted: Notify,
    /// The WAL frames the task's last checkpoint had copied into the database: the hook
    /// counts the frames still to copy from there, not from the start of the WAL.
    copied: AtomicI32,
    /// Checkpoints the task has run (read by tests).
    done: AtomicU64,
}

/// The store's checkpoint task; stopped when the store is dropped.
#[derive(Debug)]
pub(super) struct WalCheckpointer {
    #[cfg_attr(not(test), expect(dead_code, reason = "its count is read by tests"))]
    watch: Arc<Watch>,
    task: AbortHandle,
}

impl Drop for WalCheckpointer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl WalCheckpointer {
    /// The hook's shared part, before the pool exists (connections get it as they open).
    pub(super) fn watch(bounds: WalBounds) -> WalWatch {
        WalWatch(Arc::new(Watch {
            bounds,
            wanted: Notify::new(),
            copied: AtomicI32::new(0),
            done: AtomicU64::new(0),
        }))
    }

    /// Start checkpointing `pool`'s database whenever one of its connections asks.
    pub(super) fn start(pool: Pool<Sqlite>, watch: WalWatch) -> Self {
        let shared = Arc::clone(&watch.0);
        let task = tokio::spawn(async move {
            let closed = pool.close_event();
            tokio::pin!(closed);
            loop {
                tokio::select! {
                    () = shared.wanted.notified() => {}
                    () = &mut closed => return,
                }
                match sqlx::query_as::<_, (i64, i64, i64)>("PRAGMA wal_checkpoint(PASSIVE)")
                    .fetch_one(&pool)
                    .await
                {
                    // (busy, frames in the WAL, frames copied); -1 when there is no WAL.
                    Ok((_, _, copied)) => {
                        let copied = c_int::try_from(copied.max(0)).unwrap_or(c_int::MAX);
                        shared.copied.store(copied, Ordering::Relaxed);
                        shared.done.fetch_add(1, Ordering::Relaxed);
                    }
                    // The commits go on; the next one past the bound asks again, and the
                    // inline bound holds the WAL meanwhile.
                    Err(err) => tracing::warn!(error = %err, "background WAL checkpoint failed"),
                }
            }
        });
        Self {
            watch: watch.0,
            task: task.abort_handle(),
        }
    }

    /// Checkpoints run by the task so far.
    #[cfg(test)]
    pub(super) fn done(&self) -> u64 {
        self.watch.done.load(Ordering::Relaxed)
    }
}

/// The part each connection's hook holds.
#[derive(Debug, Clone)]
pub(super) struct WalWatch(Arc<Watch>);

/// The client-data name under which a connection owns its reference to the [`Watch`].
const OWNER: &CStr = c"switchboard.wal";

impl WalWatch {
    /// Replace SQLite's automatic checkpoint on `db` with the hook.
    ///
    /// The connection owns one reference to the watch as client data, released when SQLite
    /// closes it, so the hook's pointer lives exactly as long as the hook can run. If SQLite
    /// cannot store it (out of memory), the connection keeps SQLite's own checkpoints.
    pub(super) fn install(&self, db: *mut ffi::sqlite3) {
        let owned = Arc::into_raw(Arc::clone(&self.0))
            .cast_mut()
            .cast::<c_void>();
        // SAFETY: `db` is an open handle, locked away from its worker for the call. On
        // failure SQLite has already run `release(owned)`, so the hook is not installed.
        unsafe {
            if ffi::sqlite3_set_clientdata(db, OWNER.as_ptr(), owned, Some(release))
                != ffi::SQLITE_OK
            {
                return;
            }
            ffi::sqlite3_wal_hook(db, Some(on_commit), owned);
        }
    }
}

/// Client-data destructor: the connection's reference to the watch.
unsafe extern "C" fn release(owned: *mut c_void) {
    // SAFETY: `owned` came from `Arc::into_raw` in `install`, and SQLite calls this once.
    drop(unsafe { Arc::from_raw(owned.cast_const().cast::<Watch>()) });
}

/// SQLite's WAL hook: runs on the connection's thread after each commit, with the write
/// lock already released and `pages` the WAL's size.
unsafe extern "C" fn on_commit(
    watch: *mut c_void,
    db: *mut ffi::sqlite3,
    schema: *const c_char,
    pages: c_int,
) -> c_int {
    // SAFETY: the pointer is the connection's own reference (see `install`), alive until
    // the connection closes, and SQLite calls no hook while closing.
    let watch = unsafe { &*watch.cast_const().cast::<Watch>() };
    if pages >= watch.bounds.inline_at {
        // SAFETY: what SQLite's default hook does here, on the same arguments.
        unsafe {
            ffi::sqlite3_wal_checkpoint_v2(
                db,
                schema,
                ffi::SQLITE_CHECKPOINT_PASSIVE,
                ptr::null_mut(),
                ptr::null_mut(),
            );
        }
    } else if pages - copied_before(watch, pages) >= watch.bounds.background_at {
        watch.wanted.notify_one();
    }
    ffi::SQLITE_OK
}

/// Where the frames still to copy begin in a WAL of `pages` frames: after the frames the
/// task's last checkpoint copied, or at 0 once the WAL has started over (SQLite writes from
/// its start again when a checkpoint copied everything and no reader still needs it).
///
/// Counting from the start of the WAL instead woke the task after nearly every commit: with
/// four connections reading, the WAL seldom starts over, so it stayed past the bound and
/// the task ran about two checkpoints per echo turn, each copying a few frames and syncing
/// the database file.
fn copied_before(watch: &Watch, pages: c_int) -> c_int {
    let copied = watch.copied.load(Ordering::Relaxed);
    if pages < copied { 0 } else { copied }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::store::{SqliteStore, Timeouts};
    use switchboard_standins::eventually;

    /// SQLite's default page, plus each WAL frame's header.
    const FRAME: u64 = 4096 + 24;

    /// Bounds where the task does the checkpoints: far above what the migrations write, so
    /// a test's own commits are the only ones to wake it.
    const TASK_ONLY: WalBounds = WalBounds {
        background_at: 400,
        inline_at: 100_000,
    };

    async fn store(dir: &tempfile::TempDir, bounds: WalBounds) -> SqliteStore {
        let url = format!("sqlite://{}/wal.db", dir.path().display());
        let store = SqliteStore::open(&url, Timeouts::default(), bounds)
            .await
            .unwrap();
        sqlx::query("CREATE TABLE filler (x BLOB)")
            .execute(&store.pool)
            .await
            .unwrap();
        store
    }

    /// One transaction of `rows` rows of a page each: at least `rows` WAL pages.
    async fn commit_pages(store: &SqliteStore, rows: u32) {
        commit_pages_on(&mut store.pool.acquire().await.unwrap(), rows).await;
    }

    /// [`commit_pages`] on a connection of the caller's.
    async fn commit_pages_on(conn: &mut sqlx::SqliteConnection, rows: u32) {
        let mut tx = sqlx::Connection::begin(conn).await.unwrap();
        for _ in 0..rows {
            sqlx::query("INSERT INTO filler VALUES (zeroblob(4000))")
                .execute(&mut *tx)
                .await
                .unwrap();
        }
        tx.commit().await.unwrap();
    }

    /// The WAL's size in frames, from SQLite (this runs a checkpoint of its own).
    async fn wal_frames(store: &SqliteStore) -> i64 {
        let (_busy, frames, _copied): (i64, i64, i64) =
            sqlx::query_as("PRAGMA wal_checkpoint(PASSIVE)")
                .fetch_one(&store.pool)
                .await
                .unwrap();
        frames
    }

    /// Wait until the task has run `n` checkpoints.
    async fn checkpoints(checkpointer: &WalCheckpointer, n: u64) {
        eventually(
            Duration::from_secs(10),
            &format!("{n} checkpoints"),
            async || {
                let done = checkpointer.done();
                if done >= n { Ok(()) } else { Err(done) }
            },
        )
        .await;
    }

    #[tokio::test]
    async fn once_the_task_copied_the_wal_only_new_frames_past_the_threshold_wake_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(&dir, TASK_ONLY).await;
        let checkpointer = &store.local.checkpointer;
        // Every connection taken, so the task waits for one while a reader begins.
        let mut held = Vec::new();
        for _ in 0..store.pool.options().get_max_connections() {
            held.push(store.pool.acquire().await.unwrap());
        }
        let (mut writer, mut reader) = (held.pop().unwrap(), held.pop().unwrap());
        commit_pages_on(&mut writer, 500).await;
        // A reader whose snapshot holds every frame: the task's checkpoint can copy all of
        // them, but SQLite cannot start the WAL over while this reader lasts.
        let mut reading = sqlx::Connection::begin(&mut *reader).await.unwrap();
        sqlx::query("SELECT count(*) FROM filler")
            .fetch_one(&mut *reading)
            .await
            .unwrap();
        held.clear();
        checkpoints(checkpointer, 1).await;

        // The WAL stays past the threshold, but what is left to copy is under it.
        for _ in 0..20 {
            commit_pages_on(&mut writer, 1).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            checkpointer.done(),
            1,
            "commits of frames already copied woke the task"
        );
        commit_pages_on(&mut writer, 400).await;
        checkpoints(checkpointer, 2).await;
        reading.rollback().await.unwrap();
    }

    #[tokio::test]
    async fn a_commit_past_the_threshold_wakes_the_task_which_empties_the_wal() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(&dir, TASK_ONLY).await;
        let checkpointer = &store.local.checkpointer;
        assert_eq!(checkpointer.done(), 0, "nothing asked yet");

        commit_pages(&store, 500).await;
        checkpoints(checkpointer, 1).await;
        assert_eq!(checkpointer.done(), 1);
        // The task's checkpoint ran after the commit and copied all of it, so the next
        // write starts the WAL over.
        commit_pages(&store, 1).await;
        let frames = wal_frames(&store).await;
        assert!(frames < 10, "the WAL was not started over: {frames} frames");
    }

    #[tokio::test]
    async fn without_the_task_a_commit_past_the_bound_checkpoints_by_itself() {
        let dir = tempfile::tempdir().unwrap();
        let bounds = WalBounds {
            background_at: c_int::MAX,
            inline_at: 100,
        };
        let store = store(&dir, bounds).await;
        let wal = dir.path().join("wal.db-wal");
        for _ in 0..20 {
            commit_pages(&store, 30).await;
            let len = std::fs::metadata(&wal).unwrap().len();
            assert!(
                len <= 32 + (100 + 40) * FRAME,
                "the WAL grew past its bound: {} frames",
                (len - 32) / FRAME
            );
        }
        assert_eq!(store.local.checkpointer.done(), 0);
    }
}
