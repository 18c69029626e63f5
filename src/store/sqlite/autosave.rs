//! SQLite's autosaves, grouped: every transaction that touches SQLite's full-text index
//! writes a new segment of it, which later merges fold together, so a memory saved in a
//! transaction of its own costs several times one saved with others. The autosaves of turns
//! that end together are written together, in one statement, through the same queue as the
//! inbox's inserts (`grouped/`). On PostgreSQL, whose index has no such segments, each
//! memory is saved on its own.

use std::sync::Arc;

use sqlx::{Row, Sqlite};

use super::grouped::Queued;
use crate::store::backend::SqlStore;
use crate::store::{Memory, StoreError, text};

/// Autosaved memories of one group in one statement, bound as one JSON array of `[scope,
/// key, content, category, updated_at]` arrays; returns the `(scope, key)` of each row it
/// stored.
const AUTOSAVE_GROUP: &str = "INSERT INTO memories (scope, key, content, category, created_at, updated_at) \
     SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 4 \
     FROM json_each($1) WHERE true ON CONFLICT (scope, key) DO NOTHING RETURNING scope, key";

impl SqlStore<Sqlite> {
    /// One autosave through the group queue: whether it was new.
    pub(super) async fn autosave_grouped(&self, m: &Memory) -> Result<bool, StoreError> {
        let write = |group| self.write_autosaves(group);
        let alone = move |m: Arc<Memory>| async move { self.remember_one(&m, true).await };
        self.local.autosaves.submit(m.clone(), write, alone).await
    }

    /// Store a group of autosaved memories and tell each caller whether its row was new. A
    /// group whose statement fails is written row by row, so each caller gets its own
    /// answer.
    pub(super) async fn write_autosaves(
        &self,
        group: Vec<Queued<Memory, Result<bool, StoreError>>>,
    ) {
        let (rows, answers): (Vec<_>, Vec<_>) = group.into_iter().unzip();
        if rows.len() > 1 {
            match self.autosave_group(&rows).await {
                Ok(stored) => {
                    for (answer, stored) in answers.into_iter().zip(stored) {
                        // A caller that stopped waiting needs no answer.
                        let _ = answer.send(Ok(stored));
                    }
                    return;
                }
                Err(err) => tracing::debug!(
                    rows = rows.len(),
                    error = %err,
                    "grouped autosave failed; saving its memories one by one"
                ),
            }
        }
        for (answer, row) in answers.into_iter().zip(&rows) {
            let _ = answer.send(self.remember_one(row, true).await);
        }
    }

    /// `rows` in one statement ([`AUTOSAVE_GROUP`]): for each, whether it was stored (a
    /// key already there, or earlier in the group, is not).
    async fn autosave_group(&self, rows: &[Arc<Memory>]) -> Result<Vec<bool>, StoreError> {
        // Tuples serialize as JSON arrays.
        let values: Vec<_> = rows
            .iter()
            .map(|m| {
                let (key, content) = (text::put::<Sqlite>(&m.key), text::put::<Sqlite>(&m.content));
                (m.scope.to_string(), key, content, &m.category, m.updated_at)
            })
            .collect();
        let json =
            serde_json::to_string(&values).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let inserted = sqlx::query(AUTOSAVE_GROUP)
            .bind(json)
            .fetch_all(&self.pool)
            .await?;
        let mut stored = vec![false; rows.len()];
        for r in &inserted {
            let (scope, key): (String, String) = (r.try_get(0)?, r.try_get(1)?);
            // The first row of that scope and key not yet accounted for.
            let at = (values.iter().zip(&stored))
                .position(|((s, k, ..), done)| !done && *s == scope && *k == key);
            if let Some(at) = at {
                stored[at] = true;
            }
        }
        Ok(stored)
    }
}
