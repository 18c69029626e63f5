//! The ordered inbound buffer between serenity's handlers and the sink. serenity runs every
//! gateway event's handler on a task of its own and Discord never redelivers an event, so a
//! store that fails for a while must not lose events nor let a later one overtake them:
//!
//! - a handler takes a numbered place (a [`Slot`]) as the first thing it does, before any
//!   await, in the order serenity started the handlers (the order events arrived on the
//!   socket);
//! - it then fills the place with the normalised event, or leaves it empty when the event
//!   is ignored;
//! - one writer stores places strictly in order; a failing store is retried with backoff
//!   (capped at [`MAX_BACKOFF`]) while later events wait behind it, the channel reports
//!   not ready meanwhile, and the outage is logged once when it starts and once when it ends.
//!
//! The buffer is bounded ([`CAPACITY`] places): past that a handler waits for a place (in
//! turn, the queue is fair), so a long outage holds events in waiting tasks rather than
//! dropping any. Only the end of the process loses what is held.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use switchboard_channel::{Backoff, ChannelEvent, Delivery, EventSink, SinkError};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Places in the buffer; a handler past this many waits for room.
pub(crate) const CAPACITY: usize = 4096;
/// First wait after a failed store; doubled per failure in a row.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// Longest wait between two attempts, so a recovered store is noticed within it.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// An event waiting in the buffer, and who (a button press) wants to know how it went.
struct Pending {
    event: ChannelEvent,
    outcome: Option<oneshot::Sender<Delivery>>,
}

/// A handler's place in line. Dropping it unfilled lets the writer move past it.
pub(crate) struct Slot {
    fill: oneshot::Sender<Pending>,
}

impl Slot {
    /// Fill the place; the writer stores the event when every earlier one is stored.
    pub(crate) fn put(self, event: ChannelEvent) {
        if refused_id(&event) {
            return; // an empty place: the writer moves on
        }
        let _ = self.fill.send(Pending {
            event,
            outcome: None,
        });
    }

    /// Fill the place and wait until the event is stored; `None` when the process is
    /// stopping and the event will not be stored.
    pub(crate) async fn put_and_wait(self, event: ChannelEvent) -> Option<Delivery> {
        if refused_id(&event) {
            return None;
        }
        let (tx, rx) = oneshot::channel();
        let pending = Pending {
            event,
            outcome: Some(tx),
        };
        self.fill.send(pending).ok()?;
        rx.await.ok()
    }
}

/// Ids the inbox cannot key on (empty, or with a control character) are refused here, once,
/// rather than retried by the writer for ever.
fn refused_id(event: &ChannelEvent) -> bool {
    let Err(bad) = event.check_ids() else {
        return false;
    };
    tracing::warn!(reason = %bad, "refused a Discord event with a bad id");
    true
}

/// The handlers' end of the buffer (cheap to clone: one per gateway client).
#[derive(Clone)]
pub(crate) struct InboundBuffer {
    places: mpsc::Sender<oneshot::Receiver<Pending>>,
}

impl InboundBuffer {
    /// Start the writer storing into `sink` until `shutdown`; `outage` is where the channel's
    /// health reads a standing store failure.
    pub(crate) fn start(
        name: &str,
        sink: Arc<dyn EventSink>,
        outage: Arc<Outage>,
        shutdown: CancellationToken,
    ) -> Self {
        let (places, rx) = mpsc::channel(CAPACITY);
        let writer = Writer {
            name: name.to_owned(),
            sink,
            outage,
        };
        tokio::spawn(writer.run(rx, shutdown));
        Self { places }
    }

    /// Take the next place in line (waiting, in turn, while the buffer is full); `None` once
    /// the writer has stopped.
    pub(crate) async fn reserve(&self) -> Option<Slot> {
        let (fill, filled) = oneshot::channel();
        self.places.send(filled).await.ok()?;
        Some(Slot { fill })
    }

    /// Take the next place in line now, or `None` when the buffer is full or stopped (for
    /// callers that cannot wait).
    pub(crate) fn try_reserve(&self) -> Option<Slot> {
        let (fill, filled) = oneshot::channel();
        self.places.try_send(filled).ok()?;
        Some(Slot { fill })
    }
}

/// A standing store failure, read by `health()`; a std Mutex: every access is a short,
/// await-free read or write.
#[derive(Debug, Default)]
pub(crate) struct Outage(Mutex<Option<String>>);

impl Outage {
    /// Why storing fails right now, if it does.
    pub(crate) fn current(&self) -> Option<String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set(&self, why: Option<String>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = why;
    }
}

