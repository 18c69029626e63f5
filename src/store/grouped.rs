//! Group commit for inbox inserts where one process owns the database (SQLite).
//!
//! Every webhook stores its event before it is acknowledged. Stored one statement each, a
//! burst of events runs as many write transactions on up to eight connections, which take
//! SQLite's one write lock in turn, each dropping the others' page caches and waking threads
//! to wait for it (issue #19, BENCHMARKS.md "Round two, fifth pass"). Grouped, the inserts
//! that arrive while one group is being written form the next group, written by one caller
//! on one connection: rows of distinct conversations in one statement each (`inbox.rs`).
//!
//! No timer: a request that finds no group being written is written at once, alone, as
//! before; grouping only happens to requests that would otherwise have waited for the lock.
//! Each caller still returns only once its own row is committed (or refused), so "stored
//! before acknowledged" holds per event. A statement that fails is written again row by
//! row, so one bad row refuses only its own event. A caller whose group was abandoned (the
//! writing caller was cancelled: its client went away, or its bounded wait ran out) queues
//! its row again; a row that did commit is then found a duplicate, which the inbox treats as
//! stored.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::{Mutex as AsyncMutex, oneshot};

use super::StoreError;

/// Rows in one group at most: the callers queued behind a group wait for all of it, and a
/// turn's own writes wait behind each of its statements.
pub(super) const MAX_GROUP: usize = 64;

/// How long a row waits for a group to take it before its caller writes it alone, as every
/// row was written before grouping. When the runtime is overloaded, each group waits for its
/// writer's task to be polled again after every statement, and a chain of such groups fell
/// behind the arrivals: at twice the turns the gateway can answer, 11 % of webhooks timed out
/// where none had (BENCHMARKS.md, "Round two, fifth pass").
pub(super) const MAX_WAIT: std::time::Duration = std::time::Duration::from_millis(20);

/// An inbox row waiting to be stored.
pub(super) struct PendingInsert {
    pub channel: String,
    pub event_id: String,
    pub key: String,
    pub payload: String,
    pub now_ms: i64,
    pub kind: &'static str,
}

/// What storing a row came to: its id, or `None` for a redelivery.
pub(super) type Outcome = Result<Option<i64>, StoreError>;

/// A queued row and where its outcome goes.
pub(super) type Queued = (Arc<PendingInsert>, oneshot::Sender<Outcome>);

/// The rows waiting for the writer, and the writer's turn.
#[derive(Default)]
pub(super) struct InsertGroup {
    queue: Mutex<Vec<Queued>>,
    writer: AsyncMutex<()>,
}

/// What a caller's wait came to: its outcome, or the writer's turn.
pub(super) enum Turn<'a> {
    /// Another caller wrote the row (or gave up on it: `Err`, queue it again).
    Written(Result<Outcome, oneshot::error::RecvError>),
    /// This caller writes the queued group, then reads its own outcome from `outcome`.
    Write {
        guard: tokio::sync::MutexGuard<'a, ()>,
        outcome: oneshot::Receiver<Outcome>,
    },
    /// No group took the row within [`MAX_WAIT`]; it is out of the queue, and this caller
    /// writes it alone.
    Alone,
}

impl InsertGroup {
    fn queue(&self) -> MutexGuard<'_, Vec<Queued>> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queue `row` and wait until either its outcome arrives or this caller may write.
    pub(super) async fn enqueue(&self, row: Arc<PendingInsert>) -> Turn<'_> {
        let (tx, mut rx) = oneshot::channel();
        self.queue().push((Arc::clone(&row), tx));
        tokio::select! {
            biased;
            outcome = &mut rx => Turn::Written(outcome),
            guard = self.writer.lock() => Turn::Write { guard, outcome: rx },
            () = tokio::time::sleep(MAX_WAIT) => {
                if self.withdraw(&row) {
                    Turn::Alone
                } else {
                    // A writer has taken it already: its answer is coming.
                    Turn::Written(rx.await)
                }
            }
        }
    }

    /// Take `row` out of the queue; `false` when a writer has taken it already.
    fn withdraw(&self, row: &Arc<PendingInsert>) -> bool {
        let mut queue = self.queue();
        let at = queue
            .iter()
            .position(|(queued, _)| Arc::ptr_eq(queued, row));
        at.map(|at| queue.remove(at)).is_some()
    }

    /// The oldest queued rows, at most [`MAX_GROUP`]; the rest wait for the next writer.
    pub(super) fn take(&self) -> Vec<Queued> {
        let mut queue = self.queue();
        let n = queue.len().min(MAX_GROUP);
        queue.drain(..n).collect()
    }
}
