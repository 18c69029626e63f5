//! The `EventSink` channels deliver into: decide access (a refused or pairing event is
//! acknowledged and never stored), classify the event once, store it with its inbox kind,
//! then wake the conversation. Storing comes first so nothing acknowledged is lost.

use std::sync::Arc;

use async_trait::async_trait;
use switchboard_channel::{ChannelEvent, ConversationKey, Delivery, EventSink, SinkError};

use super::Registry;
use crate::access::{Admission, pairing_reply};
use crate::command::{Command, Intent};
use crate::store::{Insert, Refusal};

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

    /// Whether `event` may enter the inbox; a refusal is logged and a new pairing code sent.
    async fn admitted(&self, event: &ChannelEvent) -> Result<bool, SinkError> {
        let deps = &self.registry.deps;
        let verdict = deps.access.decide(event).await.map_err(|e| {
            tracing::error!(error = %e, "access check failed; the platform will redeliver");
            self.count(event, "error");
            SinkError(e.to_string())
        })?;
        let (key, user) = (event.key(), &event.user().id);
        match verdict {
            Admission::Admit => return Ok(true),
            Admission::Refuse(why) => {
                tracing::info!(%key, user, "refused an event: {why}");
            }
            Admission::Pair(None) => {
                tracing::debug!(%key, user, "a stranger wrote again; their code is still pending");
            }
            Admission::Pair(Some(code)) => {
                tracing::warn!(
                    %key, user,
                    "a stranger asked for access; `switchboard access pending` lists them"
                );
                self.send_pairing_reply(event, &code).await;
            }
        }
        self.count(event, "refused");
        Ok(false)
    }

    /// The one reply a stranger gets, through the core's outbound path (scrubbed, governed).
    async fn send_pairing_reply(&self, event: &ChannelEvent, code: &str) {
        let out = &self.registry.deps.outbound;
        let key = event.key();
        let Some(route) = out.route(&key.channel) else {
            return;
        };
        let text = pairing_reply(&key.channel, code);
        if let Err(err) = out.post(&route, key, &text, Vec::new()).await {
            tracing::warn!(%key, error = %err, "could not send the pairing code");
        }
    }
}

impl Inbox {
    /// On a shared database, tell the other replicas about an event for a conversation this
    /// one does not reach (a web chat whose tab is open on another replica): the store
    /// announces an event only while someone holds its conversation, and this replica's own
    /// actor leaves the event to the replica that reaches the chat.
    async fn announce_elsewhere(&self, key: &ConversationKey) {
        let deps = &self.registry.deps;
        let reached = (deps.outbound.route(&key.channel)).is_none_or(|r| r.reaches(key));
        if deps.lifecycle.leases().is_none() || reached {
            return;
        }
        if let Err(err) = deps.store.notify_conversation(key).await {
            // The other replicas' poll finds it, and this one takes it after a lease TTL.
            tracing::warn!(%key, error = %err, "could not announce an event to other replicas");
        }
    }
}

#[async_trait]
impl EventSink for Inbox {
    async fn deliver(&self, mut event: ChannelEvent) -> Result<Delivery, SinkError> {
        if !self.admitted(&event).await? {
            return Ok(Delivery::Refused);
        }
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
                if Refusal::of(&e).is_some() {
                    // The store said it once at ERROR, with the fix; not again per event.
                    tracing::warn!(error = %e, "inbox insert refused; the platform will redeliver");
                } else {
                    tracing::error!(error = %e, "inbox insert failed; the platform will redeliver");
                }
                self.count(&event, "error");
                SinkError(e.to_string())
            })?;
        match inserted {
            Insert::Duplicate => {
                self.count(&event, "duplicate");
                tracing::debug!(event_id = event.event_id(), "duplicate event dropped");
                // The first delivery may have been stored by an insert whose answer was lost
                // (a cut connection, a timeout: answered 5xx, woke nobody); waking is cheap.
                self.registry.wake(event.key());
                Ok(Delivery::Duplicate)
            }
            Insert::Stored(_) => {
                self.count(&event, "stored");
                if intent == Intent::Command(Command::Stop) {
                    // /stop must not wait behind the turn it is meant to stop.
                    self.registry.cancel_turn(event.key());
                }
                self.registry.wake(event.key());
                self.announce_elsewhere(event.key()).await;
                Ok(Delivery::Stored)
            }
        }
    }

    async fn knows_conversation(&self, key: &ConversationKey) -> Result<bool, SinkError> {
        self.registry
            .deps
            .store
            .knows_conversation(key)
            .await
            .map_err(|e| {
                tracing::error!(%key, error = %e, "could not look up a conversation; the platform will redeliver");
                SinkError(e.to_string())
            })
    }
}
