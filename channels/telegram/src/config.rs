//! `[channels.<name>] kind = "telegram"`: the settings type the core deserialises straight
//! from the config file (`${VAR}` resolved, secrets as [`Secret`]), its validation before
//! anything talks to Telegram, the webhook route's path (announced to the core here, mounted
//! by `webhook`), and building the channel from it.

use std::sync::Arc;

use serde::Deserialize;
use switchboard_channel::settings::{collect, expanded, expanded_opt, is_http_url};
use switchboard_channel::{
    AccessRules, BuildError, Channel, ChannelSettings, DmPolicy, GroupPolicy, HttpRoute, Secret,
    SettingsError, Site,
};

/// The public Bot API endpoint.
pub const DEFAULT_API_URL: &str = "https://api.telegram.org";

/// Settings of one Telegram channel instance.
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct TelegramConfig {
    /// Bot token from BotFather (`123456:ABC…`); unset skips the channel. Never logged.
    pub token: Secret,
    /// Bot API base URL; a self-hosted Bot API server or a test stand-in replaces the public one.
    #[serde(default = "default_api_url", deserialize_with = "expanded")]
    pub api_url: String,
    /// How updates arrive: long polling (default) or a webhook.
    #[serde(default)]
    pub mode: Mode,
    /// Public HTTPS URL Telegram posts updates to (webhook mode), ending in `/telegram/<name>`.
    #[serde(default, deserialize_with = "expanded_opt")]
    pub webhook_url: Option<String>,
    /// Secret Telegram echoes in `X-Telegram-Bot-Api-Secret-Token` (webhook mode).
    #[serde(default)]
    pub secret_token: Secret,
    /// People let in besides those granted with `switchboard access`: numeric user ids
    /// (usernames are honoured with a warning: they can change hands); `["*"]` only with
    /// `dm_policy = "open"`.
    #[serde(default)]
    pub allowed_users: Vec<String>,
    /// Private chats: `pairing` (default), `allowlist` or `open`; `None` when not written.
    #[serde(default)]
    pub dm_policy: Option<DmPolicy>,
    /// Groups: `allowlist` (default: only `allowed_groups`), `open` or `disabled`.
    #[serde(default)]
    pub group_policy: GroupPolicy,
    /// Group chat ids (`-100…`) the bot answers in under `group_policy = "allowlist"`.
    #[serde(default)]
    pub allowed_groups: Vec<String>,
    /// In groups, only messages that mention the bot, reply to it or use `/cmd@bot` count.
    #[serde(default = "yes")]
    pub require_mention_in_groups: bool,
    /// How a streamed answer is shown while it grows.
    #[serde(default)]
    pub draft_transport: DraftTransport,
    /// Long-poll timeout of `getUpdates`, in seconds.
    #[serde(default = "default_poll_timeout")]
    pub poll_timeout_secs: u32,
    /// Largest attachment (bytes) the gateway downloads; larger ones get a refusal line.
    #[serde(default = "default_max_attachment_bytes")]
    pub max_attachment_bytes: u64,
}

/// How updates reach the gateway.
#[derive(Deserialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The gateway long-polls `getUpdates`; works behind NAT, nothing to expose.
    #[default]
    Polling,
    /// Telegram posts updates to `POST /telegram/<name>` on the gateway's HTTP server.
    Webhook,
}

/// How intermediate drafts of a streamed answer are shown.
#[derive(Deserialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum DraftTransport {
    /// Post a message and edit it in place as the answer grows (works everywhere).
    #[default]
    Edit,
    /// Bot API `sendMessageDraft` in private chats, falling back to `Edit` when it fails.
    Draft,
}

fn default_api_url() -> String {
    DEFAULT_API_URL.to_owned()
}

fn yes() -> bool {
    true
}

fn default_max_attachment_bytes() -> u64 {
    switchboard_channel::DEFAULT_MAX_ATTACHMENT_BYTES
}

fn default_poll_timeout() -> u32 {
    30
}

