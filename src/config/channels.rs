//! Per-platform `[channels.<name>]` settings as the core reads them (secrets as [`Secret`],
//! `${VAR}` resolved); `channels.rs` turns them into each channel crate's own config.

use serde::Deserialize;

use super::{EnvString, Secret};

/// `kind = "telegram"`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelegramSettings {
    /// Bot token from BotFather.
    pub token: Secret,
    /// Bot API base (a self-hosted Bot API server or a test stand-in may replace it).
    #[serde(default = "default_telegram_api")]
    pub api_url: EnvString,
    /// `polling` (default) or `webhook`.
    #[serde(default = "default_mode")]
    pub mode: String,
    /// Public HTTPS URL of `/telegram/<name>` (webhook mode).
    pub webhook_url: Option<EnvString>,
    /// Secret Telegram sends with every webhook call (webhook mode).
    #[serde(default)]
    pub secret_token: Secret,
    /// User ids or usernames allowed to talk to the bot; `["*"]` = everyone, empty = nobody.
    #[serde(default)]
    pub allowed_users: Vec<String>,
    /// In groups, answer only when mentioned, replied to, or addressed with /command@bot.
    #[serde(default = "yes")]
    pub require_mention_in_groups: bool,
    /// `edit` (default) or `draft` (see the Telegram channel README).
    #[serde(default = "default_transport")]
    pub draft_transport: String,
    /// Long-poll timeout of getUpdates.
    #[serde(default = "default_poll_timeout")]
    pub poll_timeout_secs: u32,
}

fn default_telegram_api() -> EnvString {
    EnvString("https://api.telegram.org".into())
}

fn default_mode() -> String {
    "polling".into()
}

fn default_transport() -> String {
    "edit".into()
}

fn default_poll_timeout() -> u32 {
    30
}

fn yes() -> bool {
    true
}
