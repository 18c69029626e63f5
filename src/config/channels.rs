//! `[memory]`, and per-platform `[channels.<name>]` settings as the core reads them (secrets as [`Secret`],
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

/// `kind = "discord"`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiscordSettings {
    /// Bot token from the Developer Portal.
    pub token: Secret,
    /// API base (a proxy or test stand-in may replace it).
    #[serde(default = "default_discord_api")]
    pub api_url: EnvString,
    /// User ids allowed to talk to the bot; `["*"]` = everyone, empty = nobody.
    #[serde(default)]
    pub allowed_users: Vec<String>,
    /// Guild (server) ids the bot answers in; empty = any.
    #[serde(default)]
    pub allowed_guilds: Vec<String>,
    /// Channel ids the bot answers in; empty = any.
    #[serde(default)]
    pub allowed_channels: Vec<String>,
    /// Channels where every message is answered, mention or not.
    #[serde(default)]
    pub always_on_channels: Vec<String>,
    /// In servers, answer only when mentioned or replied to.
    #[serde(default = "yes")]
    pub require_mention_in_guilds: bool,
}

fn default_discord_api() -> EnvString {
    EnvString("https://discord.com".into())
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

/// Whose memories a conversation sees.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum MemoryScopeMode {
    /// Each conversation has its own memory.
    #[default]
    Conversation,
    /// A user's memories follow them across conversations of one channel.
    User,
}

/// `[memory]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MemoryConfig {
    /// Recall, autosave and the memory tools.
    pub enabled: bool,
    /// Per conversation or per user.
    pub scope: MemoryScopeMode,
    /// User messages at least this long are saved automatically.
    pub autosave_min_chars: usize,
    /// Memories recalled before each turn.
    pub recall_limit: usize,
    /// Size cap of the recalled-memory system message.
    pub recall_max_chars: usize,
    /// Non-system messages kept before older ones are summarised.
    pub max_history_messages: usize,
    /// Recent messages compaction keeps verbatim.
    pub compaction_keep_recent: usize,
    /// Characters of older history sent to the summariser.
    pub compaction_source_chars: usize,
    /// Longest summary kept.
    pub summary_max_chars: usize,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            scope: MemoryScopeMode::Conversation,
            autosave_min_chars: 20,
            recall_limit: 5,
            recall_max_chars: 2000,
            max_history_messages: 50,
            compaction_keep_recent: 20,
            compaction_source_chars: 12_000,
            summary_max_chars: 2_000,
        }
    }
}
