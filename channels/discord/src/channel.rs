//! `DiscordChannel`: the `Channel` implementation the core holds. `start` checks the token
//! (`GET /users/@me`), then runs the serenity gateway (see `gateway`) until shutdown; outbound
//! it renders markdown for Discord and calls REST (see `api`); button answers go through
//! `presses`, which also keeps Discord's 3-second deadline.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use switchboard_channel::{
    Attachment, ButtonPress, Channel, ChannelError, ConversationKey, CredentialCheck, EventSink,
    FileError, Health, LengthUnit, Limits, MessageRef, Outbound, OutboundFile,
    authenticate_until_ok,
};
use tokio_util::sync::CancellationToken;

use crate::api::RestApi;
use crate::buffer::Outage;
use crate::config::DiscordConfig;
use crate::gateway;
use crate::outbound::{MAX_MESSAGE_CHARS, message_body};
use crate::presses::{DEFER_AFTER, Presses};
use switchboard_channel::Recent;

/// How many channels' thread parents are remembered.
const PARENTS_CAP: usize = 1024;

/// One configured Discord bot: gateway in, REST out.
pub struct DiscordChannel {
    inner: Arc<Inner>,
}

/// State shared by the channel, its gateway handler and its press guards.
pub(crate) struct Inner {
    pub(crate) name: String,
    pub(crate) config: DiscordConfig,
    /// One connection pool for serenity's gateway discovery and our REST calls.
    pub(crate) http: reqwest::Client,
    api: Arc<RestApi>,
    pub(crate) presses: Presses,
    /// Set once `GET /users/@me` answers; read on every event, hence a lock-free cell.
    bot_id: OnceLock<String>,
    health: Mutex<Health>,
    /// A standing failure to store inbound events (held in order meanwhile); not ready
    /// while it lasts, whatever the gateway says.
    pub(crate) outage: Arc<Outage>,
    /// Channel id → its parent when it is a thread (`None`: not a thread).
    parents: Mutex<Recent<Option<String>>>,
}

impl DiscordChannel {
    /// A channel named `name` (the `channel` of its conversation keys) for `config`.
    pub fn new(name: &str, config: DiscordConfig) -> Self {
        let http = RestApi::client();
        let api = Arc::new(RestApi::new(
            name,
            &config.api_url,
            config.token.expose().unwrap_or_default(),
            http.clone(),
        ));
        Self {
            inner: Arc::new(Inner {
                name: name.to_owned(),
                presses: Presses::new(Arc::clone(&api), DEFER_AFTER),
                config,
                http,
                api,
                bot_id: OnceLock::new(),
                health: Mutex::new(not_ready("not started")),
                outage: Arc::default(),
                parents: Mutex::new(Recent::new(PARENTS_CAP)),
            }),
        }
    }

    /// The bot's own user id, once `start` has checked the token.
    pub fn bot_user_id(&self) -> Option<&str> {
        self.inner.bot_id()
    }
}

/// A not-ready health with `detail`.
pub(crate) fn not_ready(detail: impl Into<String>) -> Health {
    Health {
        ready: false,
        detail: detail.into(),
        last_ok: None,
    }
}

impl Inner {
    pub(crate) fn bot_id(&self) -> Option<&str> {
        self.bot_id.get().map(String::as_str)
    }

    pub(crate) fn set_health(&self, health: Health) {
        *self.health.lock().unwrap_or_else(PoisonError::into_inner) = health;
    }

    /// Take the gateway's latest state, logging when it goes down or comes back.
    pub(crate) fn observe_gateway(&self, mut health: Health) {
        let mut current = self.health.lock().unwrap_or_else(PoisonError::into_inner);
        match (current.ready, health.ready) {
            (true, false) => {
                tracing::warn!(channel = %self.name, detail = %health.detail, "Discord gateway disconnected")
            }
            (false, true) => {
                tracing::info!(channel = %self.name, detail = %health.detail, "Discord gateway connected")
            }
            _ => {}
        }
        if !health.ready {
            health.last_ok = current.last_ok;
        }
        *current = health;
    }

    /// The parent of a guild `channel` when the allowlists need it and it is a thread;
    /// asked once per channel. A failed lookup counts as "not a thread" and is asked again.
    pub(crate) async fn parent_if_needed(&self, in_guild: bool, channel: &str) -> Option<String> {
        if !in_guild || !self.config.needs_parent(channel) {
            return None;
        }
        let known = self
            .parents
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(channel);
        if let Some(parent) = known {
            return parent;
        }
        match self.api.thread_parent(channel).await {
            Ok(parent) => {
                let mut parents = self.parents.lock().unwrap_or_else(PoisonError::into_inner);
                parents.insert(channel.to_owned(), parent.clone());
                parent
            }
            Err(e) => {
                tracing::debug!(channel = %self.name, chat = channel, error = %e, "could not look up a thread's parent");
                None
            }
        }
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

    fn limits(&self) -> Limits {
        Limits {
            max_message_len: MAX_MESSAGE_CHARS,
            length_unit: LengthUnit::Chars,
            min_edit_interval: Duration::from_secs(1),
            rate_per_window: 5,
            rate_window: Duration::from_secs(5),
            supports_buttons: true,
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
        // A second start keeps the first id: it is the same token.
        let _ = self.inner.bot_id.set(me.id);
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
        let gateway = self
            .inner
            .health
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match self.inner.outage.current() {
            Some(outage) => Health {
                ready: false,
                detail: outage,
                last_ok: gateway.last_ok,
            },
            None => gateway,
        }
    }
}
