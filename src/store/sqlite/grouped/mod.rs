//! Group commit for inbox inserts where one process owns the database (SQLite).
//!
//! Every webhook stores its event before it is acknowledged. Stored one statement each, a
//! burst of events runs as many write transactions on the pool's connections, which take
//! SQLite's one write lock in turn, each dropping the others' page caches and waking threads
//! to wait for it. Grouped, the inserts that arrive while one group is being written form
//! the next group, written by one caller on one connection in one statement, and a row no
//! group takes within [`MAX_WAIT`] is written alone. SQLite's
//! [`Backend::insert_event`](crate::store::Backend::insert_event) is [`SqlStore::insert_grouped`]. PostgreSQL's writers do not serialise on one lock, and its
//! inserts announce themselves to other replicas, so each is its own transaction there.
//!
//! No timer: a request that finds no group being written is written at once, alone, as
//! before; grouping only happens to requests that would otherwise have waited for the lock.
//! Each caller still returns only once its own row is committed (or refused), so "stored
//! before acknowledged" holds per event. A statement that fails is written again row by
//! row, so one bad row refuses only its own event. A caller whose group was abandoned (the
//! writing caller was cancelled: its client went away, or its bounded wait ran out) queues
//! its row again; a row that did commit is then found a duplicate, which the inbox treats as
//! stored.
//!
//! The queue ([`InsertGroup`]) is generic over its rows: `autosave.rs` groups autosaved
//! memories with it, each group one statement, since every transaction that touches SQLite's
//! full-text index writes a segment of its own.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use sqlx::{Executor, Pool, Row, Sqlite};
use tokio::sync::{Mutex as AsyncMutex, oneshot};

use crate::store::StoreError;
use crate::store::backend::SqlStore;
use crate::store::inbox::PendingInsert;

/// Rows in one group at most: the callers queued behind a group wait for all of it, and a
/// turn's own writes wait behind each of its statements.
pub(super) const MAX_GROUP: usize = 64;

/// How long a row waits for a group to take it before its caller writes it alone, as every
/// row would be without grouping. When the runtime is overloaded, each group waits for its
/// writer's task to be polled again after every statement, and a chain of such groups can
/// fall behind the arrivals until webhooks time out; a row alone never waits for that.
pub(super) const MAX_WAIT: std::time::Duration = std::time::Duration::from_millis(20);

/// A group's rows in one statement, bound as one JSON array of `[channel, event_id, key,
/// payload, at, kind, rank]` arrays, where `rank` is the row's place among its
/// conversation's rows in the group (1, 2, ...). Each row is numbered from its
/// conversation's `last_seq` as it stood before the statement (`base`, materialized before
/// any row is inserted, so the trigger that moves `conversation_seq` on as each row lands
/// does not count twice) plus its rank. A redelivery in the group inserts nothing and
/// leaves its number unused: a gap, which the inbox's order by `seq` does not mind. A
/// number that did collide would fail the statement on the `(conversation_key, seq)` index,
/// and the group would be stored row by row. SQLite only (where replicas share PostgreSQL
/// nothing is grouped); `WHERE true` keeps SQLite from reading `ON CONFLICT` as a join's
/// `ON`.
const INSERT_GROUP: &str = "WITH base AS MATERIALIZED (SELECT key, last_seq FROM conversation_seq \
       WHERE key IN (SELECT value ->> 2 FROM json_each($1))) \
     INSERT INTO inbox \
     (channel, event_id, conversation_key, payload, created_at, updated_at, kind, seq) \
     SELECT r.value ->> 0, r.value ->> 1, r.value ->> 2, r.value ->> 3, r.value ->> 4, \
       r.value ->> 4, r.value ->> 5, \
       COALESCE((SELECT last_seq FROM base WHERE key = r.value ->> 2), 0) + (r.value ->> 6) \
     FROM json_each($1) AS r WHERE true \
     ON CONFLICT (channel, event_id) DO NOTHING RETURNING id, channel, event_id";

/// What storing an inbox row came to: its id, or `None` for a redelivery.
pub(super) type Outcome = Result<Option<i64>, StoreError>;

/// A queued row and where its outcome goes.
pub(super) type Queued<R = PendingInsert, O = Outcome> = (Arc<R>, oneshot::Sender<O>);

