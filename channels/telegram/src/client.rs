//! The state every part of the channel shares: the teloxide `Bot` pointed at `api_url`, the
//! bot's identity (from `getMe`, learned once), access rules, health and the draft fallback.
//! The poller, the webhook route and the outbound calls all hold one `Arc<Client>`. It sits
//! below the parts that use it: `files`, `inbound`, `outbound` and `draft` add their own
//! `impl Client` blocks, and nothing here reaches back up into them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use switchboard_channel::{ChannelError, ConversationKey};
use teloxide::prelude::Requester;
use teloxide::types::{ChatId, MessageId, ThreadId};
use teloxide::{Bot, RequestError};
use tokio::sync::OnceCell;

use crate::access;
use crate::config::TelegramConfig;
use crate::errors::Failure;
use crate::health::HealthState;

/// Extra time the HTTP client waits beyond the long-poll timeout before giving up.
const HTTP_MARGIN: Duration = Duration::from_secs(15);

/// Who the bot is, learned from `getMe`, for mention and reply detection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BotIdentity {
    pub(crate) id: u64,
    pub(crate) username: String,
}

/// Whether `sendMessageDraft` still works for this channel (see `draft`).
#[derive(Debug, Default)]
pub(crate) struct DraftState {
    /// Set on the first failure; the bot (or its Bot API server) does not support drafts.
    unavailable: AtomicBool,
}

impl DraftState {
    /// Whether a draft already failed, so edit-in-place is used instead.
    pub(crate) fn unavailable(&self) -> bool {
        self.unavailable.load(Ordering::Relaxed)
    }

    /// Stop trying drafts for the life of the channel.
    pub(crate) fn mark_unavailable(&self) {
        self.unavailable.store(true, Ordering::Relaxed);
    }
}

/// Everything one channel instance shares between its tasks.
pub(crate) struct Client {
    pub(crate) name: String,
    pub(crate) config: TelegramConfig,
    pub(crate) bot: Bot,
    identity: OnceCell<BotIdentity>,
    pub(crate) health: HealthState,
    pub(crate) drafts: DraftState,
}

impl Client {
    /// Build the client for channel `name`; the settings must already be valid.
    pub(crate) fn new(name: &str, config: TelegramConfig) -> Result<Self, String> {
        access::usernames(&config.allowed_users)
            .map_err(|e| format!("channels.{name}.allowed_users {e}"))?;
        // teloxide's default client gives up after 17 s, shorter than a 30 s long poll.
        let http = teloxide::net::default_reqwest_settings()
            .timeout(Duration::from_secs(config.poll_timeout_secs.into()) + HTTP_MARGIN)
            .build()
            .map_err(|e| format!("channels.{name}: cannot build the HTTP client: {e}"))?;
        let api_url = config
            .api_url
            .parse()
            .map_err(|e| format!("channels.{name}.api_url is not a URL: {e}"))?;
        let token = config.token.expose().unwrap_or_default().to_owned();
        let bot = Bot::with_client(token, http).set_api_url(api_url);
        Ok(Self {
            name: name.to_owned(),
            bot,
            identity: OnceCell::new(),
            health: HealthState::default(),
            drafts: DraftState::default(),
            config,
        })
    }

    /// Who the bot is; asks `getMe` the first time and remembers the answer.
    pub(crate) async fn identity(&self) -> Result<&BotIdentity, Failure> {
        self.identity
            .get_or_try_init(|| async {
                let me = self.bot.get_me().await.map_err(|e| self.failure(&e))?;
                let username = me.user.username.clone().unwrap_or_default();
                tracing::info!(channel = %self.name, bot = %username, "connected to Telegram");
                Ok(BotIdentity {
                    id: me.user.id.0,
                    username,
                })
            })
            .await
    }

    /// Sort a teloxide error, with the token scrubbed from any text.
    pub(crate) fn failure(&self, err: &RequestError) -> Failure {
        Failure::classify(err, self.config.token.expose().unwrap_or_default())
    }

    /// The core's error for a failed `method` call (in conversation `key`, when there is
    /// one), logging the setting to fix when retrying cannot help.
    pub(crate) fn channel_error(
        &self,
        method: &str,
        key: Option<&ConversationKey>,
        failure: Failure,
    ) -> ChannelError {
        let chat = key.map_or("-", |k| k.chat.as_str());
        match &failure {
            Failure::Unauthorized => tracing::error!(
                channel = %self.name,
                method,
                "Telegram rejected the bot token (401): check channels.{}.token (BotFather /token)",
                self.name
            ),
            Failure::Forbidden(detail) => tracing::error!(
                channel = %self.name,
                method,
                chat,
                "Telegram refused (403): {detail}; the user blocked the bot, or the bot was \
                 removed from the chat or may not post there (check its rights in that chat)"
            ),
            _ => {}
        }
        failure.into_channel_error(method)
    }

    /// How long polling stays healthy without a successful `getUpdates`.
    pub(crate) fn stale_after(&self) -> Duration {
        Duration::from_secs(2 * u64::from(self.config.poll_timeout_secs) + 10)
    }
}

/// Where a conversation lives on Telegram: the chat, and the forum topic when there is one.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Target {
    pub(crate) chat: ChatId,
    pub(crate) thread: Option<ThreadId>,
}

impl Target {
    /// Parse a conversation key this channel produced.
    pub(crate) fn of(key: &ConversationKey) -> Result<Self, ChannelError> {
        let chat = key
            .chat
            .parse::<i64>()
            .map_err(|_| ChannelError::Fatal(format!("{key}: not a Telegram chat id")))?;
        let thread = match &key.thread {
            Some(thread) => Some(ThreadId(MessageId(thread.parse::<i32>().map_err(
                |_| ChannelError::Fatal(format!("{key}: not a Telegram topic id")),
            )?))),
            None => None,
        };
        Ok(Self {
            chat: ChatId(chat),
            thread,
        })
    }

    /// Private chats have positive ids; groups and channels negative ones.
    pub(crate) fn is_private(self) -> bool {
        self.chat.0 > 0
    }
}

/// Parse a message reference this channel returned.
pub(crate) fn message_id(
    key: &ConversationKey,
    msg_ref: &switchboard_channel::MessageRef,
) -> Result<MessageId, ChannelError> {
    msg_ref.id.parse::<i32>().map(MessageId).map_err(|_| {
        ChannelError::Fatal(format!(
            "{key}: {:?} is not a Telegram message id",
            msg_ref.id
        ))
    })
}
