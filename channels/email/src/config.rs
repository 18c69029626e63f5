//! `[channels.<name>] kind = "email"`: the settings the core deserialises from the config
//! file (`${VAR}` resolved, passwords as [`Secret`]), checked before anything connects, and
//! building the channel from them. Every check names the key to fix (`imap.host`,
//! `smtp.tls`, …).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;
use switchboard_channel::settings::{collect, expanded, expanded_opt};
use switchboard_channel::{
    AccessRules, BuildError, Channel, ChannelSettings, DmPolicy, GroupPolicy, Secret,
    SettingsError, Site,
};

/// How a connection to a mail server is secured.
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum TlsMode {
    /// TLS from the first byte (IMAPS 993, SMTPS 465).
    Tls,
    /// Plain first, upgraded with STARTTLS before logging in (IMAP 143, submission 587).
    Starttls,
    /// No TLS at all: only accepted for a server on this machine (loopback).
    None,
}

/// One server the channel logs in to.
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// Host name or address.
    #[serde(deserialize_with = "expanded")]
    pub host: String,
    /// Port; unset: the usual one for the protocol and `tls`.
    #[serde(default)]
    pub port: Option<u16>,
    /// `tls`, `starttls` or `none` (loopback only).
    pub tls: TlsMode,
    /// The login name.
    #[serde(deserialize_with = "expanded")]
    pub user: String,
    /// The password (`${VAR}`); never logged.
    #[serde(default)]
    pub password: Secret,
    /// IMAP only: the folder new mail is read from.
    #[serde(default, deserialize_with = "expanded_opt")]
    pub mailbox: Option<String>,
}

impl ServerConfig {
    /// The port to connect to: the configured one or the protocol's usual one.
    pub fn port_or(&self, tls: u16, starttls: u16) -> u16 {
        self.port.unwrap_or(match self.tls {
            TlsMode::Tls => tls,
            TlsMode::Starttls | TlsMode::None => starttls,
        })
    }

    /// Whether `host` is this machine (where a connection without TLS is acceptable).
    pub fn is_loopback(&self) -> bool {
        self.host == "localhost"
            || self
                .host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }

    fn problems(&self, section: &'static str, errors: &mut Vec<SettingsError>) {
        let key = |k: &'static str| -> &'static str {
            match (section, k) {
                ("imap", "host") => "imap.host",
                ("imap", "tls") => "imap.tls",
                ("imap", "user") => "imap.user",
                ("imap", "mailbox") => "imap.mailbox",
                ("smtp", "host") => "smtp.host",
                ("smtp", "tls") => "smtp.tls",
                ("smtp", "user") => "smtp.user",
                _ => "smtp.mailbox",
            }
        };
        if self.host.trim().is_empty() || self.host.contains(['/', ' ', ':']) {
            errors.push(SettingsError::new(
                key("host"),
                "must be a host name or address (no scheme, no port: the port goes in `port`)",
            ));
        }
        if self.tls == TlsMode::None && !self.is_loopback() {
            errors.push(SettingsError::new(
                key("tls"),
                "is \"none\" for a server that is not on this machine: the password would cross \
                 the network in clear; use \"tls\" or \"starttls\"",
            ));
        }
        if self.user.trim().is_empty() {
            errors.push(SettingsError::new(key("user"), "must name the login"));
        }
        if section == "smtp" && self.mailbox.is_some() {
            errors.push(SettingsError::new(
                key("mailbox"),
                "is an IMAP setting; remove it here",
            ));
        }
    }
}

/// How a sender is proven to be who the From header says.
#[derive(Deserialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SenderAuth {
    /// A DKIM signature that verifies and whose domain is the From address's, and the From
    /// domain's DMARC policy (when it publishes one) passing (default).
    #[default]
    Dkim,
    /// The `Authentication-Results` header the configured server (`trusted_authserv_id`)
    /// added says `dmarc=pass`, or `dkim=pass` for the From domain.
    AuthenticationResults,
    /// Nobody is authenticated: the From header is believed. Only for a mailbox nobody
    /// outside can write to.
    None,
}

