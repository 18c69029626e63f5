//! `[channels.<name>] kind = "slack"`: the settings type the core deserialises straight from
//! the config file (`${VAR}` resolved; secrets as [`Secret`], never in `Debug`), its checks,
//! the paths of its webhook routes (announced to the core here, mounted by `webhook`), and
//! building the channel.

use std::fmt;
use std::sync::Arc;

use serde::Deserialize;
use switchboard_channel::settings::{collect, expanded, is_http_url};
use switchboard_channel::{
    AccessRules, BuildError, Channel, ChannelSettings, DmPolicy, GroupPolicy, HttpRoute, Secret,
    SettingsError, Site,
};

/// The public Slack Web API.
pub const DEFAULT_API_URL: &str = "https://slack.com/api";

/// Configuration of one Slack app (one workspace installation).
#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct SlackConfig {
    /// Bot User OAuth Token (`xoxb-…`), sent as `Authorization: Bearer` to the Web API;
    /// unset skips the channel.
    pub bot_token: Secret,
    /// Signing secret from the app's "Basic Information" page; verifies every webhook.
    #[serde(default)]
    pub signing_secret: Secret,
    /// Web API base URL; a test stand-in or proxy can replace the public one.
    #[serde(default = "default_api_url", deserialize_with = "expanded")]
    pub api_url: String,
    /// Slack user ids (`U…`) let in besides those granted with `switchboard access`;
    /// `["*"]` only with `dm_policy = "open"`.
    #[serde(default)]
    pub allowed_users: Vec<String>,
    /// Direct messages: `pairing` (default), `allowlist` or `open`; `None` when not written.
    #[serde(default)]
    pub dm_policy: Option<DmPolicy>,
    /// Channels: `allowlist` (default: only `allowed_channels`), `open` or `disabled`.
    #[serde(default)]
    pub group_policy: GroupPolicy,
    /// Channel ids (`C…`) the bot answers mentions in under `group_policy = "allowlist"`
    /// (empty: none).
    #[serde(default)]
    pub allowed_channels: Vec<String>,
    /// Channels only: answer a top-level mention in a thread under it (one conversation per
    /// thread); off, the channel is one conversation answered at top level. A DM is always
    /// one conversation at top level, with each thread in it a conversation of its own.
    #[serde(default = "true_")]
    pub reply_in_thread: bool,
    /// Let Slack unfurl links and media in the bot's messages. Off by default: a preview
    /// fetches a URL the model wrote with nobody clicking it (zero-click exfiltration).
    #[serde(default)]
    pub link_previews: bool,
    /// Largest attachment (bytes) the gateway downloads; larger ones get a refusal line.
    #[serde(default = "default_max_attachment_bytes")]
    pub max_attachment_bytes: u64,
}

fn default_max_attachment_bytes() -> u64 {
    switchboard_channel::DEFAULT_MAX_ATTACHMENT_BYTES
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
            bot_token: Secret::new(bot_token),
            signing_secret: Secret::new(signing_secret),
            api_url: default_api_url(),
            allowed_users: Vec::new(),
            dm_policy: None,
            group_policy: GroupPolicy::default(),
            allowed_channels: Vec::new(),
            reply_in_thread: true,
            link_previews: false,
            max_attachment_bytes: default_max_attachment_bytes(),
        }
    }
}

impl ChannelSettings for SlackConfig {
    fn validate(&self, _site: &Site<'_>) -> Result<(), Vec<SettingsError>> {
        let mut errors = Vec::new();
        if self.bot_token.is_set() && !self.signing_secret.is_set() {
            errors.push(SettingsError::new(
                "signing_secret",
                "is required with bot_token, to verify that requests come from Slack",
            ));
        }
        if !is_http_url(&self.api_url) {
            errors.push(SettingsError::new("api_url", "must be an http(s) URL"));
        }
        errors.extend(self.access().problems(self.dm_policy.is_some()));
        collect(errors)
    }

    fn secrets(&self) -> Vec<&Secret> {
        vec![&self.bot_token, &self.signing_secret]
    }

    fn missing_credential(&self) -> Option<&'static str> {
        (!self.bot_token.is_set()).then_some("bot_token")
    }

    fn http_routes(&self, name: &str) -> Vec<HttpRoute> {
        route_paths(name)
            .into_iter()
            .map(|path| HttpRoute {
                key: None,
                path,
                shared: false,
            })
            .collect()
    }

    fn access(&self) -> AccessRules {
        AccessRules {
            dm_policy: self.dm_policy.unwrap_or_default(),
            group_policy: self.group_policy,
            allowed_users: self.allowed_users.clone(),
            allowed_groups: self.allowed_channels.clone(),
            operator_only: false,
        }
    }

    fn build(&self, site: &Site<'_>) -> Result<Arc<dyn Channel>, BuildError> {
        Ok(Arc::new(crate::SlackChannel::new(site.name, self.clone())))
    }
}

/// The paths of channel `name`'s webhook routes: events, then interactions.
pub(crate) fn route_paths(name: &str) -> [String; 2] {
    [
        format!("/slack/{name}/events"),
        format!("/slack/{name}/interactions"),
    ]
}

/// Shows everything but the secrets, so a config can be logged.
impl fmt::Debug for SlackConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlackConfig")
            .field("bot_token", &self.bot_token)
            .field("signing_secret", &self.signing_secret)
            .field("api_url", &self.api_url)
            .field("allowed_users", &self.allowed_users)
            .field("dm_policy", &self.dm_policy)
            .field("group_policy", &self.group_policy)
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
        assert!(shown.contains("[REDACTED]"));
    }

    #[test]
    fn a_bot_token_without_a_signing_secret_is_named() {
        let site = Site {
            name: "slack",
            listen: None,
            data_dir: std::path::Path::new("data"),
            redactor: None,
            launcher: None,
        };
        let config = SlackConfig::new("xoxb-test-fake", "");
        assert_eq!(config.validate(&site).unwrap_err()[0].key, "signing_secret");
        let unset = SlackConfig::new("", "");
        assert_eq!(unset.missing_credential(), Some("bot_token"));
        assert!(unset.validate(&site).is_ok());
    }

    #[test]
    fn access_defaults_to_pairing_and_channels_listed_in_allowed_channels() {
        let mut config = SlackConfig::new("t", "s");
        config.allowed_channels = vec!["C2".into()];
        let rules = config.access();
        assert_eq!(rules.dm_policy, DmPolicy::Pairing);
        assert_eq!(rules.group_policy, GroupPolicy::Allowlist);
        assert!(rules.lists_group(&["C2".into()]) && !rules.lists_group(&["C1".into()]));
    }

    #[test]
    fn a_star_without_dm_policy_open_is_an_error_on_allowed_users() {
        let site = Site {
            name: "slack",
            listen: None,
            data_dir: std::path::Path::new("data"),
            redactor: None,
            launcher: None,
        };
        let mut config = SlackConfig::new("xoxb-t", "s");
        config.allowed_users = vec!["*".into()];
        assert_eq!(config.validate(&site).unwrap_err()[0].key, "allowed_users");
        config.dm_policy = Some(DmPolicy::Open);
        assert!(config.validate(&site).is_ok());
    }
}
