//! `[channels.<name>] kind = "signal"`: the settings the core deserialises from the config file,
//! their checks (each naming its key) and building the channel. signal-cli holds the account's
//! keys, so these settings carry no secret: only where the daemon listens and who may write.

use std::sync::Arc;

use serde::Deserialize;
use switchboard_channel::settings::{collect, expanded, is_http_url};
use switchboard_channel::{
    AccessRules, BuildError, Channel, ChannelSettings, DmPolicy, GroupPolicy, Secret,
    SettingsError, Site,
};

/// Where the examples run signal-cli's HTTP daemon. signal-cli's own default, 8080, is the
/// gateway's too.
pub const DEFAULT_DAEMON_URL: &str = "http://127.0.0.1:7583";

/// Settings of one Signal channel instance.
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct SignalConfig {
    /// The bot's account as signal-cli knows it: its number (`+4915…`) or, for an account
    /// without one, its ACI (a UUID). Unset skips the channel.
    #[serde(default, deserialize_with = "expanded")]
    pub account: String,
    /// signal-cli's HTTP daemon (`daemon --http 127.0.0.1:7583`).
    #[serde(default = "default_daemon_url", deserialize_with = "expanded")]
    pub daemon_url: String,
    /// signal-cli's daemon started and supervised by the gateway (program first, e.g.
    /// `["signal-cli", "-a", "+4915…", "daemon", "--http", "127.0.0.1:7583",
    /// "--receive-mode", "on-connection"]`), under the tool sandbox with the network, in
    /// `data_dir/workspaces/.signal-<name>` (its `HOME`, so its keys live there); restarted
    /// with a doubling wait when it exits. Empty: signal-cli runs as a service of its own.
    #[serde(default)]
    pub command: Vec<String>,
    /// People let in besides those granted with `switchboard access`: numbers (`+4915…`) or
    /// ACIs (UUIDs); `["*"]` only with `dm_policy = "open"`.
    #[serde(default)]
    pub allowed_users: Vec<String>,
    /// Private chats: `pairing` (default), `allowlist` or `open`; `None` when not written.
    #[serde(default)]
    pub dm_policy: Option<DmPolicy>,
    /// Groups: `allowlist` (default: only `allowed_groups`), `open` or `disabled`.
    #[serde(default)]
    pub group_policy: GroupPolicy,
    /// Group ids (base64, as `signal-cli listGroups` prints them) answered under
    /// `group_policy = "allowlist"`.
    #[serde(default)]
    pub allowed_groups: Vec<String>,
    /// In groups, only messages that mention the bot or reply to it count.
    #[serde(default = "yes")]
    pub require_mention_in_groups: bool,
    /// Largest attachment (bytes) the gateway fetches from the daemon.
    #[serde(default = "default_max_attachment_bytes")]
    pub max_attachment_bytes: u64,
}

fn default_daemon_url() -> String {
    DEFAULT_DAEMON_URL.to_owned()
}

fn yes() -> bool {
    true
}

fn default_max_attachment_bytes() -> u64 {
    switchboard_channel::DEFAULT_MAX_ATTACHMENT_BYTES
}

impl SignalConfig {
    /// Settings for `account` with every other key at its default.
    pub fn new(account: impl Into<String>) -> Self {
        Self {
            account: account.into(),
            daemon_url: default_daemon_url(),
            command: Vec::new(),
            allowed_users: Vec::new(),
            dm_policy: None,
            group_policy: GroupPolicy::default(),
            allowed_groups: Vec::new(),
            require_mention_in_groups: true,
            max_attachment_bytes: default_max_attachment_bytes(),
        }
    }

    /// Every problem with these settings, each naming its key.
    pub fn problems(&self) -> Vec<SettingsError> {
        let mut errors = Vec::new();
        if !self.account.is_empty() && !is_number(&self.account) && !is_uuid(&self.account) {
            errors.push(SettingsError::new(
                "account",
                "must be the bot's number in international form (+4915…) or its ACI (a UUID)",
            ));
        }
        if !is_http_url(&self.daemon_url) {
            errors.push(SettingsError::new(
                "daemon_url",
                "must be the http URL of signal-cli's daemon (--http 127.0.0.1:7583)",
            ));
        }
        if self.command.first().is_some_and(|p| p.trim().is_empty()) {
            errors.push(SettingsError::new(
                "command",
                "must start with the program to run (signal-cli), not an empty string",
            ));
        }
        if let Some(bad) = self
            .allowed_users
            .iter()
            .find(|u| *u != "*" && !is_number(u) && !is_uuid(u))
        {
            errors.push(SettingsError::new(
                "allowed_users",
                format!("has {bad:?}, which is neither a number (+4915…), an ACI (UUID) nor \"*\""),
            ));
        }
        if let Some(bad) = self.allowed_groups.iter().find(|g| !is_group_id(g)) {
            errors.push(SettingsError::new(
                "allowed_groups",
                format!(
                    "has {bad:?}, which is not a group id as `signal-cli listGroups` prints it"
                ),
            ));
        }
        if self.max_attachment_bytes == 0 {
            errors.push(SettingsError::new(
                "max_attachment_bytes",
                "must be above 0",
            ));
        }
        errors.extend(self.access().problems(self.dm_policy.is_some()));
        errors
    }
}