/// Settings of one mailbox the gateway answers from.
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct EmailConfig {
    /// The bot's address: the From of every answer, and never answered itself.
    #[serde(deserialize_with = "expanded")]
    pub address: String,
    /// Where new mail is read (IMAP).
    pub imap: ServerConfig,
    /// Where answers are sent (SMTP submission).
    pub smtp: ServerConfig,
    /// A PEM file of extra certificate authorities to trust for both servers (a private CA);
    /// the public web roots are always trusted.
    #[serde(default)]
    pub tls_ca_file: Option<PathBuf>,
    /// How senders are authenticated; unauthenticated mail is refused unanswered.
    #[serde(default)]
    pub sender_auth: SenderAuth,
    /// With `sender_auth = "authentication_results"`: the authserv-id of the receiving server
    /// whose `Authentication-Results` header is trusted (its host name).
    #[serde(default, deserialize_with = "expanded_opt")]
    pub trusted_authserv_id: Option<String>,
    /// The DNS server DKIM and DMARC records are read from (`127.0.0.1:53`); unset: the
    /// system's resolver configuration.
    #[serde(default)]
    pub dns_resolver: Option<String>,
    /// Addresses let in besides those granted with `switchboard access`; `["*"]` only with
    /// `dm_policy = "open"`.
    #[serde(default)]
    pub allowed_users: Vec<String>,
    /// `pairing` (default), `allowlist` or `open`; `None` when not written.
    #[serde(default)]
    pub dm_policy: Option<DmPolicy>,
    /// Largest attachment (bytes) kept from an incoming mail.
    #[serde(default = "default_max_attachment_bytes")]
    pub max_attachment_bytes: u64,
    /// Mails one sender may have answered per hour; later ones are left unanswered.
    #[serde(default = "default_rate")]
    pub max_mails_per_hour: u32,
    /// Seconds between two looks at the mailbox when the server has no IDLE (and the longest
    /// an IDLE waits before it is renewed).
    #[serde(default = "default_poll")]
    pub poll_interval_secs: u64,
}

fn default_max_attachment_bytes() -> u64 {
    switchboard_channel::DEFAULT_MAX_ATTACHMENT_BYTES
}

fn default_rate() -> u32 {
    20
}

fn default_poll() -> u64 {
    60
}

/// Whether `s` looks like `local@domain` (no display name, no spaces).
pub fn is_address(s: &str) -> bool {
    s.split_once('@').is_some_and(|(local, domain)| {
        !local.is_empty()
            && domain.contains('.')
            && !domain.starts_with('.')
            && !domain.ends_with('.')
            && !s
                .chars()
                .any(|c| c.is_whitespace() || c.is_control() || "<>,;\"".contains(c))
            && !domain.contains('@')
    })
}

impl EmailConfig {
    /// Every problem with these settings, each naming its key.
    pub fn problems(&self) -> Vec<SettingsError> {
        let mut errors = Vec::new();
        if !is_address(&self.address) {
            errors.push(SettingsError::new(
                "address",
                "must be the bot's own address, like bot@example.org",
            ));
        }
        self.imap.problems("imap", &mut errors);
        self.smtp.problems("smtp", &mut errors);
        if self
            .imap
            .mailbox
            .as_deref()
            .is_some_and(|m| m.trim().is_empty())
        {
            errors.push(SettingsError::new("imap.mailbox", "must not be empty"));
        }
        if let Some(bad) = self
            .allowed_users
            .iter()
            .find(|u| *u != "*" && !is_address(u))
        {
            errors.push(SettingsError::new(
                "allowed_users",
                format!("lists {bad:?}, which is not an address like alice@example.org"),
            ));
        }
        if self.sender_auth == SenderAuth::AuthenticationResults
            && self
                .trusted_authserv_id
                .as_deref()
                .is_none_or(str::is_empty)
        {
            errors.push(SettingsError::new(
                "trusted_authserv_id",
                "must name the receiving server (the first word of its Authentication-Results \
                 header) when sender_auth = \"authentication_results\"",
            ));
        }
        if self
            .dns_resolver
            .as_deref()
            .is_some_and(|r| r.parse::<SocketAddr>().is_err())
        {
            errors.push(SettingsError::new(
                "dns_resolver",
                "must be an address and port like 127.0.0.1:53",
            ));
        }
        if self.max_mails_per_hour == 0 {
            errors.push(SettingsError::new(
                "max_mails_per_hour",
                "must be at least 1",
            ));
        }
        if !(1..=3600).contains(&self.poll_interval_secs) {
            errors.push(SettingsError::new("poll_interval_secs", "must be 1-3600"));
        }
        errors.extend(self.access().problems(self.dm_policy.is_some()));
        errors
    }

    /// The IMAP folder new mail is read from.
    pub fn mailbox(&self) -> &str {
        self.imap.mailbox.as_deref().unwrap_or("INBOX")
    }

    /// Where this channel keeps its cursor, threads and received files:
    /// `<data_dir>/email/<name>`.
    pub fn state_dir(site: &Site<'_>) -> PathBuf {
        site.data_dir.join("email").join(site.name)
    }
}

