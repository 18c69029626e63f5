//! The `Channel` implementation the gateway holds: configuration in, the receive loop
//! (polling or webhook) started from `start`/`routes`, and outbound calls handed to `Client`.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use switchboard_channel::{
    Attachment, ButtonPress, Channel, ChannelError, ConversationKey, EventSink, FileError, Health,
    LengthUnit, Limits, MessageRef, Outbound, OutboundFile, VoiceNote,
};
use tokio_util::sync::CancellationToken;

use crate::client::Client;
use crate::config::{Mode, TelegramConfig};
use crate::{poll, webhook};

/// Longest message Telegram accepts, in UTF-16 code units after entity parsing.
pub const MAX_MESSAGE_UTF16: usize = 4096;

/// One configured Telegram bot.
pub struct TelegramChannel {
    client: Arc<Client>,
}

impl TelegramChannel {
    /// Build channel `name` from its settings; the error names the setting to fix.
    pub fn new(name: &str, config: TelegramConfig) -> Result<Self, String> {
        if !config.token.is_set() {
            return Err(format!("channels.{name}.token is not set"));
        }
        if let Some(first) = config.problems().first() {
            return Err(format!("channels.{name}.{first}"));
        }
        Ok(Self {
            client: Arc::new(Client::new(name, config)?),
        })
    }

    /// Show `msg` as the streaming draft `draft_id` (Bot API `sendMessageDraft`) in `key`.
    ///
    /// `Ok(false)` when `draft_transport` is not `"draft"`, the chat is not private, or
    /// drafts failed once before: the caller then streams with [`Channel::send`] and
    /// [`Channel::edit`]. The final answer must always be posted with `send`, since a draft
    /// disappears. The core reaches it through [`Channel::draft`].
    pub async fn send_draft(
        &self,
        key: &ConversationKey,
        draft_id: u64,
        msg: &Outbound,
    ) -> Result<bool, ChannelError> {
        self.client.send_draft(key, draft_id, msg).await
    }
}

#[async_trait]
impl Channel for TelegramChannel {
    fn name(&self) -> &str {
        &self.client.name
    }

    fn max_attachment_bytes(&self) -> u64 {
        self.client.config.max_attachment_bytes
    }

    async fn download(&self, file: &Attachment, max_bytes: u64) -> Result<Vec<u8>, FileError> {
        self.client.download(file, max_bytes).await
    }

    async fn send_file(
        &self,
        key: &ConversationKey,
        file: &OutboundFile,
    ) -> Result<MessageRef, FileError> {
        self.client.send_file(key, file).await
    }

    async fn send_voice(
        &self,
        key: &ConversationKey,
        voice: &VoiceNote,
    ) -> Result<MessageRef, FileError> {
        self.client.send_voice(key, voice).await
    }

    fn limits(&self) -> Limits {
        Limits {
            max_message_len: MAX_MESSAGE_UTF16,
            length_unit: LengthUnit::Utf16,
            min_edit_interval: Duration::from_secs(1),
            rate_per_window: 1,
            rate_window: Duration::from_secs(1),
            supports_buttons: true,
            ..Limits::default()
        }
    }

    fn limits_for(&self, key: &ConversationKey) -> Limits {
        if key.chat.starts_with('-') {
            // Groups: about 20 messages a minute per chat.
            Limits {
                rate_per_window: 20,
                rate_window: Duration::from_secs(60),
                ..self.limits()
            }
        } else {
            self.limits()
        }
    }

    async fn draft(
        &self,
        key: &ConversationKey,
        draft_id: u64,
        msg: &Outbound,
    ) -> Result<bool, ChannelError> {
        self.send_draft(key, draft_id, msg).await
    }

    async fn start(
        &self,
        sink: Arc<dyn EventSink>,
        shutdown: CancellationToken,
    ) -> Result<(), ChannelError> {
        let client = Arc::clone(&self.client);
        match client.config.mode {
            Mode::Polling => poll::run(client, sink, shutdown).await,
            Mode::Webhook => webhook::register(client, shutdown).await,
        }
    }

    /// Polling must run once (a second `getUpdates` gets 409), and in webhook mode only the
    /// leader registers the webhook; every replica still serves the webhook route.
    fn leader_role(&self) -> Option<String> {
        Some(format!("telegram:{}", self.client.name))
    }

    fn routes(&self, sink: Arc<dyn EventSink>) -> Option<axum::Router> {
        (self.client.config.mode == Mode::Webhook)
            .then(|| webhook::router(Arc::clone(&self.client), sink))
    }

    async fn send(
        &self,
        key: &ConversationKey,
        msg: &Outbound,
    ) -> Result<MessageRef, ChannelError> {
        self.client.send(key, msg).await
    }

    async fn edit(
        &self,
        key: &ConversationKey,
        msg_ref: &MessageRef,
        msg: &Outbound,
    ) -> Result<(), ChannelError> {
        self.client.edit(key, msg_ref, msg).await
    }

    async fn delete(
        &self,
        key: &ConversationKey,
        msg_ref: &MessageRef,
    ) -> Result<(), ChannelError> {
        self.client.delete(key, msg_ref).await
    }

    async fn typing(&self, key: &ConversationKey) -> Result<(), ChannelError> {
        self.client.typing(key).await
    }

    async fn answer_button(&self, press: &ButtonPress, text: &str) -> Result<(), ChannelError> {
        self.client.answer_button(press, text).await
    }

    fn health(&self) -> Health {
        self.client
            .health
            .report(self.client.config.mode, self.client.stale_after())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn channel() -> TelegramChannel {
        TelegramChannel::new(
            "telegram",
            TelegramConfig::new("123456:TEST-not-a-real-token"),
        )
        .expect("valid config")
    }

    #[test]
    fn private_chats_get_one_message_a_second_and_groups_twenty_a_minute() {
        let channel = channel();
        let private = channel.limits_for(&ConversationKey::new("telegram", "42"));
        assert_eq!(
            (private.rate_per_window, private.rate_window),
            (1, Duration::from_secs(1))
        );
        assert_eq!(private.max_message_len, 4096);
        assert_eq!(private.length_unit, LengthUnit::Utf16);
        assert!(private.supports_buttons);
        let group = channel.limits_for(&ConversationKey::new("telegram", "-100123"));
        assert_eq!(
            (group.rate_per_window, group.rate_window),
            (20, Duration::from_secs(60))
        );
        assert_eq!(group.min_edit_interval, Duration::from_secs(1));
    }

    #[test]
    fn polling_mode_mounts_no_routes_and_webhook_mode_needs_its_settings() {
        struct Nowhere;
        #[async_trait]
        impl EventSink for Nowhere {
            async fn deliver(
                &self,
                _: switchboard_channel::ChannelEvent,
            ) -> Result<switchboard_channel::Delivery, switchboard_channel::SinkError> {
                Err(switchboard_channel::SinkError("unused".into()))
            }
        }
        assert!(channel().routes(Arc::new(Nowhere)).is_none());
        let mut config = TelegramConfig::new("123456:TEST-not-a-real-token");
        config.mode = Mode::Webhook;
        assert!(TelegramChannel::new("telegram", config).is_err());
    }

    #[test]
    fn a_bad_allowed_users_entry_fails_construction() {
        let mut config = TelegramConfig::new("123456:TEST-not-a-real-token");
        config.allowed_users = vec!["two words".into()];
        let err = TelegramChannel::new("tg", config).err().expect("refused");
        assert!(err.contains("channels.tg.allowed_users"), "{err}");
    }
}
