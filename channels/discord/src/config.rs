//! `[channels.<name>] kind = "discord"`: the settings type the core deserialises straight from
//! the config file (`${VAR}` resolved; the token a [`Secret`] that never appears in `Debug`),
//! its checks, and building the channel. Consulted on every inbound event (allowlists,
//! mention rules).

use std::fmt;
use std::sync::Arc;

use serde::Deserialize;
use switchboard_channel::settings::{collect, expanded, is_http_url};
use switchboard_channel::{
    AccessRules, BuildError, Channel, ChannelSettings, DmPolicy, GroupPolicy, Secret,
    SettingsError, Site,
};

/// The public Discord API host; REST lives under `/api/v10`.
pub const DEFAULT_API_URL: &str = "https://discord.com";

/// Configuration of one Discord bot.
#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct DiscordConfig {
    /// Bot token from the Developer Portal (*Bot → Reset Token*); sent as `Authorization: Bot …`.
    /// Unset skips the channel.
    pub token: Secret,
    /// API host; REST calls go to `<api_url>/api/v10/…` and the gateway URL is asked from
    /// `<api_url>/api/v10/gateway`, so a proxy or a test stand-in can replace Discord.
    #[serde(default = "default_api_url", deserialize_with = "expanded")]
    pub api_url: String,
    /// User ids let in besides those granted with `switchboard access`; `["*"]` only with
    /// `dm_policy = "open"`. The core decides, in its sink.
    #[serde(default)]
    pub allowed_users: Vec<String>,
    /// Direct messages: `pairing` (default), `allowlist` or `open`; `None` when not written.
    #[serde(default)]
    pub dm_policy: Option<DmPolicy>,
    /// Guild channels: `allowlist` (default: `allowed_guilds`/`allowed_channels`), `open`
    /// or `disabled`.
    #[serde(default)]
    pub group_policy: GroupPolicy,
    /// Guild (server) ids the bot answers in; empty allows any. DMs are not checked here.
    #[serde(default)]
    pub allowed_guilds: Vec<String>,
    /// Channel ids the bot answers in (a thread counts as its parent's); empty allows any.
    #[serde(default)]
    pub allowed_channels: Vec<String>,
    /// Channel ids where every message is for the bot, mention or not (threads included).
    #[serde(default)]
    pub always_on_channels: Vec<String>,
    /// In guild channels, answer only messages that mention the bot or reply to it.
    #[serde(default = "true_")]
    pub require_mention_in_guilds: bool,
    /// Let Discord show link embeds under the bot's messages. Off by default: an embed
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

impl DiscordConfig {
    /// A configuration with the defaults for everything but the token.
    pub fn new(token: impl Into<String>) -> Self {
        Self {
            token: Secret::new(token),
            api_url: default_api_url(),
            allowed_users: Vec::new(),
            dm_policy: None,
            group_policy: GroupPolicy::default(),
            allowed_guilds: Vec::new(),
            allowed_channels: Vec::new(),
            always_on_channels: Vec::new(),
            require_mention_in_guilds: true,
            link_previews: false,
            max_attachment_bytes: default_max_attachment_bytes(),
        }
    }

    /// Whether the bot answers in `guild`.
    pub(crate) fn guild_allowed(&self, guild: &str) -> bool {
        self.allowed_guilds.is_empty() || self.allowed_guilds.iter().any(|g| g == guild)
    }

    /// Whether the bot answers in `place` (a channel, or a thread with its parent).
    pub(crate) fn channel_allowed(&self, place: &Place<'_>) -> bool {
        self.allowed_channels.is_empty() || place.is_in(&self.allowed_channels)
    }

    /// Whether every message in `place` is for the bot.
    pub(crate) fn always_on(&self, place: &Place<'_>) -> bool {
        !self.require_mention_in_guilds || place.is_in(&self.always_on_channels)
    }

    /// Whether deciding on a message in `channel` needs its parent (it might be a thread under
    /// a listed channel): only when a channel list is in use and does not name it directly.
    pub(crate) fn needs_parent(&self, channel: &str) -> bool {
        let listed = |list: &[String]| list.iter().any(|c| c == channel);
        let allow_open = self.allowed_channels.is_empty() || listed(&self.allowed_channels);
        let always_open = !self.require_mention_in_guilds
            || self.always_on_channels.is_empty()
            || listed(&self.always_on_channels);
        !(allow_open && always_open)
    }
}

impl ChannelSettings for DiscordConfig {
    fn validate(&self, _site: &Site<'_>) -> Result<(), Vec<SettingsError>> {
        let mut errors = Vec::new();
        if !is_http_url(&self.api_url) {
            errors.push(SettingsError::new("api_url", "must be an http(s) URL"));
        }
        errors.extend(self.access().problems(self.dm_policy.is_some()));
        collect(errors)
    }

    fn secrets(&self) -> Vec<&Secret> {
        vec![&self.token]
    }