/// The single task that stores places in order.
struct Writer {
    name: String,
    sink: Arc<dyn EventSink>,
    outage: Arc<Outage>,
}

impl Writer {
    async fn run(
        self,
        mut places: mpsc::Receiver<oneshot::Receiver<Pending>>,
        stop: CancellationToken,
    ) {
        loop {
            let place = tokio::select! {
                () = stop.cancelled() => return,
                place = places.recv() => place,
            };
            let Some(place) = place else { return };
            // An empty place (dropped slot) is an ignored event: move on.
            let Ok(pending) = place.await else { continue };
            let Some(delivery) = self.store(&pending.event, &stop).await else {
                return;
            };
            if let Some(outcome) = pending.outcome {
                let _ = outcome.send(delivery);
            }
        }
    }

    /// Store one event, retrying until it is stored; `None` when stopped first.
    async fn store(&self, event: &ChannelEvent, stop: &CancellationToken) -> Option<Delivery> {
        let mut backoff = Backoff::new(FIRST_BACKOFF, MAX_BACKOFF);
        let mut failing_since: Option<Instant> = None;
        loop {
            match self.sink.deliver(event.clone()).await {
                Ok(delivery) => {
                    if let Some(since) = failing_since {
                        self.recovered(since);
                    }
                    return Some(delivery);
                }
                Err(err) => {
                    if failing_since.is_none() {
                        failing_since = Some(Instant::now());
                        self.failing(event, &err);
                    }
                }
            }
            tokio::select! {
                () = stop.cancelled() => {
                    tracing::error!(channel = %self.name, event_id = event.event_id(),
                        "stopping while Discord events wait to be stored; they are lost (the gateway does not redeliver)");
                    return None;
                }
                () = tokio::time::sleep(backoff.next_delay()) => {}
            }
        }
    }

    /// The first failure of an outage: one log line, and the channel turns not ready.
    fn failing(&self, event: &ChannelEvent, err: &SinkError) {
        tracing::error!(
            channel = %self.name, error = %err, event_id = event.event_id(),
            "could not store a Discord event; holding it and every later event in order, retrying until the store recovers"
        );
        self.outage
            .set(Some(format!("storing inbound events fails: {err}")));
    }

    /// The outage is over: one log line, and the channel's health is the gateway's again.
    fn recovered(&self, since: Instant) {
        tracing::info!(channel = %self.name, after = ?since.elapsed(), "storing Discord events works again; held events follow in order");
        self.outage.set(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use switchboard_channel::{ConversationKey, Inbound, Place, UserRef};

    /// A sink that fails while `down`, recording what it stored.
    #[derive(Default)]
    struct Flaky {
        down: AtomicBool,
        stored: Mutex<Vec<String>>,
    }

    #[async_trait::async_trait]
    impl EventSink for Flaky {
        async fn deliver(&self, event: ChannelEvent) -> Result<Delivery, SinkError> {
            if self.down.load(Ordering::SeqCst) {
                return Err(SinkError("down (test)".into()));
            }
            self.stored
                .lock()
                .unwrap()
                .push(event.event_id().to_owned());
            Ok(Delivery::Stored)
        }
    }

    fn event(id: &str) -> ChannelEvent {
        ChannelEvent::Message(Inbound {
            key: ConversationKey::new("discord", "1"),
            event_id: id.into(),
            user: UserRef {
                id: "u".into(),
                name: None,
            },
            text: "hi".into(),
            place: Place::Direct,
            attachments: Vec::new(),
        })
    }

    #[tokio::test(start_paused = true)]
    async fn events_filled_out_of_order_are_stored_in_place_order_across_an_outage() {
        let sink = Arc::new(Flaky::default());
        sink.down.store(true, Ordering::SeqCst);
        let outage = Arc::new(Outage::default());
        let stop = CancellationToken::new();
        let buffer = InboundBuffer::start("discord", sink.clone(), outage.clone(), stop.clone());
        let first = buffer.reserve().await.unwrap();
        let ignored = buffer.reserve().await.unwrap();
        let third = buffer.reserve().await.unwrap();
        third.put(event("m3"));
        drop(ignored);
        first.put(event("m1"));
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(
            outage.current().is_some(),
            "not ready while the store fails"
        );
        assert!(sink.stored.lock().unwrap().is_empty());
        sink.down.store(false, Ordering::SeqCst);
        tokio::time::sleep(MAX_BACKOFF * 2).await;
        assert_eq!(*sink.stored.lock().unwrap(), ["m1", "m3"]);
        assert!(outage.current().is_none(), "ready again");
        stop.cancel();
    }
}