/// The rows (`R`, each answered with an `O`) waiting for the writer, and the writer's
/// turn. The inbox's rows by default; `memory.rs` groups autosaved memories the same way.
pub(super) struct InsertGroup<R = PendingInsert, O = Outcome> {
    queue: Mutex<Vec<Queued<R, O>>>,
    writer: AsyncMutex<()>,
}

impl<R, O> Default for InsertGroup<R, O> {
    fn default() -> Self {
        Self {
            queue: Mutex::new(Vec::new()),
            writer: AsyncMutex::new(()),
        }
    }
}

/// What a caller's wait came to: its outcome, or the writer's turn.
pub(super) enum Turn<'a, O = Outcome> {
    /// Another caller wrote the row (or gave up on it: `Err`, queue it again).
    Written(Result<O, oneshot::error::RecvError>),
    /// This caller writes the queued group, then reads its own outcome from `outcome`.
    Write {
        guard: tokio::sync::MutexGuard<'a, ()>,
        outcome: oneshot::Receiver<O>,
    },
    /// No group took the row within [`MAX_WAIT`]; it is out of the queue, and this caller
    /// writes it alone.
    Alone,
}

impl<R, O> InsertGroup<R, O> {
    fn queue(&self) -> MutexGuard<'_, Vec<Queued<R, O>>> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queue `row` and wait until either its outcome arrives or this caller may write.
    pub(super) async fn enqueue(&self, row: Arc<R>) -> Turn<'_, O> {
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

    /// Store `row` through the group: written by another caller's group, by this caller
    /// with the group queued so far (`write`, which answers every caller in it), or alone
    /// (`alone`) when no group took it within [`MAX_WAIT`]. A row whose group's writer was
    /// cancelled before it answered is queued again.
    pub(super) async fn submit<W, WF, A, AF>(&self, row: R, write: W, alone: A) -> O
    where
        W: Fn(Vec<Queued<R, O>>) -> WF,
        WF: Future<Output = ()>,
        A: FnOnce(Arc<R>) -> AF,
        AF: Future<Output = O>,
    {
        let row = Arc::new(row);
        loop {
            let outcome = match self.enqueue(Arc::clone(&row)).await {
                Turn::Written(outcome) => outcome,
                Turn::Write { guard, outcome } => {
                    write(self.take()).await;
                    drop(guard);
                    outcome.await
                }
                Turn::Alone => return alone(row).await,
            };
            // A dropped sender: the caller writing this row's group was cancelled before
            // it answered. Queue the row again; if that group did commit, it is a duplicate.
            if let Ok(outcome) = outcome {
                return outcome;
            }
        }
    }

    /// Take `row` out of the queue; `false` when a writer has taken it already.
    fn withdraw(&self, row: &Arc<R>) -> bool {
        let mut queue = self.queue();
        let at = queue
            .iter()
            .position(|(queued, _)| Arc::ptr_eq(queued, row));
        at.map(|at| queue.remove(at)).is_some()
    }

    /// The oldest queued rows, at most [`MAX_GROUP`]; the rest wait for the next writer.
    pub(super) fn take(&self) -> Vec<Queued<R, O>> {
        let mut queue = self.queue();
        let n = queue.len().min(MAX_GROUP);
        queue.drain(..n).collect()
    }
}

/// Each row's place among the rows of its conversation, in queue order, from 1.
fn ranks(rows: &[Arc<PendingInsert>]) -> Vec<i64> {
    let mut seen: HashMap<&str, i64> = HashMap::new();
    rows.iter()
        .map(|row| {
            let rank = seen.entry(row.key.as_str()).or_insert(0);
            *rank += 1;
            *rank
        })
        .collect()
}

impl SqlStore<Sqlite> {
    /// Store `row`, grouped with the inserts that arrive while another group is being
    /// written (above).
    pub(in crate::store) async fn insert_grouped(
        &self,
        row: PendingInsert,
    ) -> Result<Option<i64>, StoreError> {
        let write = |group| self.write_group(group);
        let alone = move |row: Arc<PendingInsert>| async move {
            Self::insert_in_one_statement(&self.front, &row).await
        };
        self.local.inserts.submit(row, write, alone).await
    }

