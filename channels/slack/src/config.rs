//! `[channels.<name>]` keys of a Slack instance: read once at start-up, before the channel
//! is built. Secrets arrive already resolved from `${VAR}` and never appear in `Debug`.

use std::fmt;

use serde::Deserialize;

/// The public Slack Web API.
pub const DEFAULT_API_URL: &str = "https://slack.com/api";

/// Configuration of one Slack app (one workspace installation).
#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct SlackConfig {
    /// Bot User OAuth Token (`xoxb-…`), sent as `Authorization: Bearer` to the Web API.
    pub bot_token: String,
    /// Signing secret from the app's "Basic Information" page; verifies every webhook.
    pub signing_secret: String,
    /// Web API base URL; a test stand-in or proxy can replace the public one.
    #[serde(default = "default_api_url")]
    pub api_url: String,
    /// Slack user ids (`U…`) allowed to talk to the bot; `["*"]` allows everyone, empty
    /// allows no one (refused ids are logged once so the owner can add them).
    #[serde(default)]
    pub allowed_users: Vec<String>,
    /// Channel ids (`C…`) the bot answers mentions in; empty allows any. Direct messages
    /// are governed by `allowed_users` alone.
    #[serde(default)]
    pub allowed_channels: Vec<String>,
    /// Answer a top-level message in a thread under it (one conversation per thread).
    #[serde(default = "true_")]
    pub reply_in_thread: bool,
}

fn default_api_url() -> String {
    DEFAULT_API_URL.to_owned()
}

fn true_() -> bool {
    true
}

impl SlackConfig {
    /// A configuration with the defaults for everything but the two secrets.
    pub fn new(bot_token: impl Into<String>, signing_secret: impl Into<String>) -> Self {
        Self {
            bot_token: bot_token.into(),
            signing_secret: signing_secret.into(),
            api_url: default_api_url(),
            allowed_users: Vec::new(),
            allowed_channels: Vec::new(),
            reply_in_thread: true,
        }
    }

    /// Whether `user` may talk to the bot.
    pub(crate) fn user_allowed(&self, user: &str) -> bool {
        self.allowed_users.iter().any(|u| u == "*" || u == user)
    }

    /// Whether the bot answers in `channel` (direct messages are not checked here).
    pub(crate) fn channel_allowed(&self, channel: &str) -> bool {
        self.allowed_channels.is_empty() || self.allowed_channels.iter().any(|c| c == channel)
    }
}

/// Shows everything but the secrets, so a config can be logged.
impl fmt::Debug for SlackConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlackConfig")
            .field("bot_token", &"[redacted]")
            .field("signing_secret", &"[redacted]")
            .field("api_url", &self.api_url)
            .field("allowed_users", &self.allowed_users)
            .field("allowed_channels", &self.allowed_channels)
            .field("reply_in_thread", &self.reply_in_thread)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_optional_keys_take_their_defaults() {
        let config: SlackConfig = serde_json::from_value(serde_json::json!({
            "bot_token": "xoxb-test-fake",
            "signing_secret": "test-signing-secret",
        }))
        .unwrap();
        assert_eq!(config.api_url, DEFAULT_API_URL);
        assert!(config.reply_in_thread);
        assert!(config.allowed_users.is_empty() && config.allowed_channels.is_empty());
    }

    #[test]
    fn unknown_keys_are_refused() {
        let err = serde_json::from_value::<SlackConfig>(serde_json::json!({
            "bot_token": "xoxb-test-fake",
            "signing_secret": "test-signing-secret",
            "signing_secert": "typo",
        }))
        .unwrap_err();
        assert!(err.to_string().contains("signing_secert"), "{err}");
    }

    #[test]
    fn debug_output_never_shows_the_secrets() {
        let config = SlackConfig::new("xoxb-test-fake", "test-signing-secret");
        let shown = format!("{config:?}");
        assert!(!shown.contains("xoxb-test-fake") && !shown.contains("test-signing-secret"));
        assert!(shown.contains("[redacted]"));
    }

    #[test]
    fn a_star_allows_every_user_and_an_empty_list_allows_none() {
        let mut config = SlackConfig::new("t", "s");
        assert!(!config.user_allowed("U1"));
        config.allowed_users = vec!["*".into()];
        assert!(config.user_allowed("U1"));
        config.allowed_users = vec!["U2".into()];
        assert!(!config.user_allowed("U1") && config.user_allowed("U2"));
    }

    #[test]
    fn an_empty_channel_list_allows_any_channel() {
        let mut config = SlackConfig::new("t", "s");
        assert!(config.channel_allowed("C1"));
        config.allowed_channels = vec!["C2".into()];
        assert!(!config.channel_allowed("C1") && config.channel_allowed("C2"));
    }
}
