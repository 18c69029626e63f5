//! Recall by meaning: the embedder's health, the background task that gives every memory
//! its vector, and the vector of a recall's query.
//!
//! Nothing here can make recall worse than full text: a memory is saved without waiting for
//! its vector (this task embeds it soon after, or when the endpoint is back), a query whose
//! vector does not come within `timeout_secs` is recalled by full text alone, and while the
//! endpoint is down queries do not wait on it at all. The endpoint going down is one WARN
//! (and `switchboard_memory_embedding_failures_total`), its return one INFO. Vectors of
//! another model count as missing, so a change of model re-embeds everything here, and
//! recall compares only vectors of the configured model.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus::IntCounterVec;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::embeddings::{EmbedError, Embedder};
use crate::store::{MemoryStore, StoreError, VectorModel};

/// Memories embedded per request.
const BATCH: usize = 32;

/// Characters of a memory sent to be embedded: its meaning is in its start, and endpoints
/// refuse texts over their model's window (a refused text would be retried for ever).
const MAX_CHARS: usize = 2_000;

/// While the endpoint is down, queries skip it for this long after a failure, so turns do
/// not each wait out the timeout.
const QUERY_RETRY: Duration = Duration::from_secs(30);

/// The background task's wait after a failure, doubling up to [`RETRY_MAX`].
const RETRY_MIN: Duration = Duration::from_secs(2);
const RETRY_MAX: Duration = Duration::from_secs(60);

/// The background task looks for unembedded memories this often even unwoken (another
/// replica, or `switchboard memory` on the command line, may have saved some).
const IDLE_LOOK: Duration = Duration::from_secs(60);

/// The embedder as recall and the background task share it.
pub struct Semantic {
    embedder: Embedder,
    /// Vector matches below this similarity are not recalled.
    min_similarity: f32,
    health: Mutex<Health>,
    /// Woken when a memory is saved.
    wake: Notify,
    failures: Option<IntCounterVec>,
}

/// Whether the endpoint answered last time.
#[derive(Debug, Default)]
struct Health {
    /// When it last failed, while it has not answered since.
    down_since: Option<Instant>,
}

/// What one step of the background task did.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// This many memories got their vector (fewer than a batch: none are left).
    Embedded(usize),
    /// A full batch got its vector; more may wait.
    More(usize),
    /// The endpoint failed; nothing was stored.
    Failed,
}

impl Semantic {
    /// Recall by meaning through `embedder`.
    pub fn new(embedder: Embedder, min_similarity: f32) -> Self {
        Self {
            embedder,
            min_similarity,
            health: Mutex::new(Health::default()),
            wake: Notify::new(),
            failures: None,
        }
    }

    /// Count failures in `failures` (by `stage`: `query` or `save`).
    pub fn with_metrics(mut self, failures: IntCounterVec) -> Self {
        self.failures = Some(failures);
        self
    }

    /// The model and length of the vectors.
    pub fn model(&self) -> &VectorModel {
        self.embedder.model()
    }

    /// The least similarity a vector match needs.
    pub fn min_similarity(&self) -> f32 {
        self.min_similarity
    }

    /// Tell the background task a memory was saved.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Whether the endpoint failed and has not answered since.
    pub fn is_down(&self) -> bool {
        self.lock().down_since.is_some()
    }

    /// The vector of a recall's query, or `None` (recall by full text): the endpoint failed
    /// or is known to be down.
    pub async fn query_vector(&self, text: &str) -> Option<Vec<f32>> {
        let skip = self
            .lock()
            .down_since
            .is_some_and(|since| since.elapsed() < QUERY_RETRY);
        if skip {
            return None;
        }
        match self.embedder.embed(&[text]).await {
            Ok(mut vectors) => {
                self.answered();
                vectors.pop()
            }
            Err(err) => {
                self.failed("query", &err);
                None
            }
        }
    }

    /// One step of the background task: embed up to a batch of memories that have no
    /// vector of the model, and store what came back.
    pub async fn embed_pending(&self, store: &dyn MemoryStore) -> Result<Step, StoreError> {
        let model = self.model();
        let pending = store.unembedded(model, BATCH).await?;
        if pending.is_empty() {
            return Ok(Step::Embedded(0));
        }
        let texts: Vec<&str> = pending.iter().map(|m| head(&m.content)).collect();
        let vectors = match self.embedder.embed(&texts).await {
            Ok(vectors) => vectors,
            Err(err) => {
                self.failed("save", &err);
                return Ok(Step::Failed);
            }
        };
        self.answered();
        for (memory, vector) in pending.iter().zip(&vectors) {
            store.save_vector(memory, model, vector).await?;
        }
        Ok(if pending.len() == BATCH {
            Step::More(pending.len())
        } else {
            Step::Embedded(pending.len())
        })
    }

    /// The background task: embed what is pending whenever a memory is saved (and every
    /// [`IDLE_LOOK`]), backing off while the endpoint or the database fails, until
    /// `shutdown`.
    pub async fn run(self: Arc<Self>, store: Arc<dyn MemoryStore>, shutdown: CancellationToken) {
        let mut retry = RETRY_MIN;
        loop {
            let wait = match self.embed_pending(store.as_ref()).await {
                Ok(Step::More(_)) => {
                    retry = RETRY_MIN;
                    continue;
                }
                Ok(Step::Embedded(_)) => {
                    retry = RETRY_MIN;
                    None
                }
                Ok(Step::Failed) => Some(retry),
                Err(err) => {
                    tracing::debug!(error = %err, "embedding pending memories: the database failed");
                    Some(retry)
                }
            };
            if let Some(wait) = wait {
                retry = (retry * 2).min(RETRY_MAX);
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = shutdown.cancelled() => return,
                }
                continue;
            }
            tokio::select! {
                () = self.wake.notified() => {}
                () = tokio::time::sleep(IDLE_LOOK) => {}
                () = shutdown.cancelled() => return,
            }
        }
    }

    fn answered(&self) {
        let was_down = self.lock().down_since.take().is_some();
        if was_down {
            tracing::info!(
                model = %self.model().name,
                "the embedding endpoint answers again; recall uses meaning and full text"
            );
        }
    }

    fn failed(&self, stage: &str, err: &EmbedError) {
        if let Some(failures) = &self.failures {
            failures.with_label_values(&[stage]).inc();
        }
        let first = {
            let mut health = self.lock();
            let first = health.down_since.is_none();
            health.down_since = Some(Instant::now());
            first
        };
        if first {
            tracing::warn!(
                model = %self.model().name,
                error = %err,
                "the embedding endpoint failed; recall is by full text alone, and memories saved meanwhile are embedded once it answers"
            );
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Health> {
        // A panic while holding it cannot leave the health half-written.
        self.health
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The first [`MAX_CHARS`] characters of `text`.
fn head(text: &str) -> &str {
    text.char_indices()
        .nth(MAX_CHARS)
        .map_or(text, |(at, _)| &text[..at])
}
