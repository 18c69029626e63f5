//! What the receive loop, the inbound reader and the outbound calls share: the settings, the
//! JSON-RPC client, the prompts' choices, the stream's health and recent texts; and sending
//! (or editing) one message, rendered with its style ranges and its choices' line.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{Value, json};
use switchboard_channel::choices;
use switchboard_channel::{ChannelError, ConversationKey, Health, Outbound, Recent};

use crate::config::SignalConfig;
use crate::prompts::Prompts;
use crate::rpc::Rpc;
use crate::style;

/// The prefix of a group's `ConversationKey::chat`, before its base64 id.
pub(crate) const GROUP: &str = "group.";

/// Texts of recent messages remembered, for quotes and edits.
const REMEMBERED: usize = 512;

/// What the receive loop, the inbound reader and the outbound calls share.
pub(crate) struct Shared {
    pub(crate) name: String,
    pub(crate) config: SignalConfig,
    /// The gateway's data directory: the prompts' record and the stream's position.
    pub(crate) data_dir: PathBuf,
    pub(crate) rpc: Rpc,
    pub(crate) prompts: Prompts,
    /// The stream's state, for `/readyz`.
    pub(crate) health: Mutex<Health>,
    /// Recent texts by `sender:timestamp`, as last edited: what a quote of them shows.
    texts: Mutex<Recent<String>>,
    /// How often the supervised daemon (`command`) exited, and why it last did.
    daemon: Mutex<(u32, String)>,
    /// The account's ACI (UUID), asked of the daemon once the stream opens: a mention or a
    /// quote may name the bot by it alone, even when `account` is its number.
    aci: Mutex<Option<String>>,
}

impl Shared {
    /// The state of channel `name`, its prompts' choices read from under `data_dir`.
    pub(crate) fn new(name: &str, config: SignalConfig, data_dir: &Path) -> Result<Self, String> {
        Ok(Self {
            name: name.to_owned(),
            data_dir: data_dir.to_owned(),
            rpc: Rpc::new(&config.daemon_url, &config.account)?,
            prompts: Prompts::open(data_dir, name),
            health: Mutex::new(Health {
                ready: false,
                detail: "not connected to signal-cli yet".into(),
                last_ok: None,
            }),
            texts: Mutex::new(Recent::new(REMEMBERED)),
            aci: Mutex::new(None),
            daemon: Mutex::new((0, String::new())),
            config,
        })
    }

    /// Shared state for `config` without a daemon, for the readers' unit tests.
    #[cfg(test)]
    pub(crate) fn for_tests(config: SignalConfig, data_dir: &Path) -> Self {
        let mut shared = Self::new("signal", config, data_dir).expect("a client");
        shared.health = Mutex::new(Health::ready("test"));
        shared
    }

    /// Set the account's ACI, as the daemon would tell it, for the readers' unit tests.
    #[cfg(test)]
    pub(crate) fn set_aci(&self, aci: &str) {
        *self.aci_lock() = Some(aci.to_owned());
    }

    /// Whether `who` (a number or an ACI) is the bot's own account.
    pub(crate) fn is_bot(&self, who: &str) -> bool {
        who.eq_ignore_ascii_case(&self.config.account)
            || self
                .aci_lock()
                .as_deref()
                .is_some_and(|aci| who.eq_ignore_ascii_case(aci))
    }

    /// Learn the account's ACI from the daemon (`getUserStatus` of the account itself), once.
    /// Until it is known, only mentions and quotes that carry the number are recognised; a
    /// failure is tried again when the stream is next opened.
    pub(crate) async fn learn_aci(&self) {
        if self.aci_lock().is_some() {
            return;
        }
        let account = self.config.account.clone();
        let aci = if crate::config::is_uuid(&account) {
            Some(account)
        } else {
            match self
                .rpc
                .call("getUserStatus", json!({ "recipient": [account] }))
                .await
            {
                Ok(result) => result
                    .as_array()
                    .and_then(|all| all.iter().find_map(|s| s["uuid"].as_str()))
                    .map(str::to_owned),
                Err(failure) => {
                    tracing::debug!(channel = %self.name, ?failure, "the account's ACI is not known yet");
                    None
                }
            }
        };
        *self.aci_lock() = aci;
    }