    fn missing_credential(&self) -> Option<&'static str> {
        (!self.token.is_set()).then_some("token")
    }

    fn access(&self) -> AccessRules {
        let groups = self.allowed_guilds.iter().chain(&self.allowed_channels);
        AccessRules {
            dm_policy: self.dm_policy.unwrap_or_default(),
            group_policy: self.group_policy,
            allowed_users: self.allowed_users.clone(),
            allowed_groups: groups.cloned().collect(),
            operator_only: false,
        }
    }

    fn build(&self, site: &Site<'_>) -> Result<Arc<dyn Channel>, BuildError> {
        Ok(Arc::new(crate::DiscordChannel::new(
            site.name,
            self.clone(),
        )))
    }
}

/// Where a guild message was written: its channel, and the parent channel when it is a thread.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Place<'a> {
    /// The channel (or thread) id.
    pub channel: &'a str,
    /// The thread's parent channel id, when known.
    pub parent: Option<&'a str>,
}

impl Place<'_> {
    fn is_in(&self, list: &[String]) -> bool {
        list.iter()
            .any(|c| c == self.channel || Some(c.as_str()) == self.parent)
    }
}

/// Shows everything but the token, so a config can be logged.
impl fmt::Debug for DiscordConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DiscordConfig")
            .field("token", &self.token)
            .field("api_url", &self.api_url)
            .field("allowed_users", &self.allowed_users)
            .field("dm_policy", &self.dm_policy)
            .field("group_policy", &self.group_policy)
            .field("allowed_guilds", &self.allowed_guilds)
            .field("allowed_channels", &self.allowed_channels)
            .field("always_on_channels", &self.always_on_channels)
            .field("require_mention_in_guilds", &self.require_mention_in_guilds)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place<'a>(channel: &'a str, parent: Option<&'a str>) -> Place<'a> {
        Place { channel, parent }
    }

    #[test]
    fn missing_optional_keys_take_their_defaults() {
        let config: DiscordConfig =
            serde_json::from_value(serde_json::json!({"token": "test-token-not-real"})).unwrap();
        assert_eq!(config.api_url, DEFAULT_API_URL);
        assert!(config.require_mention_in_guilds);
        assert!(config.allowed_users.is_empty() && config.allowed_guilds.is_empty());
        assert!(config.allowed_channels.is_empty() && config.always_on_channels.is_empty());
    }

    #[test]
    fn unknown_keys_are_refused() {
        let err = serde_json::from_value::<DiscordConfig>(serde_json::json!({
            "token": "test-token-not-real",
            "allowed_user": ["1"],
        }))
        .unwrap_err();
        assert!(err.to_string().contains("allowed_user"), "{err}");
    }

    #[test]
    fn debug_output_never_shows_the_token() {
        let shown = format!("{:?}", DiscordConfig::new("test-token-not-real"));
        assert!(!shown.contains("test-token-not-real"), "{shown}");
        assert!(shown.contains("[REDACTED]"));
    }

    #[test]
    fn an_unset_token_skips_the_channel_and_a_bad_api_url_is_named() {
        let mut config = DiscordConfig::new("");
        assert_eq!(config.missing_credential(), Some("token"));
        config.api_url = "discord.com".into();
        let site = Site {
            name: "discord",
            listen: None,
            data_dir: std::path::Path::new("data"),
            redactor: None,
            launcher: None,
        };
        let errors = config.validate(&site).unwrap_err();
        assert_eq!(errors[0].key, "api_url");
    }

    #[test]
    fn access_rules_carry_the_users_and_both_group_lists_to_the_core() {
        let mut config = DiscordConfig::new("t");
        config.allowed_users = vec!["2".into()];
        config.allowed_guilds = vec!["g".into()];
        config.allowed_channels = vec!["c".into()];
        let rules = config.access();
        assert_eq!(rules.dm_policy, DmPolicy::Pairing);
        assert!(rules.lists_user("2") && !rules.lists_user("1"));
        assert!(rules.lists_group(&["x".into(), "c".into()]) && rules.lists_group(&["g".into()]));
        config.allowed_users = vec!["*".into()];
        assert_eq!(config.access().problems(false)[0].key, "allowed_users");
    }

    #[test]
    fn a_thread_is_allowed_and_always_on_through_its_parent() {
        let mut config = DiscordConfig::new("t");
        assert!(config.channel_allowed(&place("9", None)));
        assert!(config.guild_allowed("g"));
        config.allowed_channels = vec!["10".into()];
        config.always_on_channels = vec!["10".into()];
        assert!(!config.channel_allowed(&place("9", None)));
        assert!(config.channel_allowed(&place("11", Some("10"))));
        assert!(config.always_on(&place("11", Some("10"))));
        assert!(!config.always_on(&place("12", Some("13"))));
        config.require_mention_in_guilds = false;
        assert!(config.always_on(&place("12", None)));
    }

    #[test]
    fn the_parent_is_looked_up_only_when_a_list_does_not_name_the_channel() {
        let mut config = DiscordConfig::new("t");
        assert!(!config.needs_parent("11"));
        config.allowed_channels = vec!["10".into()];
        assert!(!config.needs_parent("10"));
        assert!(config.needs_parent("11"));
        config.allowed_channels.clear();
        config.always_on_channels = vec!["10".into()];
        assert!(config.needs_parent("11"));
        config.require_mention_in_guilds = false;
        assert!(!config.needs_parent("11"));
    }
}
