//! `[channels.<name>]`: `kind` picks the platform and the rest of the table is that channel
//! crate's own settings type, deserialised straight from the file (so a bad value is reported
//! with its file, line and key). The core holds only this enum; each crate owns its keys,
//! their checks and its secrets (see [`ChannelSettings`]). Also the checks across channels:
//! valid instance names and no HTTP route claimed twice.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, de::value::MapAccessDeserializer};
use switchboard_channel::{ChannelSettings, Site};

use super::{Config, Problem};

/// Every platform `kind`, whether or not this binary was built with it.
pub const KINDS: &[&str] = &[
    "slack", "telegram", "discord", "web", "matrix", "whatsapp", "email", "signal",
];

/// One `[channels.<name>]` table: the platform's own settings type.
#[derive(Debug, Clone)]
pub enum ChannelConfig {
    /// Slack Events API + Web API.
    #[cfg(feature = "slack")]
    Slack(switchboard_slack::SlackConfig),
    /// Telegram Bot API (polling or webhook).
    #[cfg(feature = "telegram")]
    Telegram(switchboard_telegram::TelegramConfig),
    /// Discord gateway + REST.
    #[cfg(feature = "discord")]
    Discord(switchboard_discord::DiscordConfig),
    /// The built-in web chat page and its WebSocket.
    #[cfg(feature = "web")]
    Web(switchboard_web::WebConfig),
    /// Matrix client-server API (`/sync`, end-to-end encryption).
    #[cfg(feature = "matrix")]
    Matrix(switchboard_matrix::MatrixConfig),
    /// WhatsApp Business Cloud API (signed webhooks, Graph API).
    #[cfg(feature = "whatsapp")]
    WhatsApp(switchboard_whatsapp::WhatsAppConfig),
    /// Email: IMAP in, SMTP submission out.
    #[cfg(feature = "email")]
    Email(switchboard_email::EmailConfig),
    /// Signal, through a signal-cli daemon's JSON-RPC and event stream.
    #[cfg(feature = "signal")]
    Signal(switchboard_signal::SignalConfig),
}

impl ChannelConfig {
    /// The platform name, as written in `kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            #[cfg(feature = "slack")]
            Self::Slack(_) => "slack",
            #[cfg(feature = "telegram")]
            Self::Telegram(_) => "telegram",
            #[cfg(feature = "discord")]
            Self::Discord(_) => "discord",
            #[cfg(feature = "web")]
            Self::Web(_) => "web",
            #[cfg(feature = "matrix")]
            Self::Matrix(_) => "matrix",
            #[cfg(feature = "whatsapp")]
            Self::WhatsApp(_) => "whatsapp",
            #[cfg(feature = "email")]
            Self::Email(_) => "email",
            #[cfg(feature = "signal")]
            Self::Signal(_) => "signal",
            // Built without any platform: there is no value to match.
            #[cfg(not(any(
                feature = "slack",
                feature = "telegram",
                feature = "discord",
                feature = "web",
                feature = "matrix",
                feature = "whatsapp",
                feature = "email",
                feature = "signal"
            )))]
            _ => match *self {},
        }
    }

    /// The settings, as every channel crate offers them to the core.
    pub fn settings(&self) -> &dyn ChannelSettings {
        match self {
            #[cfg(feature = "slack")]
            Self::Slack(s) => s,
            #[cfg(feature = "telegram")]
            Self::Telegram(s) => s,
            #[cfg(feature = "discord")]
            Self::Discord(s) => s,
            #[cfg(feature = "web")]
            Self::Web(s) => s,
            #[cfg(feature = "matrix")]
            Self::Matrix(s) => s,
            #[cfg(feature = "whatsapp")]
            Self::WhatsApp(s) => s,
            #[cfg(feature = "email")]
            Self::Email(s) => s,
            #[cfg(feature = "signal")]
            Self::Signal(s) => s,
            #[cfg(not(any(
                feature = "slack",
                feature = "telegram",
                feature = "discord",
                feature = "web",
                feature = "matrix",
                feature = "whatsapp",
                feature = "email",
                feature = "signal"
            )))]
            _ => match *self {},
        }
    }
}

