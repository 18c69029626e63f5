//! `DiscordChannel`: the `Channel` implementation the core holds. `start` checks the token
//! (`GET /users/@me`), then runs the serenity gateway (see `gateway`) until shutdown; outbound
//! it renders markdown for Discord and calls REST (see `api`); button answers go through
//! `presses`, which also keeps Discord's 3-second deadline.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use switchboard_channel::{
    Attachment, ButtonPress, Channel, ChannelError, ConversationKey, CredentialCheck, EventSink,
    FileError, Health, LengthUnit, Limits, MessageRef, Outbound, OutboundFile, VoiceNote,
    authenticate_until_ok,
};
use tokio_util::sync::CancellationToken;

use crate::config::DiscordConfig;
use crate::gateway;
use crate::outbound::{MAX_MESSAGE_CHARS, message_body};
use crate::state::{Inner, not_ready};

/// One configured Discord bot: gateway in, REST out.
pub struct DiscordChannel {
    inner: Arc<Inner>,
}

impl DiscordChannel {
    /// A channel named `name` (the `channel` of its conversation keys) for `config`.
    pub fn new(name: &str, config: DiscordConfig) -> Self {
        Self {
            inner: Arc::new(Inner::new(name, config)),
        }
    }

    /// The bot's own user id, once `start` has checked the token.
    pub fn bot_user_id(&self) -> Option<&str> {
        self.inner.bot_id()
    }
}

/// Where a key's messages go: the thread when one is named (a thread is a channel), else `chat`.
fn target(key: &ConversationKey) -> &str {
    key.thread.as_deref().unwrap_or(&key.chat)
}

#[async_trait]
impl Channel for DiscordChannel {
    fn name(&self) -> &str {
        &self.inner.name
    }

    fn max_attachment_bytes(&self) -> u64 {
        self.inner.config.max_attachment_bytes
    }

    async fn download(&self, file: &Attachment, max_bytes: u64) -> Result<Vec<u8>, FileError> {
        self.inner.api.download(file, max_bytes).await
    }

    async fn send_file(
        &self,
        key: &ConversationKey,
        file: &OutboundFile,
    ) -> Result<MessageRef, FileError> {
        self.inner.api.send_file(key, file).await
    }

    async fn send_voice(
        &self,
        key: &ConversationKey,
        voice: &VoiceNote,
    ) -> Result<MessageRef, FileError> {
        self.inner.api.send_voice(key, voice).await
    }

    fn limits(&self) -> Limits {
        Limits {
            max_message_len: MAX_MESSAGE_CHARS,
            length_unit: LengthUnit::Chars,
            min_edit_interval: Duration::from_secs(1),
            rate_per_window: 5,
            rate_window: Duration::from_secs(5),
            supports_buttons: true,
            ..Limits::default()
        }
    }

    /// One replica runs the gateway with all shards; a fail-over is a fresh IDENTIFY.
    fn leader_role(&self) -> Option<String> {
        Some(format!("discord:{}", self.inner.name))
    }

    async fn start(
        &self,
        sink: Arc<dyn EventSink>,
        shutdown: CancellationToken,
    ) -> Result<(), ChannelError> {
        self.inner
            .set_health(not_ready("checking the token (GET /users/@me)"));
        let inner = &self.inner;
        let refused = format!("; check token in [channels.{}]", inner.name);
        let check = CredentialCheck {
            channel: &inner.name,
            what: "token check",
            on_refusal: &refused,
        };
        let authenticated = authenticate_until_ok(
            &check,
            move || inner.api.current_user(),
            |health| inner.set_health(health),
            &shutdown,
        );
        let Some(me) = authenticated.await? else {
            return Ok(());
        };
        tracing::info!(channel = %self.inner.name, bot = %me.username, id = %me.id, "Discord bot authenticated");
        self.inner.learn_bot_id(me.id);
        self.inner.set_health(not_ready("gateway connecting"));
        gateway::run(Arc::clone(&self.inner), sink, shutdown).await
    }

    async fn send(
        &self,
        key: &ConversationKey,
        msg: &Outbound,
    ) -> Result<MessageRef, ChannelError> {
        let body = message_body(msg, false, self.inner.config.link_previews)?;
        let id = self.inner.api.create_message(target(key), &body).await?;
        Ok(MessageRef::new(id))
    }

    async fn edit(
        &self,
        key: &ConversationKey,
        msg_ref: &MessageRef,
        msg: &Outbound,
    ) -> Result<(), ChannelError> {
        let body = message_body(msg, true, self.inner.config.link_previews)?;
        self.inner
            .api
            .edit_message(target(key), &msg_ref.id, &body)
            .await
    }

    async fn delete(
        &self,
        key: &ConversationKey,
        msg_ref: &MessageRef,
    ) -> Result<(), ChannelError> {
        self.inner
            .api
            .delete_message(target(key), &msg_ref.id)
            .await
    }

    async fn typing(&self, key: &ConversationKey) -> Result<(), ChannelError> {
        self.inner.api.typing(target(key)).await
    }

    /// See `presses` for how `text` is shown: a text starting with "Not yours" is an
    /// ephemeral reply to the presser alone; anything else goes under the message's text and
    /// its buttons are removed.
    async fn answer_button(&self, press: &ButtonPress, text: &str) -> Result<(), ChannelError> {
        self.inner.presses.answer(press, text).await
    }

    fn health(&self) -> Health {
        self.inner.health()
    }
}
