//! The state one Discord channel shares between its halves: `DiscordChannel` (see `channel`),
//! the gateway's event handler (see `gateway`) and the press guards. It sits below both
//! halves, so the receive loop and the `Channel` implementation each depend on it and not
//! on each other; it holds the bot's id, its health and the thread-parent cache.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use switchboard_channel::{Health, Recent};

use crate::api::RestApi;
use crate::buffer::Outage;
use crate::config::DiscordConfig;
use crate::presses::{DEFER_AFTER, Presses};

/// How many channels' thread parents are remembered.
const PARENTS_CAP: usize = 1024;

/// State shared by the channel, its gateway handler and its press guards.
pub(crate) struct Inner {
    pub(crate) name: String,
    pub(crate) config: DiscordConfig,
    /// One connection pool for serenity's gateway discovery and our REST calls.
    pub(crate) http: reqwest::Client,
    pub(crate) api: Arc<RestApi>,
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

/// A not-ready health with `detail`.
pub(crate) fn not_ready(detail: impl Into<String>) -> Health {
    Health {
        ready: false,
        detail: detail.into(),
        last_ok: None,
    }
}

impl Inner {
    /// The state of a channel named `name` for `config`, not started yet.
    pub(crate) fn new(name: &str, config: DiscordConfig) -> Self {
        let http = RestApi::client();
        let api = Arc::new(RestApi::new(
            name,
            &config.api_url,
            config.token.expose().unwrap_or_default(),
            http.clone(),
        ));
        Self {
            name: name.to_owned(),
            presses: Presses::new(Arc::clone(&api), DEFER_AFTER),
            config,
            http,
            api,
            bot_id: OnceLock::new(),
            health: Mutex::new(not_ready("not started")),
            outage: Arc::default(),
            parents: Mutex::new(Recent::new(PARENTS_CAP)),
        }
    }

    pub(crate) fn bot_id(&self) -> Option<&str> {
        self.bot_id.get().map(String::as_str)
    }

    /// Remember the bot's id once the token is checked. A second start keeps the first id:
    /// it is the same token.
    pub(crate) fn learn_bot_id(&self, id: String) {
        let _ = self.bot_id.set(id);
    }

    pub(crate) fn set_health(&self, health: Health) {
        *self.health.lock().unwrap_or_else(PoisonError::into_inner) = health;
    }

    /// The gateway's health, unless a store outage makes the channel not ready.
    pub(crate) fn health(&self) -> Health {
        let gateway = self
            .health
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match self.outage.current() {
            Some(outage) => Health {
                ready: false,
                detail: outage,
                last_ok: gateway.last_ok,
            },
            None => gateway,
        }
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
