//! The `Channel` implementation the gateway holds: the sync loop started from `start` on the
//! leader, outbound calls handed to `Client`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use switchboard_channel::{
    Attachment, ButtonPress, Channel, ChannelError, ConversationKey, EventSink, FileError, Health,
    LengthUnit, Limits, MessageRef, Outbound, OutboundFile, VoiceNote,
};
use tokio_util::sync::CancellationToken;

use crate::client::Client;
use crate::config::MatrixConfig;

/// Longest message sent, in characters of rendered text. An event may be 64 KiB of JSON and
/// an edit carries the text three times (fallback, markdown, HTML); this keeps any text,
/// however many bytes its characters take, inside that.
pub const MAX_MESSAGE_CHARS: usize = 4000;

/// One Matrix account.
pub struct MatrixChannel {
    client: Arc<Client>,
}

impl MatrixChannel {
    /// Build channel `name` from its settings, keeping its session and stores in `dir`;
    /// the error names the setting to fix.
    pub fn new(name: &str, config: MatrixConfig, dir: PathBuf) -> Result<Self, String> {
        if !config.password.is_set() && !config.access_token.is_set() {
            return Err(format!(
                "channels.{name}: neither password nor access_token is set"
            ));
        }
        if let Some(first) = config.problems().first() {
            return Err(format!("channels.{name}.{first}"));
        }
        Ok(Self {
            client: Arc::new(Client::new(name, config, dir)?),
        })
    }
}

#[async_trait]
impl Channel for MatrixChannel {
    fn name(&self) -> &str {
        &self.client.name
    }

    fn limits(&self) -> Limits {
        // Synapse's default message rate is 0.2/s with a burst of 10; edits count.
        Limits {
            max_message_len: MAX_MESSAGE_CHARS,
            length_unit: LengthUnit::Chars,
            min_edit_interval: Duration::from_millis(1000),
            rate_per_window: 12,
            rate_window: Duration::from_secs(60),
            supports_buttons: true,
            ..Limits::default()
        }
    }

    async fn start(
        &self,
        sink: Arc<dyn EventSink>,
        shutdown: CancellationToken,
    ) -> Result<(), ChannelError> {
        crate::sync::run(Arc::clone(&self.client), sink, shutdown).await
    }

    /// One sync loop per account: the SDK's stores are one process's.
    fn leader_role(&self) -> Option<String> {
        Some(format!("matrix:{}", self.client.name))
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

    /// Matrix has no message only one person sees: a refused press is answered in a
    /// thread under the prompt, addressed to the presser, and the prompt's choices stay.
    async fn answer_privately(&self, press: &ButtonPress, text: &str) -> Result<(), ChannelError> {
        let about = press.message.as_ref().map(|m| m.id.as_str());
        self.client
            .notice(&press.key, about, &press.user.id, text)
            .await
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

    fn health(&self) -> Health {
        self.client.health()
    }
}
