//! A bound on one provider's calls in flight. Past its limit, a call waits until one in
//! flight ends (its whole stream, not just the request) in the order the calls came: tokio's
//! semaphore is fair. Every model and profile using one provider name shares one bound, so
//! the figure is what that endpoint sees. A burst of conversations then holds the limit's
//! worth of connections and response buffers, and the rest wait as small queued requests.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{ChatRequest, EventStream, Provider, ProviderError};

/// The calls in flight to one provider, and those waiting for their turn.
#[derive(Debug)]
pub struct InFlight {
    gate: Arc<Semaphore>,
    limit: usize,
    waiting: AtomicUsize,
}

impl InFlight {
    /// A bound of `limit` calls at once (at least one).
    pub fn new(limit: usize) -> Arc<Self> {
        let limit = limit.max(1);
        Arc::new(Self {
            gate: Arc::new(Semaphore::new(limit)),
            limit,
            waiting: AtomicUsize::new(0),
        })
    }

    /// How many calls may be in flight at once.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Calls in flight now.
    pub fn in_flight(&self) -> usize {
        self.limit.saturating_sub(self.gate.available_permits())
    }

    /// Calls waiting for one in flight to end.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    /// Wait for a place; `None` only if the gate were closed, which it never is.
    async fn enter(&self) -> Option<OwnedSemaphorePermit> {
        self.waiting.fetch_add(1, Ordering::Relaxed);
        // Counted down however the wait ends, a cancelled turn included.
        let _queued = Queued(&self.waiting);
        Arc::clone(&self.gate).acquire_owned().await.ok()
    }
}

/// One waiting call, uncounted when dropped.
struct Queued<'a>(&'a AtomicUsize);

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A provider whose calls pass its name's [`InFlight`] bound.
pub struct Limited {
    inner: Arc<dyn Provider>,
    bound: Arc<InFlight>,
}

impl Limited {
    /// `inner`'s calls, at most `bound`'s limit at once.
    pub fn new(inner: Arc<dyn Provider>, bound: Arc<InFlight>) -> Self {
        Self { inner, bound }
    }
}

#[async_trait]
impl Provider for Limited {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn stream(&self, request: &ChatRequest) -> Result<EventStream, ProviderError> {
        let place = self.bound.enter().await;
        let stream = self.inner.stream(request).await?;
        Ok(stream.holding(place))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::sync::mpsc;

    use super::*;
    use crate::provider::{StopReason, StreamEvent, Usage};

    /// A provider whose every stream is fed by the test through the sender it hands out.
    struct Held(mpsc::UnboundedSender<mpsc::Sender<Result<StreamEvent, ProviderError>>>);

    #[async_trait]
    impl Provider for Held {
        fn name(&self) -> &str {
            "held"
        }

        async fn stream(&self, _: &ChatRequest) -> Result<EventStream, ProviderError> {
            let (tx, rx) = mpsc::channel(4);
            let _ = self.0.send(tx);
            Ok(EventStream::new(rx))
        }
    }

    fn done() -> Result<StreamEvent, ProviderError> {
        Ok(StreamEvent::Done {
            stop_reason: StopReason::EndTurn,
            usage: Usage::default(),
        })
    }

    #[tokio::test]
    async fn past_the_limit_a_call_waits_for_a_stream_to_end_and_calls_go_in_order() {
        let (streams, mut opened) = mpsc::unbounded_channel();
        let bound = InFlight::new(2);
        let provider = Arc::new(Limited::new(Arc::new(Held(streams)), Arc::clone(&bound)));
        let request = ChatRequest::default();
        let mut first = provider.stream(&request).await.unwrap();
        let _second = provider.stream(&request).await.unwrap();
        assert_eq!((bound.in_flight(), bound.waiting()), (2, 0));

        let (order_tx, mut order) = mpsc::unbounded_channel();
        for n in [3, 4] {
            let (provider, request, order_tx) =
                (Arc::clone(&provider), request.clone(), order_tx.clone());
            tokio::spawn(async move {
                // The stream goes to the test, which keeps it (and its place) open.
                let stream = provider.stream(&request).await.unwrap();
                let _ = order_tx.send((n, stream));
            });
            // Each queues before the next is started, so the order is theirs.
            while bound.waiting() < n - 2 {
                tokio::task::yield_now().await;
            }
        }
        assert_eq!((bound.in_flight(), bound.waiting()), (2, 2));
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(
            order.try_recv().is_err(),
            "no third call while two are in flight"
        );

        // The first stream's Done frees its place: the third call goes, the fourth waits.
        let feed = opened.recv().await.unwrap();
        feed.send(done()).await.unwrap();
        assert!(matches!(
            first.next().await,
            Some(Ok(StreamEvent::Done { .. }))
        ));
        let (third, _open) = order.recv().await.unwrap();
        assert_eq!(third, 3);
        assert_eq!((bound.in_flight(), bound.waiting()), (2, 1));
        drop(first);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(order.try_recv().is_err(), "the fourth still waits");
    }

    #[tokio::test]
    async fn a_dropped_stream_and_a_cancelled_wait_give_their_places_back() {
        let (streams, _opened) = mpsc::unbounded_channel();
        let bound = InFlight::new(1);
        let provider = Limited::new(Arc::new(Held(streams)), Arc::clone(&bound));
        let request = ChatRequest::default();
        let stream = provider.stream(&request).await.unwrap();
        let waited =
            tokio::time::timeout(Duration::from_millis(20), provider.stream(&request)).await;
        assert!(waited.is_err(), "the second call waits for the first");
        assert_eq!(
            (bound.in_flight(), bound.waiting()),
            (1, 0),
            "the cancelled wait is not counted"
        );
        drop(stream);
        assert_eq!(bound.in_flight(), 0);
        let _again = provider.stream(&request).await.unwrap();
        assert_eq!(bound.in_flight(), 1);
    }
}