    /// Store `group` and tell each caller its outcome: all its rows in one statement
    /// ([`INSERT_GROUP`]), which commits on its own, so the write lock is never held while
    /// this task waits for the runtime. A group whose statement fails is stored row by row,
    /// so each caller gets its own answer and one bad row refuses only its own event.
    async fn write_group(&self, group: Vec<Queued>) {
        let (rows, answers): (Vec<_>, Vec<_>) = group.into_iter().unzip();
        let mut answers: Vec<_> = answers.into_iter().map(Some).collect();
        let mut answer = |i: usize, outcome: Outcome| {
            if let Some(answer) = answers[i].take() {
                // A caller that stopped waiting needs no answer.
                let _ = answer.send(outcome);
            }
        };
        if rows.len() > 1 {
            match Self::insert_group(&self.front, &rows).await {
                Ok(ids) => {
                    ids.into_iter()
                        .enumerate()
                        .for_each(|(i, id)| answer(i, Ok(id)));
                    return;
                }
                Err(err) => tracing::debug!(
                    rows = rows.len(),
                    error = %err,
                    "grouped inbox insert failed; storing its rows one by one"
                ),
            }
        }
        for (i, row) in rows.iter().enumerate() {
            answer(i, Self::insert_in_one_statement(&self.front, row).await);
        }
    }

    /// `rows` in one `INSERT` ([`INSERT_GROUP`]); each row's id in order (`None` for a
    /// redelivery). The rows go in as one JSON array, so every group, whatever its size, is
    /// the same statement and stays prepared on each connection (SQLite compiling a new
    /// statement for each size cost a tenth of ingest's throughput).
    async fn insert_group(
        pool: &Pool<Sqlite>,
        rows: &[Arc<PendingInsert>],
    ) -> Result<Vec<Option<i64>>, StoreError> {
        // Tuples serialize as JSON arrays.
        let values: Vec<_> = rows
            .iter()
            .zip(ranks(rows))
            .map(|(r, rank)| {
                let r = &**r;
                (
                    &r.channel,
                    &r.event_id,
                    &r.key,
                    &r.payload,
                    r.now_ms,
                    r.kind,
                    rank,
                )
            })
            .collect();
        let values =
            serde_json::to_string(&values).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let stored = sqlx::query(INSERT_GROUP)
            .bind(values)
            .fetch_all(pool)
            .await?;
        let mut ids = vec![None; rows.len()];
        for r in &stored {
            let (id, channel, event_id): (i64, String, String) =
                (r.try_get(0)?, r.try_get(1)?, r.try_get(2)?);
            let at =
                (rows.iter()).position(|row| row.channel == channel && row.event_id == event_id);
            if let Some(at) = at {
                ids[at] = Some(id);
            }
        }
        Ok(ids)
    }

    /// One row in one statement: its number taken from `conversation_seq`, which a trigger
    /// (migration 0015) moves on. A transaction of three statements would hold SQLite's write
    /// lock across three hand-offs to the connection's thread while other writers wait.
    ///
    /// Read with `fetch_all`, never `fetch_optional`: SQLite hands out a `RETURNING` row
    /// before the statement's own commit, and sqlx's SQLite driver stops stepping after the
    /// one row `fetch_optional` asks for, so a commit that then fails (a full disk) was
    /// never seen and the id read as stored (sqlx issue 2099).
    async fn insert_in_one_statement<'e, E>(
        executor: E,
        row: &PendingInsert,
    ) -> Result<Option<i64>, StoreError>
    where
        E: Executor<'e, Database = Sqlite>,
    {
        let id: Option<i64> = sqlx::query_scalar::<_, i64>(
            "INSERT INTO inbox (channel, event_id, conversation_key, payload, created_at, updated_at, kind, seq) \
             VALUES ($1, $2, $3, $4, $5, $5, $6, \
               COALESCE((SELECT last_seq FROM conversation_seq WHERE key = $3), 0) + 1) \
             ON CONFLICT (channel, event_id) DO NOTHING RETURNING id",
        )
        .bind(row.channel.as_str())
        .bind(row.event_id.as_str())
        .bind(row.key.as_str())
        .bind(row.payload.as_str())
        .bind(row.now_ms)
        .bind(row.kind)
        .fetch_all(executor)
        .await?
        .pop();
        Ok(id)
    }
}

#[cfg(test)]
mod tests;
