//! The state one Slack channel shares between `SlackChannel` (see `channel`) and its webhook
//! routes (see `webhook`): the bot's user id, health, the blocks of pressed messages and the
//! threads known to have a conversation. It sits below both, so the routes and the `Channel`
//! implementation each depend on it and not on each other.

use std::sync::{Mutex, OnceLock, PoisonError};

use serde_json::{Value, json};
use switchboard_channel::{ChannelError, ConversationKey, EventSink, Health, Recent, SinkError};

use crate::api::WebApi;
use crate::config::SlackConfig;

/// How many pressed messages' blocks are remembered for `answer_button`.
const PRESSED_CAP: usize = 512;
/// How many threads the bot is known to be part of are remembered without asking the store.
const KNOWN_THREADS_CAP: usize = 4096;

/// State shared by the channel and its webhook routes.
pub(crate) struct Inner {
    pub(crate) name: String,
    pub(crate) config: SlackConfig,
    pub(crate) api: WebApi,
    /// Set once `auth.test` answers; read on every event, hence a lock-free cell.
    bot_user_id: OnceLock<String>,
    health: Mutex<Health>,
    /// Blocks of messages whose buttons were pressed, so an answer replaces only the buttons.
    pressed: Mutex<Recent<Vec<Value>>>,
    /// Threads with a conversation, so a reply there skips the store lookup. Only what is
    /// known goes in: a thread joins the gateway's conversations and never leaves them (a
    /// `/new` keeps the conversation), while an unknown thread may become known any time,
    /// on another replica too, so it is asked again.
    known_threads: Mutex<Recent<()>>,
}

impl Inner {
    /// The state of a channel named `name` for `config`, waiting for `auth.test`.
    pub(crate) fn new(name: &str, config: SlackConfig) -> Self {
        let token = config.bot_token.expose().unwrap_or_default();
        let api = WebApi::new(name, &config.api_url, token);
        let health = Health {
            ready: false,
            detail: "waiting for auth.test".to_owned(),
            last_ok: None,
        };
        Self {
            name: name.to_owned(),
            config,
            api,
            bot_user_id: OnceLock::new(),
            health: Mutex::new(health),
            pressed: Mutex::new(Recent::new(PRESSED_CAP)),
            known_threads: Mutex::new(Recent::new(KNOWN_THREADS_CAP)),
        }
    }

    pub(crate) fn bot_user_id(&self) -> Option<&str> {
        self.bot_user_id.get().map(String::as_str)
    }

    /// Remember the bot's user id once `auth.test` answered. A second start keeps the first
    /// id: it is the same token.
    pub(crate) fn learn_bot_user_id(&self, id: String) {
        let _ = self.bot_user_id.set(id);
    }

    /// Remember the blocks of a message whose buttons were pressed.
    pub(crate) fn remember_pressed(&self, chat: &str, ts: &str, blocks: Vec<Value>) {
        let mut pressed = self.pressed.lock().unwrap_or_else(PoisonError::into_inner);
        pressed.insert(format!("{chat}:{ts}"), blocks);
    }

    /// The blocks remembered for the message `ts` in `chat`, if still held.
    pub(crate) fn pressed_blocks(&self, chat: &str, ts: &str) -> Option<Vec<Value>> {
        let pressed = self.pressed.lock().unwrap_or_else(PoisonError::into_inner);
        pressed.get(&format!("{chat}:{ts}"))
    }

    /// Whether the gateway has conversation `key` (the bot was mentioned in that thread or
    /// answers there): remembered, else asked of the sink (the store, so it survives a
    /// restart and is shared by replicas).
    pub(crate) async fn knows(
        &self,
        sink: &dyn EventSink,
        key: &ConversationKey,
    ) -> Result<bool, SinkError> {
        let text = key.to_string();
        if self.threads().get(&text).is_some() {
            return Ok(true);
        }
        let known = sink.knows_conversation(key).await?;
        if known {
            self.threads().insert(text, ());
        }
        Ok(known)
    }

    /// Note that conversation `key` exists (an event of it was just stored).
    pub(crate) fn remember(&self, key: &ConversationKey) {
        if key.thread.is_some() {
            self.threads().insert(key.to_string(), ());
        }
    }

    fn threads(&self) -> std::sync::MutexGuard<'_, Recent<()>> {
        self.known_threads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn set_health(&self, health: Health) {
        *self.health.lock().unwrap_or_else(PoisonError::into_inner) = health;
    }

    pub(crate) fn health(&self) -> Health {
        self.health
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// One `auth.test` call: the bot's user id.
    pub(crate) async fn authenticate(&self) -> Result<String, ChannelError> {
        let reply = self.api.call("auth.test", &json!({})).await?;
        reply
            .user_id
            .ok_or_else(|| ChannelError::Transient("auth.test answered without user_id".into()))
    }
}
