//! `[channels.<name>] kind = "matrix"`: the settings the core deserialises from the config
//! file (`${VAR}` resolved, secrets as [`Secret`]), checked before anything talks to the
//! homeserver, and building the channel from them.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;
use switchboard_channel::settings::{collect, expanded, expanded_opt, is_http_url};
use switchboard_channel::{
    AccessRules, BuildError, Channel, ChannelSettings, DmPolicy, GroupPolicy, Secret,
    SettingsError, Site,
};

/// Settings of one Matrix account the gateway speaks as.
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct MatrixConfig {
    /// The homeserver's client-server API base URL (`https://matrix.example.org`).
    #[serde(deserialize_with = "expanded")]
    pub homeserver: String,
    /// The bot's full user id, `@bot:example.org`.
    #[serde(deserialize_with = "expanded")]
    pub user_id: String,
    /// The account's password, used once to log in (the session is kept in the data
    /// directory afterwards). Never logged.
    #[serde(default)]
    pub password: Secret,
    /// Instead of a password: an access token of an existing login (its device is then the
    /// bot's). With neither set the channel is skipped. Never logged.
    #[serde(default)]
    pub access_token: Secret,
    /// The device to log in as (a password login) or that the access token belongs to;
    /// unset: the homeserver picks one at the first login, kept afterwards.
    #[serde(default, deserialize_with = "expanded_opt")]
    pub device_id: Option<String>,
    /// Encrypts the SDK's stores (room state, end-to-end encryption keys) on disk. Optional,
    /// but without it a copy of the data directory holds the bot's encryption keys in clear.
    #[serde(default)]
    pub store_passphrase: Secret,
    /// The name the bot's device shows in people's device lists.
    #[serde(default = "default_device_name")]
    pub device_name: String,
    /// People let in besides those granted with `switchboard access`: full user ids;
    /// `["*"]` only with `dm_policy = "open"`.
    #[serde(default)]
    pub allowed_users: Vec<String>,
    /// Direct rooms: `pairing` (default), `allowlist` or `open`; `None` when not written.
    #[serde(default)]
    pub dm_policy: Option<DmPolicy>,
    /// Rooms with more people: `allowlist` (default: only `allowed_groups`), `open` or
    /// `disabled`.
    #[serde(default)]
    pub group_policy: GroupPolicy,
    /// Room ids (`!abc:example.org`) the bot answers in under `group_policy = "allowlist"`.
    #[serde(default)]
    pub allowed_rooms: Vec<String>,
    /// Room ids where every message is answered, mentioned or not (they must be let in by
    /// `group_policy` too).
    #[serde(default)]
    pub always_on_rooms: Vec<String>,
    /// In rooms, only messages that mention the bot or reply to it start a conversation;
    /// a thread the bot already answers in goes on without one.
    #[serde(default = "yes")]
    pub require_mention_in_groups: bool,
    /// How long one `/sync` waits for news, in seconds.
    #[serde(default = "default_sync_timeout")]
    pub sync_timeout_secs: u32,
    /// Largest attachment (bytes) the gateway downloads; larger ones get a refusal line.
    #[serde(default = "default_max_attachment_bytes")]
    pub max_attachment_bytes: u64,
}

fn default_device_name() -> String {
    "Switchboard".to_owned()
}

fn yes() -> bool {
    true
}

fn default_sync_timeout() -> u32 {
    30
}

fn default_max_attachment_bytes() -> u64 {
    switchboard_channel::DEFAULT_MAX_ATTACHMENT_BYTES
}

impl MatrixConfig {
    /// Settings for `user_id` on `homeserver_url` logging in with `password`, every other
    /// key at its default.
    pub fn new(homeserver: &str, user_id: &str, password: &str) -> Self {
        Self {
            homeserver: homeserver.to_owned(),
            user_id: user_id.to_owned(),
            password: Secret::new(password),
            access_token: Secret::default(),
            device_id: None,
            store_passphrase: Secret::default(),
            device_name: default_device_name(),
            allowed_users: Vec::new(),
            dm_policy: None,
            group_policy: GroupPolicy::default(),
            allowed_rooms: Vec::new(),
            always_on_rooms: Vec::new(),
            require_mention_in_groups: true,
            sync_timeout_secs: default_sync_timeout(),
            max_attachment_bytes: default_max_attachment_bytes(),
        }
    }

    /// Every problem with these settings, each naming its key.
    pub fn problems(&self) -> Vec<SettingsError> {
        let mut errors = Vec::new();
        if !is_http_url(&self.homeserver) {
            errors.push(SettingsError::new(
                "homeserver",
                "must be an http(s) URL (the homeserver's client API, e.g. https://matrix.example.org)",
            ));
        }
        if !is_user_id(&self.user_id) {
            errors.push(SettingsError::new(
                "user_id",
                "must be a full Matrix user id like @bot:example.org",
            ));
        }
        if let Some(bad) = self
            .allowed_users
            .iter()
            .find(|u| *u != "*" && !is_user_id(u))
        {
            errors.push(SettingsError::new(
                "allowed_users",
                format!(
                    "lists {bad:?}, which is not a full Matrix user id like @alice:example.org"
                ),
            ));
        }
        for (key, rooms) in [
            ("allowed_rooms", &self.allowed_rooms),
            ("always_on_rooms", &self.always_on_rooms),
        ] {
            if let Some(bad) = rooms.iter().find(|r| !is_room_id(r)) {
                errors.push(SettingsError::new(
                    key,
                    format!("lists {bad:?}, which is not a room id like !abc123:example.org (room settings → Advanced)"),
                ));
            }
        }
        if self.password.is_set() && self.access_token.is_set() {
            errors.push(SettingsError::new(
                "access_token",
                "and password are both set; keep one (the token's login, or a new one with the password)",
            ));
        }
        if self
            .device_id
            .as_deref()
            .is_some_and(|d| d.is_empty() || d.chars().any(|c| c.is_whitespace() || c.is_control()))
        {
            errors.push(SettingsError::new(
                "device_id",
                "must be a device id without spaces",
            ));
        }
        if self.sync_timeout_secs == 0 || self.sync_timeout_secs > 300 {
            errors.push(SettingsError::new("sync_timeout_secs", "must be 1-300"));
        }
        errors.extend(self.access().problems(self.dm_policy.is_some()));
        errors
    }