    fn aci_lock(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.aci
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The id a person is known by: their ACI when `allowed_users` names it, otherwise their
    /// number when Signal shares it, otherwise their ACI.
    pub(crate) fn user_id(&self, number: Option<&str>, uuid: Option<&str>) -> Option<String> {
        let listed = |id: &str| {
            self.config
                .allowed_users
                .iter()
                .any(|u| u.eq_ignore_ascii_case(id))
        };
        match (number, uuid) {
            (_, Some(uuid)) if listed(uuid) => Some(uuid.to_owned()),
            (Some(number), _) => Some(number.to_owned()),
            (None, uuid) => uuid.map(str::to_owned),
        }
    }

    pub(crate) fn remember(&self, key: &str, text: &str) {
        self.texts_lock().insert(key.to_owned(), text.to_owned());
    }

    pub(crate) fn recalled(&self, key: &str) -> Option<String> {
        self.texts_lock().get(key).filter(|t| !t.is_empty())
    }

    pub(crate) fn forget(&self, key: &str) {
        self.texts_lock().insert(key.to_owned(), String::new());
    }

    fn texts_lock(&self) -> std::sync::MutexGuard<'_, Recent<String>> {
        self.texts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The supervised daemon exited, for this reason (with its last output).
    pub(crate) fn daemon_exited(&self, why: &str) {
        let mut daemon = self
            .daemon
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        daemon.0 += 1;
        why.clone_into(&mut daemon.1);
    }

    /// The stream's health, with the supervised daemon's exits when it had any.
    pub(crate) fn health(&self) -> Health {
        let mut health = self
            .health
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let daemon = self
            .daemon
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if daemon.0 > 0 {
            health.detail = format!(
                "{} (signal-cli restarted {} time(s); it last {})",
                health.detail, daemon.0, daemon.1
            );
        }
        health
    }

    pub(crate) fn set_health(&self, health: Health) {
        *self
            .health
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = health;
    }

    /// `params` addressed to conversation `key`: a group or a person.
    fn to(key: &ConversationKey, mut params: Value) -> Value {
        match key.chat.strip_prefix(GROUP) {
            Some(group) => params["groupId"] = json!(group),
            None => params["recipient"] = json!([key.chat]),
        }
        params
    }

    pub(crate) async fn call(
        &self,
        key: &ConversationKey,
        method: &str,
        params: Value,
    ) -> Result<Value, ChannelError> {
        if let Some(refused) = self.rpc.refusal(&key.chat) {
            return Err(refused);
        }
        self.rpc
            .call(method, Self::to(key, params))
            .await
            .map_err(|f| self.rpc.to_channel_error(f, &key.chat))
    }

    /// Send (or, with `edit`, replace) `msg` in `key`; the message's timestamp.
    pub(crate) async fn post(
        &self,
        key: &ConversationKey,
        msg: &Outbound,
        edit: Option<u64>,
    ) -> Result<u64, ChannelError> {
        let offered = choices::choices(&msg.buttons);
        let markdown = if offered.is_empty() {
            msg.text.clone()
        } else {
            format!("{}\n\n{}", msg.text, choices::hint(&offered))
        };
        let styled = style::render(&markdown);
        let mut params = json!({ "message": styled.text });
        if !styled.styles.is_empty() {
            params["textStyle"] = json!(styled.styles);
        }
        if let Some(original) = edit {
            params["editTimestamp"] = json!(original);
        }
        let result = self.call(key, "send", params).await?;
        let sent = edit
            .or_else(|| result["timestamp"].as_u64())
            .ok_or_else(|| {
                ChannelError::Transient("signal-cli answered a send without a timestamp".into())
            })?;
        // A prompt's choices are kept; an edit that takes a prompt's buttons away clears them.
        // A streamed edit of an ordinary message writes nothing.
        if !offered.is_empty() || (edit.is_some() && self.prompts.get(sent).is_some()) {
            self.prompts.insert(sent, offered);
        }
        Ok(sent)
    }
}
