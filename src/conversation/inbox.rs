//! The `EventSink` channels deliver into: classify the event once, store it with its inbox
//! kind, then wake the conversation. Storing comes first so nothing acknowledged is lost.

use std::sync::Arc;

use async_trait::async_trait;
use switchboard_channel::{ChannelEvent, Delivery, EventSink, SinkError};

use super::Registry;
use crate::command::{Command, Intent};
use crate::store::Insert;

/// The sink feeding the conversation registry.
pub struct Inbox {
    registry: Arc<Registry>,
}

impl Inbox {
    /// A sink feeding `registry`.
    pub fn new(registry: Arc<Registry>) -> Arc<Self> {
        Arc::new(Self { registry })
    }

    fn count(&self, event: &ChannelEvent, outcome: &str) {
        let channel = event.key().channel.as_str();
        self.registry
            .deps
            .metrics
            .inbound
            .with_label_values(&[channel, outcome])
            .inc();
    }
}

#[async_trait]
impl EventSink for Inbox {
    async fn deliver(&self, mut event: ChannelEvent) -> Result<Delivery, SinkError> {
        let deps = &self.registry.deps;
        // Nothing is stored unscrubbed, not even the event waiting in the inbox.
        if let ChannelEvent::Message(message) = &mut event {
            deps.outbound.scrubber().scrub_string(&mut message.text);
        }
        let intent = Intent::of(&event);
        let now = deps.lifecycle.clock().now_ms();
        let inserted = deps
            .store
            .insert_event(&event, intent.kind(), now)
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "inbox insert failed; the platform will redeliver");
                self.count(&event, "error");
                SinkError(e.to_string())
            })?;
        match inserted {
            Insert::Duplicate => {
                self.count(&event, "duplicate");
                tracing::debug!(event_id = event.event_id(), "duplicate event dropped");
                Ok(Delivery::Duplicate)
            }
            Insert::Stored(_) => {
                self.count(&event, "stored");
                if intent == Intent::Command(Command::Stop) {
                    // /stop must not wait behind the turn it is meant to stop.
                    self.registry.cancel_turn(event.key());
                }
                self.registry.wake(event.key());
                Ok(Delivery::Stored)
            }
        }
    }
}