impl TelegramConfig {
    /// Settings for `token` with every other key at its default.
    pub fn new(token: impl Into<String>) -> Self {
        Self {
            token: Secret::new(token),
            api_url: default_api_url(),
            mode: Mode::default(),
            webhook_url: None,
            secret_token: Secret::default(),
            allowed_users: Vec::new(),
            dm_policy: None,
            group_policy: GroupPolicy::default(),
            allowed_groups: Vec::new(),
            require_mention_in_groups: true,
            draft_transport: DraftTransport::default(),
            poll_timeout_secs: default_poll_timeout(),
            max_attachment_bytes: default_max_attachment_bytes(),
        }
    }

    /// Every problem with these settings, each naming its key.
    pub fn problems(&self) -> Vec<SettingsError> {
        let mut errors = Vec::new();
        if let Some(token) = self.token.expose()
            && !token.contains(':')
        {
            errors.push(SettingsError::new(
                "token",
                "does not look like a bot token (expected <bot id>:<secret> from BotFather)",
            ));
        }
        if !is_http_url(&self.api_url) {
            errors.push(SettingsError::new("api_url", "must be an http(s) URL"));
        }
        if let Err(message) = crate::access::usernames(&self.allowed_users) {
            errors.push(SettingsError::new("allowed_users", message));
        }
        errors.extend(self.access().problems(self.dm_policy.is_some()));
        if self.mode == Mode::Webhook {
            errors.extend(self.webhook_problems());
        }
        errors
    }

    fn webhook_problems(&self) -> Vec<SettingsError> {
        let mut errors = Vec::new();
        match self.webhook_url.as_deref() {
            Some(url) if url.starts_with("https://") && is_http_url(url) => {}
            Some(_) => errors.push(SettingsError::new("webhook_url", "must be an https URL")),
            None => errors.push(SettingsError::new(
                "webhook_url",
                "is required when mode = \"webhook\" (the public URL of /telegram/<name>)",
            )),
        }
        match self.secret_token.expose() {
            Some(secret) if valid_secret(secret) => {}
            Some(_) => errors.push(SettingsError::new(
                "secret_token",
                "must be 1-256 characters of A-Z, a-z, 0-9, _ and -",
            )),
            None => errors.push(SettingsError::new(
                "secret_token",
                "is required when mode = \"webhook\" so forged updates are refused",
            )),
        }
        errors
    }
}

impl ChannelSettings for TelegramConfig {
    fn validate(&self, _site: &Site<'_>) -> Result<(), Vec<SettingsError>> {
        collect(self.problems())
    }

    fn secrets(&self) -> Vec<&Secret> {
        vec![&self.token, &self.secret_token]
    }

    fn missing_credential(&self) -> Option<&'static str> {
        (!self.token.is_set()).then_some("token")
    }

    fn http_routes(&self, name: &str) -> Vec<HttpRoute> {
        match self.mode {
            Mode::Polling => Vec::new(),
            Mode::Webhook => vec![HttpRoute {
                shared: false,
                key: None,
                path: webhook_path(name),
            }],
        }
    }

    fn access(&self) -> AccessRules {
        AccessRules {
            dm_policy: self.dm_policy.unwrap_or_default(),
            group_policy: self.group_policy,
            allowed_users: self.allowed_users.clone(),
            allowed_groups: self.allowed_groups.clone(),
            operator_only: false,
        }
    }

    fn build(&self, site: &Site<'_>) -> Result<Arc<dyn Channel>, BuildError> {
        let channel = crate::TelegramChannel::new(site.name, self.clone())?;
        Ok(Arc::new(channel))
    }
}

/// The path of channel `name`'s webhook route.
pub(crate) fn webhook_path(name: &str) -> String {
    format!("/telegram/{name}")
}

