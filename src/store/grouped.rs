//! Group commit for inbox inserts where one process owns the database (SQLite).
//!
//! Every webhook stores its event before it is acknowledged. Stored one statement each, a
//! burst of events runs as many write transactions on up to eight connections, which take
//! SQLite's one write lock in turn, each dropping the others' page caches and waking threads
//! to wait for it (issue #19, BENCHMARKS.md "Inbox inserts grouped"). Grouped, the inserts
//! that arrive while one group is being written go in the next group, one transaction on one
//! connection.
//!
//! No timer: a request that finds no group being written is written at once, alone, as
//! before; grouping only happens to requests that would otherwise have waited for the lock.
//! Each caller still returns only once its own row is committed (or refused), so "stored
//! before acknowledged" holds per event. A group that fails is written again row by row, so
//! one bad row refuses only its own event. A caller whose group was abandoned (the writing
//! caller was cancelled: its client went away, or its bounded wait ran out) queues its row
//! again; a row that did commit is then found a duplicate, which the inbox treats as stored.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::{Mutex as AsyncMutex, oneshot};

use super::StoreError;

/// Rows written in one transaction at most: a group holds SQLite's write lock for one
/// hand-off to the connection's thread per row, which a turn's own writes wait behind.
pub(super) const MAX_GROUP: usize = 64;

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
}

impl InsertGroup {
    fn queue(&self) -> MutexGuard<'_, Vec<Queued>> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queue `row` and wait until either its outcome arrives or this caller may write.
    pub(super) async fn enqueue(&self, row: Arc<PendingInsert>) -> Turn<'_> {
        let (tx, mut rx) = oneshot::channel();
        self.queue().push((row, tx));
        tokio::select! {
            biased;
            outcome = &mut rx => Turn::Written(outcome),
            guard = self.writer.lock() => Turn::Write { guard, outcome: rx },
        }
    }

    /// The oldest queued rows, at most [`MAX_GROUP`]; the rest wait for the next writer.
    pub(super) fn take(&self) -> Vec<Queued> {
        let mut queue = self.queue();
        let n = queue.len().min(MAX_GROUP);
        queue.drain(..n).collect()
    }
}
