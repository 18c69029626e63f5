//! The sink a leading receive loop is given: events go to the gateway's inbox unchanged;
//! the cursor is read and saved in the `leaders` row under this replica's term, and a
//! step-down (Telegram's 409) ends the term.

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use switchboard_channel::{ChannelEvent, ConversationKey, Delivery, EventSink, SinkError};
use tokio_util::sync::CancellationToken;

use super::lease::Lease;

/// The inbox, seen by the leader of one role during one term.
pub(crate) struct TermSink {
    /// The gateway's inbox.
    pub(crate) inner: Arc<dyn EventSink>,
    /// The role's lease, to fence the cursor with.
    pub(crate) lease: Lease,
    /// The term this sink writes under.
    pub(crate) term: i64,
    /// Cancelled when the term ends; stops the receive loop.
    pub(crate) lost: CancellationToken,
    /// Why the loop gave up its leadership, when it did (a 409 Conflict).
    pub(crate) stepped_down: Arc<Mutex<Option<String>>>,
}

#[async_trait]
impl EventSink for TermSink {
    async fn deliver(&self, event: ChannelEvent) -> Result<Delivery, SinkError> {
        self.inner.deliver(event).await
    }

    async fn knows_conversation(&self, key: &ConversationKey) -> Result<bool, SinkError> {
        self.inner.knows_conversation(key).await
    }

    async fn cursor(&self) -> Result<Option<i64>, SinkError> {
        self.lease
            .cursor()
            .await
            .map_err(|e| SinkError(e.to_string()))
    }

    async fn save_cursor(&self, cursor: i64) -> Result<(), SinkError> {
        if self.lost.is_cancelled() {
            return Err(SinkError("this replica no longer leads".into()));
        }
        match self.lease.save_cursor(self.term, cursor).await {
            Ok(true) => Ok(()),
            Ok(false) => {
                self.lost.cancel();
                Err(SinkError(format!(
                    "the lease of {} under term {} is gone",
                    self.lease.role, self.term
                )))
            }
            Err(err) => Err(SinkError(err.to_string())),
        }
    }

    fn step_down(&self, why: &str) {
        tracing::warn!(role = %self.lease.role, term = self.term, "stepping down: {why}");
        *self
            .stepped_down
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(why.to_owned());
        self.lost.cancel();
    }
}