impl ChannelSettings for EmailConfig {
    fn validate(&self, _site: &Site<'_>) -> Result<(), Vec<SettingsError>> {
        collect(self.problems())
    }

    fn secrets(&self) -> Vec<&Secret> {
        vec![&self.imap.password, &self.smtp.password]
    }

    fn missing_credential(&self) -> Option<&'static str> {
        if !self.imap.password.is_set() {
            Some("imap.password")
        } else if !self.smtp.password.is_set() {
            Some("smtp.password")
        } else {
            None
        }
    }

    fn access(&self) -> AccessRules {
        AccessRules {
            dm_policy: self.dm_policy.unwrap_or_default(),
            group_policy: GroupPolicy::Disabled,
            allowed_users: self
                .allowed_users
                .iter()
                .map(|u| u.to_lowercase())
                .collect(),
            allowed_groups: Vec::new(),
            operator_only: false,
        }
    }

    fn build(&self, site: &Site<'_>) -> Result<Arc<dyn Channel>, BuildError> {
        let channel = crate::EmailChannel::new(site.name, self.clone(), Self::state_dir(site))?;
        Ok(Arc::new(channel))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(extra: serde_json::Value) -> EmailConfig {
        let mut base = serde_json::json!({
            "address": "bot@example.org",
            "imap": {"host": "imap.example.org", "tls": "tls", "user": "bot", "password": "not-a-real-password"},
            "smtp": {"host": "smtp.example.org", "tls": "starttls", "user": "bot", "password": "not-a-real-password"},
        });
        base.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::from_value(base).expect("config parses")
    }

    fn keys(config: &EmailConfig) -> Vec<&'static str> {
        config.problems().iter().map(|e| e.key).collect()
    }

    #[test]
    fn an_address_and_two_servers_are_enough() {
        let c = config(serde_json::json!({}));
        assert!(c.problems().is_empty(), "{:?}", c.problems());
        assert_eq!(c.mailbox(), "INBOX");
        assert_eq!(c.imap.port_or(993, 143), 993);
        assert_eq!(c.smtp.port_or(465, 587), 587);
        assert_eq!(c.sender_auth, SenderAuth::Dkim);
        assert_eq!(c.missing_credential(), None);
        assert!(!format!("{c:?}").contains("not-a-real-password"));
    }

    #[test]
    fn each_mistake_names_its_key() {
        let mut c = config(serde_json::json!({
            "address": "bot",
            "allowed_users": ["alice"],
            "sender_auth": "authentication_results",
            "dns_resolver": "localhost",
            "max_mails_per_hour": 0,
            "poll_interval_secs": 0,
        }));
        c.imap.host = "imaps://imap.example.org".into();
        c.imap.tls = TlsMode::None;
        c.smtp.user = String::new();
        c.smtp.mailbox = Some("INBOX".into());
        assert_eq!(
            keys(&c),
            [
                "address",
                "imap.host",
                "imap.tls",
                "smtp.user",
                "smtp.mailbox",
                "allowed_users",
                "trusted_authserv_id",
                "dns_resolver",
                "max_mails_per_hour",
                "poll_interval_secs"
            ]
        );
    }

    #[test]
    fn no_tls_is_accepted_on_loopback_only() {
        let mut c = config(serde_json::json!({}));
        c.imap.tls = TlsMode::None;
        c.imap.host = "127.0.0.1".into();
        c.smtp.tls = TlsMode::None;
        c.smtp.host = "localhost".into();
        assert!(keys(&c).is_empty());
    }

    #[test]
    fn an_unset_password_skips_the_channel_naming_which() {
        let mut c = config(serde_json::json!({}));
        c.smtp.password = Secret::default();
        assert_eq!(c.missing_credential(), Some("smtp.password"));
        c.imap.password = Secret::default();
        assert_eq!(c.missing_credential(), Some("imap.password"));
    }

    #[test]
    fn an_unknown_key_is_refused() {
        let parsed = serde_json::from_value::<EmailConfig>(serde_json::json!({
            "address": "bot@example.org",
            "imap": {"host": "h", "tls": "tls", "user": "u", "pass": "x"},
            "smtp": {"host": "h", "tls": "tls", "user": "u"},
        }));
        assert!(parsed.is_err());
    }

    #[test]
    fn allowed_addresses_match_in_lower_case() {
        let c = config(serde_json::json!({"allowed_users": ["Alice@Example.org"]}));
        assert_eq!(c.access().allowed_users, ["alice@example.org"]);
        assert_eq!(c.access().group_policy, GroupPolicy::Disabled);
    }
}