/// Telegram's own rule for `secret_token`.
fn valid_secret(secret: &str) -> bool {
    (1..=256).contains(&secret.len())
        && secret
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "123456:TEST-not-a-real-token";

    fn keys(config: &TelegramConfig) -> Vec<&'static str> {
        config.problems().iter().map(|e| e.key).collect()
    }

    #[test]
    fn a_token_alone_gives_polling_with_the_documented_defaults() {
        let config: TelegramConfig = serde_json::from_value(serde_json::json!({ "token": TOKEN }))
            .expect("minimal config parses");
        assert_eq!(config.api_url, DEFAULT_API_URL);
        assert_eq!(config.mode, Mode::Polling);
        assert_eq!(config.draft_transport, DraftTransport::Edit);
        assert!(config.require_mention_in_groups);
        assert_eq!(config.poll_timeout_secs, 30);
        assert!(config.allowed_users.is_empty());
        assert!(config.problems().is_empty());
        assert_eq!(config.missing_credential(), None);
    }

    #[test]
    fn modes_and_transports_are_lowercase_words() {
        let config: TelegramConfig = serde_json::from_value(serde_json::json!({
            "token": TOKEN, "mode": "webhook", "draft_transport": "draft",
            "webhook_url": "https://bot.example.com/telegram/telegram", "secret_token": "s3cret_-x",
        }))
        .expect("parses");
        assert_eq!(config.mode, Mode::Webhook);
        assert_eq!(config.draft_transport, DraftTransport::Draft);
        assert!(config.problems().is_empty());
        assert_eq!(config.http_routes("tg")[0].path, "/telegram/tg");
    }

    #[test]
    fn a_misspelt_mode_is_a_parse_error_naming_the_value() {
        let err = serde_json::from_value::<TelegramConfig>(
            serde_json::json!({ "token": TOKEN, "mode": "pollin" }),
        )
        .unwrap_err();
        assert!(err.to_string().contains("pollin"), "{err}");
    }

    #[test]
    fn an_unknown_key_is_refused() {
        let parsed = serde_json::from_value::<TelegramConfig>(
            serde_json::json!({ "token": TOKEN, "allowed_user": ["1"] }),
        );
        assert!(parsed.is_err());
    }

    #[test]
    fn webhook_mode_without_url_or_secret_names_both_missing_keys() {
        let mut config = TelegramConfig::new(TOKEN);
        config.mode = Mode::Webhook;
        assert_eq!(keys(&config), ["webhook_url", "secret_token"]);
        config.webhook_url = Some("https://bot.example.com/telegram/tg".into());
        assert_eq!(keys(&config), ["secret_token"]);
        config.secret_token = Secret::new("has space");
        assert_eq!(keys(&config), ["secret_token"]);
        config.webhook_url = Some("http://bot.example.com/telegram/tg".into());
        assert_eq!(keys(&config), ["webhook_url", "secret_token"]);
    }

    #[test]
    fn debug_output_never_shows_the_token_or_secret() {
        let mut config = TelegramConfig::new(TOKEN);
        config.secret_token = Secret::new("webhook-secret-value");
        let shown = format!("{config:?}");
        assert!(!shown.contains("TEST-not-a-real-token"), "{shown}");
        assert!(!shown.contains("webhook-secret-value"), "{shown}");
        assert_eq!(config.secrets().len(), 2);
    }

    #[test]
    fn a_token_without_a_colon_a_bad_url_and_a_bad_user_are_each_named() {
        let mut config = TelegramConfig::new("nonsense");
        config.api_url = "ftp://example.com".into();
        config.allowed_users = vec!["two words".into()];
        assert_eq!(keys(&config), ["token", "api_url", "allowed_users"]);
    }

    #[test]
    fn a_star_is_refused_until_dm_policy_open_is_written() {
        let mut config = TelegramConfig::new(TOKEN);
        config.allowed_users = vec!["*".into()];
        assert_eq!(keys(&config), ["allowed_users"]);
        config.dm_policy = Some(DmPolicy::Open);
        assert!(keys(&config).is_empty());
        assert_eq!(config.access().dm_policy, DmPolicy::Open);
    }

    #[test]
    fn an_unset_token_skips_the_channel_instead_of_failing_the_check() {
        let config = TelegramConfig::new("");
        assert_eq!(config.missing_credential(), Some("token"));
        assert!(config.problems().is_empty());
    }
}
