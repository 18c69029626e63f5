//! Hybrid recall: full-text matches and vector matches of one scope fused by reciprocal
//! rank (each list's rank counts, not its score, so BM25 and cosine need no common scale),
//! the newest first among equals. Full text keeps what it does well (names, numbers, exact
//! words: a memory both lists hold rises above either alone); vectors add what shares no
//! word with the question. Without `[memory.embeddings]`, or while the endpoint is down,
//! recall is the full-text recall alone, unchanged.

use std::collections::HashMap;
use std::sync::Arc;

use super::semantic::Semantic;
use crate::clock::Clock;
use crate::ids::MemoryScope;
use crate::store::{Memory, MemoryStore, StoreError};

/// The constant of reciprocal rank fusion: a memory at rank `r` of a list scores
/// `1 / (K + r)`. 60 is the value of the method's paper (Cormack et al., 2009), where it
/// held across collections; smaller values let one list's first place dominate.
const K: f64 = 60.0;

/// How recall finds a scope's memories: full text, and vectors when configured.
#[derive(Clone)]
pub struct Recaller {
    /// Where memories live.
    pub store: Arc<dyn MemoryStore>,
    /// Recall by meaning, when `[memory.embeddings]` is set.
    pub semantic: Option<Arc<Semantic>>,
    /// Stamps when memories were recalled (eviction keeps those recalled lately).
    pub clock: Clock,
}

impl Recaller {
    /// Full-text recall only.
    pub fn full_text(store: Arc<dyn MemoryStore>, clock: Clock) -> Self {
        Self {
            store,
            semantic: None,
            clock,
        }
    }

    /// The best `limit` memories of `scope` for `query`, best first.
    pub async fn recall(
        &self,
        scope: &MemoryScope,
        query: &str,
        limit: usize,
    ) -> Result<Vec<Memory>, StoreError> {
        let found = self.find(scope, query, limit).await?;
        if !found.is_empty() {
            let keys: Vec<String> = found.iter().map(|m| m.key.clone()).collect();
            let (store, scope, now) = (Arc::clone(&self.store), scope.clone(), self.clock.now_ms());
            // The turn does not wait for the stamp; a lost one only ages a memory sooner.
            tokio::spawn(async move {
                if let Err(err) = store.stamp_recalled(&scope, &keys, now).await {
                    tracing::debug!(error = %err, "could not stamp recalled memories");
                }
            });
        }
        Ok(found)
    }

    async fn find(
        &self,
        scope: &MemoryScope,
        query: &str,
        limit: usize,
    ) -> Result<Vec<Memory>, StoreError> {
        let Some(semantic) = &self.semantic else {
            return self.store.recall(scope, query, limit).await;
        };
        // Each list goes deeper than the answer, so a memory ranked moderately by both
        // can rise above one ranked first by one alone.
        let depth = (limit * 4).clamp(10, 50);
        let (text, vector) = tokio::join!(
            self.store.recall(scope, query, depth),
            semantic.query_vector(query)
        );
        let text = text?;
        let Some(vector) = vector else {
            return Ok(text.into_iter().take(limit).collect());
        };
        let model = semantic.model();
        let near = self
            .store
            .recall_by_vector(scope, model, &vector, depth)
            .await?;
        let near = near
            .into_iter()
            .filter(|(_, similarity)| *similarity >= semantic.min_similarity())
            .map(|(m, _)| m)
            .collect();
        Ok(fuse(text, near, limit))
    }
}

/// Reciprocal rank fusion of two ranked lists of one scope's memories (a memory is its
/// key): the best `limit`, the newest first among equal scores.
pub fn fuse(text: Vec<Memory>, vector: Vec<Memory>, limit: usize) -> Vec<Memory> {
    let mut scored: HashMap<String, (f64, Memory)> = HashMap::new();
    for list in [text, vector] {
        for (rank, memory) in list.into_iter().enumerate() {
            let score = 1.0 / (K + rank as f64 + 1.0);
            scored
                .entry(memory.key.clone())
                .and_modify(|(s, _)| *s += score)
                .or_insert((score, memory));
        }
    }
    let mut all: Vec<(f64, Memory)> = scored.into_values().collect();
    all.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then(b.1.updated_at.cmp(&a.1.updated_at))
            .then(a.1.key.cmp(&b.1.key))
    });
    all.into_iter().take(limit).map(|(_, m)| m).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory(key: &str, updated_at: i64) -> Memory {
        Memory {
            scope: MemoryScope::user("tg", "1"),
            key: key.into(),
            content: key.into(),
            category: "core".into(),
            updated_at,
        }
    }

    #[test]
    fn a_memory_both_lists_hold_rises_above_the_first_of_either_alone() {
        let text = vec![memory("a", 1), memory("both", 2)];
        let vector = vec![memory("v", 3), memory("both", 2)];
        let keys: Vec<_> = fuse(text, vector, 3).into_iter().map(|m| m.key).collect();
        assert_eq!(keys, ["both", "v", "a"]);
    }

    #[test]
    fn one_list_alone_keeps_its_order() {
        let text = vec![memory("old", 1), memory("new", 9), memory("x", 5)];
        let keys: Vec<_> = fuse(text, Vec::new(), 2)
            .into_iter()
            .map(|m| m.key)
            .collect();
        assert_eq!(keys, ["old", "new"]);
    }
}
