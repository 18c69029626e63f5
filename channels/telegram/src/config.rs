//! `[channels.<name>]` settings of a Telegram channel, as the core hands them over (secrets
//! already resolved), and their validation before anything talks to Telegram.

use serde::Deserialize;

/// The public Bot API endpoint.
pub const DEFAULT_API_URL: &str = "https://api.telegram.org";

/// Settings of one Telegram channel instance.
#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct TelegramConfig {
    /// Bot token from BotFather (`123456:ABC…`); never logged.
    pub token: String,
    /// Bot API base URL; a self-hosted Bot API server or a test stand-in replaces the public one.
    #[serde(default = "default_api_url")]
    pub api_url: String,
    /// How updates arrive: long polling (default) or a webhook.
    #[serde(default)]
    pub mode: Mode,
    /// Public HTTPS URL Telegram posts updates to (webhook mode), ending in `/telegram/<name>`.
    pub webhook_url: Option<String>,
    /// Secret Telegram echoes in `X-Telegram-Bot-Api-Secret-Token` (webhook mode).
    pub secret_token: Option<String>,
    /// Who may talk to the bot: numeric user ids or usernames (with or without `@`);
    /// `["*"]` allows everyone, empty allows no one.
    #[serde(default)]
    pub allowed_users: Vec<String>,
    /// In groups, only messages that mention the bot, reply to it or use `/cmd@bot` count.
    #[serde(default = "yes")]
    pub require_mention_in_groups: bool,
    /// How a streamed answer is shown while it grows.
    #[serde(default)]
    pub draft_transport: DraftTransport,
    /// Long-poll timeout of `getUpdates`, in seconds.
    #[serde(default = "default_poll_timeout")]
    pub poll_timeout_secs: u32,
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

fn default_poll_timeout() -> u32 {
    30
}

impl std::fmt::Debug for TelegramConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Hand-written so the token and the webhook secret never reach a log line.
        f.debug_struct("TelegramConfig")
            .field("token", &"<redacted>")
            .field("api_url", &self.api_url)
            .field("mode", &self.mode)
            .field("webhook_url", &self.webhook_url)
            .field(
                "secret_token",
                &self.secret_token.as_ref().map(|_| "<redacted>"),
            )
            .field("allowed_users", &self.allowed_users)
            .field("require_mention_in_groups", &self.require_mention_in_groups)
            .field("draft_transport", &self.draft_transport)
            .field("poll_timeout_secs", &self.poll_timeout_secs)
            .finish()
    }
}

impl TelegramConfig {
    /// Settings for `token` with every other key at its default.
    pub fn new(token: impl Into<String>) -> Self {
        Self {
            token: token.into(),
            api_url: default_api_url(),
            mode: Mode::default(),
            webhook_url: None,
            secret_token: None,
            allowed_users: Vec::new(),
            require_mention_in_groups: true,
            draft_transport: DraftTransport::default(),
            poll_timeout_secs: default_poll_timeout(),
        }
    }

    /// Check the settings of channel `name`; the error names the key to fix.
    pub fn validate(&self, name: &str) -> Result<(), String> {
        let key = |k: &str| format!("channels.{name}.{k}");
        if self.token.trim().is_empty() {
            return Err(format!(
                "{} is empty: paste the token BotFather gave you",
                key("token")
            ));
        }
        if !self.token.contains(':') {
            return Err(format!(
                "{} does not look like a bot token (expected <bot id>:<secret> from BotFather)",
                key("token")
            ));
        }
        if !(self.api_url.starts_with("http://") || self.api_url.starts_with("https://")) {
            return Err(format!("{} must be an http(s) URL", key("api_url")));
        }
        if self.mode == Mode::Webhook {
            match self.webhook_url.as_deref() {
                Some(url) if url.starts_with("https://") => {}
                Some(_) => return Err(format!("{} must be an https URL", key("webhook_url"))),
                None => {
                    return Err(format!(
                        "{} is required when mode = \"webhook\" (the public URL of /telegram/{name})",
                        key("webhook_url")
                    ));
                }
            }
            match self.secret_token.as_deref() {
                Some(secret) if valid_secret(secret) => {}
                Some(_) => {
                    return Err(format!(
                        "{} must be 1-256 characters of A-Z, a-z, 0-9, _ and -",
                        key("secret_token")
                    ));
                }
                None => {
                    return Err(format!(
                        "{} is required when mode = \"webhook\" so forged updates are refused",
                        key("secret_token")
                    ));
                }
            }
        }
        Ok(())
    }
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
        assert!(config.validate("telegram").is_ok());
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
        assert!(config.validate("telegram").is_ok());
    }

    #[test]
    fn an_unknown_key_is_refused() {
        let parsed = serde_json::from_value::<TelegramConfig>(
            serde_json::json!({ "token": TOKEN, "allowed_user": ["1"] }),
        );
        assert!(parsed.is_err());
    }

    #[test]
    fn webhook_mode_without_url_or_secret_names_the_missing_key() {
        let mut config = TelegramConfig::new(TOKEN);
        config.mode = Mode::Webhook;
        let err = config.validate("tg").unwrap_err();
        assert!(err.contains("channels.tg.webhook_url"), "{err}");
        config.webhook_url = Some("https://bot.example.com/telegram/tg".into());
        let err = config.validate("tg").unwrap_err();
        assert!(err.contains("channels.tg.secret_token"), "{err}");
        config.secret_token = Some("has space".into());
        assert!(config.validate("tg").unwrap_err().contains("secret_token"));
    }

    #[test]
    fn debug_output_never_shows_the_token_or_secret() {
        let mut config = TelegramConfig::new(TOKEN);
        config.secret_token = Some("webhook-secret-value".into());
        let shown = format!("{config:?}");
        assert!(!shown.contains("TEST-not-a-real-token"), "{shown}");
        assert!(!shown.contains("webhook-secret-value"), "{shown}");
    }

    #[test]
    fn a_token_without_a_colon_is_refused() {
        assert!(
            TelegramConfig::new("nonsense")
                .validate("telegram")
                .is_err()
        );
    }
}