    /// Where this channel keeps its session and the SDK's stores: `<data_dir>/matrix/<name>`.
    pub fn state_dir(site: &Site<'_>) -> PathBuf {
        site.data_dir.join("matrix").join(site.name)
    }
}

/// `@localpart:server`.
fn is_user_id(id: &str) -> bool {
    sigil_id(id, '@')
}

/// `!opaque:server`.
fn is_room_id(id: &str) -> bool {
    sigil_id(id, '!')
}

fn sigil_id(id: &str, sigil: char) -> bool {
    id.strip_prefix(sigil)
        .and_then(|rest| rest.split_once(':'))
        .is_some_and(|(local, server)| {
            !local.is_empty()
                && !server.is_empty()
                && !id.chars().any(|c| c.is_whitespace() || c.is_control())
        })
}

impl ChannelSettings for MatrixConfig {
    fn validate(&self, _site: &Site<'_>) -> Result<(), Vec<SettingsError>> {
        collect(self.problems())
    }

    fn secrets(&self) -> Vec<&Secret> {
        vec![&self.password, &self.access_token, &self.store_passphrase]
    }

    fn missing_credential(&self) -> Option<&'static str> {
        (!self.password.is_set() && !self.access_token.is_set()).then_some("password")
    }

    fn access(&self) -> AccessRules {
        AccessRules {
            dm_policy: self.dm_policy.unwrap_or_default(),
            group_policy: self.group_policy,
            allowed_users: self.allowed_users.clone(),
            allowed_groups: self.allowed_rooms.clone(),
            operator_only: false,
        }
    }

    fn build(&self, site: &Site<'_>) -> Result<Arc<dyn Channel>, BuildError> {
        let channel = crate::MatrixChannel::new(site.name, self.clone(), Self::state_dir(site))?;
        Ok(Arc::new(channel))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(config: &MatrixConfig) -> Vec<&'static str> {
        config.problems().iter().map(|e| e.key).collect()
    }

    #[test]
    fn a_homeserver_a_user_and_a_password_are_enough() {
        let config: MatrixConfig = serde_json::from_value(serde_json::json!({
            "homeserver": "https://matrix.example.org",
            "user_id": "@bot:example.org",
            "password": "not-a-real-password",
        }))
        .expect("minimal config parses");
        assert!(config.problems().is_empty());
        assert!(config.require_mention_in_groups);
        assert_eq!(config.device_name, "Switchboard");
        assert_eq!(config.missing_credential(), None);
        assert_eq!(config.access().dm_policy, DmPolicy::Pairing);
    }

    #[test]
    fn bad_ids_and_urls_are_each_named() {
        let mut config = MatrixConfig::new("matrix.example.org", "bot", "pw");
        config.allowed_users = vec!["alice".into()];
        config.allowed_rooms = vec!["#room:example.org".into()];
        config.always_on_rooms = vec!["room".into()];
        config.sync_timeout_secs = 0;
        config.access_token = Secret::new("also-set");
        assert_eq!(
            keys(&config),
            [
                "homeserver",
                "user_id",
                "allowed_users",
                "allowed_rooms",
                "always_on_rooms",
                "access_token",
                "sync_timeout_secs"
            ]
        );
    }

    #[test]
    fn an_unset_password_skips_the_channel_and_secrets_stay_hidden() {
        let config = MatrixConfig::new("https://m.example.org", "@bot:example.org", "");
        assert_eq!(config.missing_credential(), Some("password"));
        let config = MatrixConfig::new("https://m.example.org", "@bot:example.org", "hunter2-ish");
        assert!(!format!("{config:?}").contains("hunter2-ish"));
        assert_eq!(config.secrets().len(), 3);
        let mut by_token = MatrixConfig::new("https://m.example.org", "@bot:example.org", "");
        by_token.access_token = Secret::new("syt_not_a_real_token");
        assert_eq!(by_token.missing_credential(), None);
    }

    #[test]
    fn an_unknown_key_is_refused() {
        let parsed = serde_json::from_value::<MatrixConfig>(serde_json::json!({
            "homeserver": "https://m.example.org", "user_id": "@b:example.org", "token": "x",
        }));
        assert!(parsed.is_err());
    }

    #[test]
    fn a_star_needs_dm_policy_open_written() {
        let mut config = MatrixConfig::new("https://m.example.org", "@bot:example.org", "pw");
        config.allowed_users = vec!["*".into()];
        assert_eq!(keys(&config), ["allowed_users"]);
        config.dm_policy = Some(DmPolicy::Open);
        assert!(keys(&config).is_empty());
    }
}