/// The crate type named by `kind`, deserialised from the rest of the table.
#[cfg_attr(
    not(any(
        feature = "slack",
        feature = "telegram",
        feature = "discord",
        feature = "web",
        feature = "matrix",
        feature = "whatsapp",
        feature = "email",
        feature = "signal"
    )),
    allow(unused_variables)
)]
fn from_kind<'de, D: Deserializer<'de>>(kind: &str, d: D) -> Result<ChannelConfig, D::Error> {
    match kind {
        #[cfg(feature = "slack")]
        "slack" => Deserialize::deserialize(d).map(ChannelConfig::Slack),
        #[cfg(feature = "telegram")]
        "telegram" => Deserialize::deserialize(d).map(ChannelConfig::Telegram),
        #[cfg(feature = "discord")]
        "discord" => Deserialize::deserialize(d).map(ChannelConfig::Discord),
        #[cfg(feature = "web")]
        "web" => Deserialize::deserialize(d).map(ChannelConfig::Web),
        #[cfg(feature = "matrix")]
        "matrix" => Deserialize::deserialize(d).map(ChannelConfig::Matrix),
        #[cfg(feature = "whatsapp")]
        "whatsapp" => Deserialize::deserialize(d).map(ChannelConfig::WhatsApp),
        #[cfg(feature = "email")]
        "email" => Deserialize::deserialize(d).map(ChannelConfig::Email),
        #[cfg(feature = "signal")]
        "signal" => Deserialize::deserialize(d).map(ChannelConfig::Signal),
        known if KINDS.contains(&known) => Err(de::Error::custom(format!(
            "kind {known:?}: this binary was built without the `{known}` feature"
        ))),
        other => Err(de::Error::unknown_variant(other, KINDS)),
    }
}

impl<'de> Deserialize<'de> for ChannelConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(TableVisitor)
    }
}

/// Reads `kind`, then hands the same map on to the crate's type. With `kind` first (as every
/// example writes it) the crate's fields are read straight from the file, so errors keep their
/// line and key; otherwise the table is buffered first and errors point at the table.
struct TableVisitor;

impl<'de> Visitor<'de> for TableVisitor {
    type Value = ChannelConfig;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a channel table with a `kind`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ChannelConfig, A::Error> {
        let Some(first) = map.next_key::<String>()? else {
            return Err(de::Error::missing_field("kind"));
        };
        if first == "kind" {
            let kind: String = map.next_value()?;
            let map = super::agents::without_routing(map);
            return from_kind(&kind, MapAccessDeserializer::new(map));
        }
        let mut table = toml::Table::new();
        table.insert(first, map.next_value()?);
        while let Some(key) = map.next_key::<String>()? {
            table.insert(key, map.next_value()?);
        }
        table.remove("agent");
        table.remove("chats");
        let Some(toml::Value::String(kind)) = table.remove("kind") else {
            return Err(de::Error::missing_field("kind"));
        };
        from_kind(&kind, toml::Value::Table(table)).map_err(|e| de::Error::custom(e.message()))
    }
}

impl Config {
    /// What channel `name` is told about the gateway around it.
    pub fn site<'a>(&'a self, name: &'a str) -> Site<'a> {
        Site {
            name,
            listen: self.gateway.listen.parse().ok(),
            data_dir: &self.gateway.data_dir,
            redactor: None,
            launcher: None,
        }
    }
}

/// Every problem with the channels: names, each channel's own checks, and routes two
/// channels (or a channel and the gateway) would both mount.
pub(super) fn problems(config: &Config) -> Vec<Problem> {
    let mut problems = Vec::new();
    for (name, channel) in &config.channels {
        if !valid_name(name) {
            problems.push(problem(
                format!("channels.{name}"),
                "channel names use a-z, 0-9, - and _ only",
            ));
        }
        if let Err(errors) = channel.settings().validate(&config.site(name)) {
            problems.extend(
                errors
                    .into_iter()
                    .map(|e| problem(format!("channels.{name}.{}", e.key), e.message)),
            );
        }
    }
    problems.extend(route_problems(config));
    problems
}

/// The gateway's own paths; a channel claiming one of them is a config error.
pub const ROUTES: [&str; 3] = ["/healthz", "/readyz", "/metrics"];

/// A route mounted twice would panic the router at start-up; name the later channel's key.
/// A route the channel crate says it shares (WhatsApp numbers of one app on one callback
/// URL) may be claimed again by channels of the same kind, which serve it together.
fn route_problems(config: &Config) -> Vec<Problem> {
    let mut owners: BTreeMap<String, String> = ROUTES
        .iter()
        .map(|path| ((*path).to_owned(), "the gateway's own route".to_owned()))
        .collect();
    let mut shared: BTreeMap<String, &'static str> = BTreeMap::new();
    if config.admin.enabled {
        let admin = super::admin::paths(&config.admin.base());
        owners.extend(
            admin
                .into_iter()
                .map(|p| (p, "the dashboard ([admin] path)".into())),
        );
    }
    let mut problems = Vec::new();
    for (name, channel) in &config.channels {
        for route in channel.settings().http_routes(name) {
            if route.shared && shared.get(&route.path) == Some(&channel.kind()) {
                continue;
            }
            if let Some(owner) = owners.get(&route.path) {
                let key = match route.key {
                    Some(key) => format!("channels.{name}.{key}"),
                    None => format!("channels.{name}"),
                };
                let message = format!("route {} is already served by {owner}", route.path);
                problems.push(problem(key, message));
                break;
            }
            if route.shared {
                shared.insert(route.path.clone(), channel.kind());
            }
            owners.insert(route.path, format!("channel `{name}`"));
        }
    }
    problems
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

fn problem(key: String, message: impl Into<String>) -> Problem {
    Problem {
        key,
        position: None,
        message: message.into(),
    }
}