/// A number in international form: `+` and 7 to 15 digits.
pub(crate) fn is_number(s: &str) -> bool {
    s.strip_prefix('+')
        .is_some_and(|d| (7..=15).contains(&d.len()) && d.bytes().all(|b| b.is_ascii_digit()))
}

/// A UUID in its hyphenated text form (an ACI).
pub(crate) fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A group id: standard base64 (a v2 group's is 32 bytes, 44 characters).
fn is_group_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'-' | b'_'))
}

impl ChannelSettings for SignalConfig {
    fn validate(&self, _site: &Site<'_>) -> Result<(), Vec<SettingsError>> {
        collect(self.problems())
    }

    fn secrets(&self) -> Vec<&Secret> {
        Vec::new()
    }

    fn missing_credential(&self) -> Option<&'static str> {
        self.account.is_empty().then_some("account")
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
        let mut channel = crate::SignalChannel::new(site.name, self.clone(), site.data_dir)?;
        if !self.command.is_empty() {
            let launcher = site.launcher.ok_or_else(|| {
                format!(
                    "channels.{}.command needs the gateway's sandbox to start signal-cli",
                    site.name
                )
            })?;
            channel = channel.supervising(launcher.clone());
        }
        Ok(Arc::new(channel))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(config: &SignalConfig) -> Vec<&'static str> {
        config.problems().iter().map(|e| e.key).collect()
    }

    #[test]
    fn an_account_alone_gives_the_documented_defaults() {
        let config: SignalConfig =
            serde_json::from_value(serde_json::json!({ "account": "+15550001111" })).unwrap();
        assert_eq!(config.daemon_url, DEFAULT_DAEMON_URL);
        assert!(config.require_mention_in_groups);
        assert_eq!(config.group_policy, GroupPolicy::Allowlist);
        assert!(config.problems().is_empty());
        assert_eq!(config.missing_credential(), None);
    }

    #[test]
    fn each_mistake_names_its_key() {
        let mut config = SignalConfig::new("15550001111");
        config.daemon_url = "localhost:7583".into();
        config.allowed_users = vec!["+15550002222".into(), "bob".into()];
        config.allowed_groups = vec!["not a group".into()];
        config.max_attachment_bytes = 0;
        assert_eq!(
            keys(&config),
            [
                "account",
                "daemon_url",
                "allowed_users",
                "allowed_groups",
                "max_attachment_bytes"
            ]
        );
    }

    #[test]
    fn numbers_and_acis_are_both_accepted_as_users_and_as_the_account() {
        let mut config = SignalConfig::new("0e2b6c3a-1f4d-4c1e-9a7b-2d3c4e5f6a7b");
        config.allowed_users = vec![
            "+15550002222".into(),
            "0E2B6C3A-1F4D-4C1E-9A7B-2D3C4E5F6A7B".into(),
        ];
        config.allowed_groups = vec!["Pmpi+EfPWmsxiomLe9Nx2XF9HOE483p6iKiFj65iMwI=".into()];
        assert!(keys(&config).is_empty(), "{:?}", config.problems());
    }

    #[test]
    fn a_star_needs_dm_policy_open_and_an_unknown_key_is_refused() {
        let mut config = SignalConfig::new("+15550001111");
        config.allowed_users = vec!["*".into()];
        assert_eq!(keys(&config), ["allowed_users"]);
        config.dm_policy = Some(DmPolicy::Open);
        assert!(keys(&config).is_empty());
        let parsed = serde_json::from_value::<SignalConfig>(
            serde_json::json!({ "account": "+15550001111", "allowed_user": [] }),
        );
        assert!(parsed.is_err());
    }

    #[test]
    fn an_unset_account_skips_the_channel() {
        assert_eq!(SignalConfig::new("").missing_credential(), Some("account"));
    }
}
