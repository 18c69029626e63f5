//! `WhatsAppChannel`: the `Channel` implementation the core holds. Inbound it mounts (or
//! joins) the webhook route of its path; outbound it sends through the Graph API. WhatsApp
//! cannot edit or delete a sent message, so its `Limits` ask the draft for finished pieces
//! instead of a live draft, and the typing indicator shows that an answer is coming.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;
use switchboard_channel::{
    AnswerDelivery, Attachment, ButtonPress, Channel, ChannelError, ConversationKey, EventSink,
    FileError, Health, LengthUnit, Limits, MessageRef, Outbound, OutboundFile, Target, VoiceNote,
    render,
};
use tokio_util::sync::CancellationToken;

use crate::config::WhatsAppConfig;
use crate::hub::Hub;
use crate::outbound::{MAX_TEXT_CHARS, addressed};
use crate::state::Inner;
use crate::webhook;

/// Longest message text WhatsApp accepts.
pub const MAX_MESSAGE_CHARS: usize = MAX_TEXT_CHARS;
/// Characters of finished paragraphs that wait before a piece of an answer goes out.
const MIN_CHUNK_CHARS: usize = 600;

/// One WhatsApp business number: webhooks in, Graph API out.
pub struct WhatsAppChannel {
    inner: Arc<Inner>,
}

impl WhatsAppChannel {
    /// A channel named `name` for `config`.
    pub fn new(name: &str, config: WhatsAppConfig) -> Self {
        Self {
            inner: Arc::new(Inner::new(name, config)),
        }
    }
}

#[async_trait]
impl Channel for WhatsAppChannel {
    fn name(&self) -> &str {
        &self.inner.name
    }

    fn limits(&self) -> Limits {
        Limits {
            max_message_len: MAX_MESSAGE_CHARS,
            length_unit: LengthUnit::Chars,
            min_edit_interval: Duration::ZERO,
            // Meta's pair limit: about one message every six seconds to one person, with
            // short bursts allowed.
            rate_per_window: 10,
            rate_window: Duration::from_secs(60),
            supports_buttons: true,
            delivery: AnswerDelivery::Chunks {
                min_chunk: MIN_CHUNK_CHARS,
            },
        }
    }

    async fn start(
        &self,
        _sink: Arc<dyn EventSink>,
        shutdown: CancellationToken,
    ) -> Result<(), ChannelError> {
        shutdown.cancelled().await;
        Ok(())
    }

    fn routes(&self, sink: Arc<dyn EventSink>) -> Option<axum::Router> {
        Hub::join(&sink, &self.inner).map(webhook::router)
    }

    async fn send(
        &self,
        key: &ConversationKey,
        msg: &Outbound,
    ) -> Result<MessageRef, ChannelError> {
        self.inner.send_outbound(&key.chat, msg).await
    }

    /// WhatsApp has no edits; the draft never asks for one (`AnswerDelivery::Chunks`).
    async fn edit(
        &self,
        _key: &ConversationKey,
        _msg_ref: &MessageRef,
        _msg: &Outbound,
    ) -> Result<(), ChannelError> {
        Err(ChannelError::Fatal(
            "WhatsApp cannot edit a sent message".into(),
        ))
    }

    /// WhatsApp's Cloud API cannot delete a sent message either.
    async fn delete(
        &self,
        _key: &ConversationKey,
        _msg_ref: &MessageRef,
    ) -> Result<(), ChannelError> {
        Err(ChannelError::Fatal(
            "WhatsApp cannot delete a sent message".into(),
        ))
    }

    async fn typing(&self, key: &ConversationKey) -> Result<(), ChannelError> {
        self.inner.typing(&key.chat).await
    }

    /// A press cannot change the message it came from: the outcome goes out as a reply to it.
    async fn answer_button(&self, press: &ButtonPress, text: &str) -> Result<(), ChannelError> {
        let mut body = json!({"type": "text", "text": {"body": render(text, Target::WhatsApp)}});
        if let Some(message) = &press.message {
            body["context"] = json!({"message_id": message.id});
        }
        let body = addressed(&press.key.chat, body);
        self.inner
            .api
            .send(body)
            .await
            .map(drop)
            .map_err(Into::into)
    }

    fn max_attachment_bytes(&self) -> u64 {
        self.inner.config.max_attachment_bytes
    }

    async fn download(&self, file: &Attachment, max_bytes: u64) -> Result<Vec<u8>, FileError> {
        self.inner.download(file, max_bytes).await
    }

    async fn send_file(
        &self,
        key: &ConversationKey,
        file: &OutboundFile,
    ) -> Result<MessageRef, FileError> {
        self.inner.send_file(&key.chat, file).await
    }

    async fn send_voice(
        &self,
        key: &ConversationKey,
        voice: &VoiceNote,
    ) -> Result<MessageRef, FileError> {
        self.inner.send_voice(&key.chat, voice).await
    }

    fn undelivered(&self) -> Vec<(&'static str, u64)> {
        self.inner.undelivered()
    }

    fn health(&self) -> Health {
        self.inner.health()
    }
}
