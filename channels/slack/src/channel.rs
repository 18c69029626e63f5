//! `SlackChannel`: the `Channel` implementation the core holds. Inbound it mounts the
//! webhook routes (see `webhook`); outbound it renders markdown to mrkdwn and calls the Web
//! API; `start` learns the bot's own user id with `auth.test` and then idles until shutdown.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use switchboard_channel::{
    Attachment, ButtonPress, Channel, ChannelError, ConversationKey, CredentialCheck, EventSink,
    FileError, Health, LengthUnit, Limits, MessageRef, Outbound, OutboundFile, Target,
    authenticate_until_ok, render,
};
use tokio_util::sync::CancellationToken;

use crate::blocks;
use crate::config::SlackConfig;
use crate::state::Inner;
use crate::webhook;

/// Longest message text Slack accepts.
pub const MAX_MESSAGE_CHARS: usize = 40_000;

/// One configured Slack app: Events API webhooks in, Web API out.
pub struct SlackChannel {
    inner: Arc<Inner>,
}

impl SlackChannel {
    /// A channel named `name` (its routes are `/slack/<name>/…`) for `config`.
    pub fn new(name: &str, config: SlackConfig) -> Self {
        Self {
            inner: Arc::new(Inner::new(name, config)),
        }
    }

    /// The bot's own user id, once `start` has called `auth.test`.
    pub fn bot_user_id(&self) -> Option<&str> {
        self.inner.bot_user_id()
    }
}

#[async_trait]
impl Channel for SlackChannel {
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

    fn limits(&self) -> Limits {
        Limits {
            max_message_len: MAX_MESSAGE_CHARS,
            length_unit: LengthUnit::Chars,
            min_edit_interval: Duration::from_secs(1),
            rate_per_window: 1,
            rate_window: Duration::from_secs(1),
            supports_buttons: true,
            ..Limits::default()
        }
    }

    async fn start(
        &self,
        _sink: Arc<dyn EventSink>,
        shutdown: CancellationToken,
    ) -> Result<(), ChannelError> {
        let inner = &self.inner;
        let check = CredentialCheck {
            channel: &inner.name,
            what: "auth.test",
            on_refusal: "",
        };
        let authenticated = authenticate_until_ok(
            &check,
            move || inner.authenticate(),
            |health| inner.set_health(health),
            &shutdown,
        );
        let Some(bot_user_id) = authenticated.await? else {
            return Ok(());
        };
        tracing::info!(channel = %self.inner.name, %bot_user_id, "Slack bot authenticated");
        let detail = format!("events webhook; bot {bot_user_id}");
        self.inner.learn_bot_user_id(bot_user_id);
        self.inner.set_health(Health::ready(detail));
        shutdown.cancelled().await;
        Ok(())
    }

    fn routes(&self, sink: Arc<dyn EventSink>) -> Option<axum::Router> {
        Some(webhook::router(Arc::clone(&self.inner), sink))
    }

    async fn send(
        &self,
        key: &ConversationKey,
        msg: &Outbound,
    ) -> Result<MessageRef, ChannelError> {
        let mut body = message_body(key, msg, false);
        if let Some(thread) = &key.thread {
            body["thread_ts"] = json!(thread);
        }
        // No preview unless the channel opted in: a preview fetches a link with no click.
        let previews = self.inner.config.link_previews;
        body["unfurl_links"] = json!(previews);
        body["unfurl_media"] = json!(previews);
        let reply = self.inner.api.call("chat.postMessage", &body).await?;
        reply
            .ts
            .map(MessageRef::new)
            .ok_or_else(|| ChannelError::Transient("chat.postMessage answered without ts".into()))
    }

    async fn edit(
        &self,
        key: &ConversationKey,
        msg_ref: &MessageRef,
        msg: &Outbound,
    ) -> Result<(), ChannelError> {
        let mut body = message_body(key, msg, true);
        body["ts"] = json!(msg_ref.id);
        self.inner.api.call("chat.update", &body).await.map(drop)
    }

    async fn delete(
        &self,
        key: &ConversationKey,
        msg_ref: &MessageRef,
    ) -> Result<(), ChannelError> {
        let body = json!({"channel": key.chat, "ts": msg_ref.id});
        self.inner.api.call("chat.delete", &body).await.map(drop)
    }

    async fn answer_button(&self, press: &ButtonPress, text: &str) -> Result<(), ChannelError> {
        let Some(message) = &press.message else {
            return Ok(()); // nothing to update: Slack always names the message for buttons
        };
        let outcome = render(text, Target::SlackMrkdwn);
        let earlier = self.inner.pressed_blocks(&press.key.chat, &message.id);
        let body = json!({
            "channel": press.key.chat,
            "ts": message.id,
            "text": outcome,
            "blocks": blocks::answered(earlier, &outcome),
        });
        self.inner.api.call("chat.update", &body).await.map(drop)
    }

    /// `chat.postEphemeral`: only the presser sees it, and the buttons stay.
    async fn answer_privately(&self, press: &ButtonPress, text: &str) -> Result<(), ChannelError> {
        let mut body = json!({
            "channel": press.key.chat,
            "user": press.user.id,
            "text": render(text, Target::SlackMrkdwn),
        });
        if let Some(thread) = &press.key.thread {
            body["thread_ts"] = json!(thread);
        }
        self.inner
            .api
            .call("chat.postEphemeral", &body)
            .await
            .map(drop)
    }

    fn health(&self) -> Health {
        self.inner.health()
    }
}

/// The `chat.postMessage` / `chat.update` body for `msg`. An edit always names its blocks:
/// Slack keeps the old ones (and their buttons) when `blocks` is left out.
fn message_body(key: &ConversationKey, msg: &Outbound, is_edit: bool) -> Value {
    let text = render(&msg.text, Target::SlackMrkdwn);
    let mut body = json!({"channel": key.chat});
    if !msg.buttons.is_empty() {
        body["blocks"] = json!(blocks::with_buttons(&text, &msg.buttons));
    } else if is_edit {
        body["blocks"] = json!([]);
    }
    body["text"] = json!(text);
    body
}
