//! `[channels.<name>] kind = "web"`: the settings type the core deserialises straight from the
//! config file (`${VAR}` resolved, the token a [`Secret`]), checked against the gateway's
//! listen address before anything is served. What the core calls on it (`ChannelSettings`,
//! building the channel) is in `settings`, at the top, since building needs everything else.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::Deserialize;
use switchboard_channel::settings::expanded;
// Named by the docs below (implemented in `settings`).
#[cfg(doc)]
use switchboard_channel::ChannelSettings;
use switchboard_channel::{DEFAULT_MAX_ATTACHMENT_BYTES, Redactor, Secret, SettingsError, Site};

/// Default longest message a person may type, in characters.
pub const DEFAULT_MAX_MESSAGE_CHARS: usize = 8000;
/// Default number of messages (and button presses) one session may send per minute.
pub const DEFAULT_MAX_MESSAGES_PER_MINUTE: u32 = 30;
/// Default number of messages each session keeps for resync and page reloads.
pub const DEFAULT_HISTORY_MESSAGES: usize = 100;

/// Configuration of one web chat instance. Unset keys take the defaults above.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebConfig {
    /// Where the page is served (`/` or `/chat`); the socket is `<path>/ws`.
    #[serde(deserialize_with = "expanded")]
    pub path: String,
    /// Token a browser must present (`?token=` once, then a cookie); unset, a token the
    /// gateway generates (see `token`) is the gate, on loopback too.
    pub access_token: Secret,
    /// Origins (`https://chat.example.com`) allowed to open the socket besides the page's
    /// own; empty allows the same origin only.
    pub allowed_origins: Vec<String>,
    /// Host names (`chat.example.com`) of a public chat: set without `access_token` on a
    /// loopback listen, the chat opens without a token to anyone who reaches these names
    /// (through a proxy that forwards its own `Host`) or `localhost`, `127.0.0.1` and
    /// `[::1]`, and only approvers approve there. Any other `Host` is refused, so a page
    /// that rebinds its DNS to 127.0.0.1 cannot reach the chat.
    pub public_hosts: Vec<String>,
    /// Longest message a person may send, in characters; longer closes the socket (1009).
    pub max_message_chars: usize,
    /// Messages plus button presses one session may send per minute; more are refused.
    pub max_messages_per_minute: u32,
    /// Messages kept per session for reloads and reconnects (oldest dropped first).
    pub history_messages: usize,
    /// Largest file a person may upload (`POST <path>/upload`), in bytes; larger gets 413.
    /// This limit replaces the gateway's request-body limit on that route only.
    pub max_attachment_bytes: u64,
    /// Directory where each session's messages are saved as JSON so they survive a restart,
    /// and files moved both ways are kept (in `files/`); `None` keeps messages in memory only
    /// and refuses uploads. Not a config key: [`ChannelSettings::build`] sets
    /// it to `<data_dir>/web/<name>`.
    #[serde(skip)]
    pub history_dir: Option<PathBuf>,
    /// What every saved text passes through first (the core's credential scrubber). Not a
    /// config key: [`ChannelSettings::build`] takes it from the [`Site`].
    #[serde(skip)]
    pub redactor: Redactor,
    /// Where the generated token lives when `access_token` is unset (and the chat is not a
    /// public one); `None` refuses that case. Not a config key: [`ChannelSettings::build`]
    /// sets it to [`WebConfig::generated_token_path`].
    #[serde(skip)]
    pub token_file: Option<PathBuf>,
    /// The generated token as it was at start-up, listed among [`ChannelSettings::secrets`]
    /// so the gateway's scrubber redacts it like a configured one. Not a config key: the
    /// gateway's start-up sets it.
    #[serde(skip)]
    pub generated_token: Secret,
}

impl Default for WebConfig {
    fn default() -> Self {
        Self {
            path: "/".to_owned(),
            access_token: Secret::default(),
            allowed_origins: Vec::new(),
            public_hosts: Vec::new(),
            max_message_chars: DEFAULT_MAX_MESSAGE_CHARS,
            max_messages_per_minute: DEFAULT_MAX_MESSAGES_PER_MINUTE,
            history_messages: DEFAULT_HISTORY_MESSAGES,
            max_attachment_bytes: DEFAULT_MAX_ATTACHMENT_BYTES,
            history_dir: None,
            redactor: Redactor::default(),
            token_file: None,
            generated_token: Secret::default(),
        }
    }
}

/// Why a web chat configuration cannot be served: the first problem, with its full key.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("channels.{name}.{problem}")]
pub struct WebConfigError {
    /// Channel instance name.
    pub name: String,
    /// The key and what is wrong with it.
    pub problem: SettingsError,
}

impl WebConfig {
    /// Check the configuration of channel `name` for a gateway listening on `listen`.
    pub fn check(&self, name: &str, listen: SocketAddr) -> Result<(), WebConfigError> {
        match self.problems(Some(listen)).into_iter().next() {
            Some(problem) => Err(WebConfigError {
                name: name.to_owned(),
                problem,
            }),
            None => Ok(()),
        }
    }

    /// Every problem, each naming its key; the token rule is checked only when `listen` is known.
    pub fn problems(&self, listen: Option<SocketAddr>) -> Vec<SettingsError> {
        let mut errors = Vec::new();
        if let Some(listen) = listen
            && !self.access_token.is_set()
            && !self.public_on(listen)
            && self.token_file.is_none()
        {
            errors.push(SettingsError::new(
                "access_token",
                format!(
                    "is required: without it only a token file opens the chat (on \
                     gateway.listen = {listen} a loopback peer may be a tool or a proxy); set \
                     it (e.g. access_token = \"${{SWITCHBOARD_WEB_TOKEN}}\") or give the \
                     channel a generated token file"
                ),
            ));
        }
        if !valid_path(&self.path) {
            errors.push(SettingsError::new(
                "path",
                format!(
                    "= {:?} must start with / and use only letters, digits, -, _ and / \
                     (no .., no //)",
                    self.path
                ),
            ));
        }
        let limits = [
            ("max_message_chars", self.max_message_chars == 0),
            ("max_messages_per_minute", self.max_messages_per_minute == 0),
            ("history_messages", self.history_messages == 0),
            ("max_attachment_bytes", self.max_attachment_bytes == 0),
        ];
        for (key, _) in limits.into_iter().filter(|(_, is_zero)| *is_zero) {
            errors.push(SettingsError::new(key, "must be at least 1"));
        }
        errors
    }

    /// Where the generated token of the channel `site` describes lives, when it needs one:
    /// no `access_token`, and not a public chat on loopback (see [`WebConfig::public_on`]).
    pub fn generated_token_path(&self, site: &Site<'_>) -> Option<PathBuf> {
        let public = site.listen.is_some_and(|listen| self.public_on(listen));
        (!self.access_token.is_set() && !public)
            .then(|| crate::token::token_path(site.data_dir, site.name))
    }

    /// Whether this is a public chat on `listen`: no `access_token`, `public_hosts` named,
    /// and a loopback listen (a proxy on this host serves it). Only such a chat opens
    /// without a token; every other one has a configured or generated token.
    pub fn public_on(&self, listen: SocketAddr) -> bool {
        self.answers_anyone() && listen.ip().is_loopback()
    }

    /// Whether the chat answers people other than its operator: no configured token, and
    /// public names a proxy forwards (which anyone who reaches the proxy may use). Off
    /// loopback a generated token would gate it, but `public_hosts` there still says the
    /// operator meant it for others, so it counts as open too.
    pub fn answers_anyone(&self) -> bool {
        !self.access_token.is_set() && !self.public_hosts.is_empty()
    }

    /// The page's URL path, always ending in `/`; the socket is this plus `ws`.
    pub fn page_path(&self) -> String {
        self.base()
    }

    /// The page's canonical URL path, always ending in `/` so relative URLs resolve under it.
    pub(crate) fn base(&self) -> String {
        let trimmed = self.path.trim_end_matches('/');
        format!("{trimmed}/")
    }
}

fn valid_path(path: &str) -> bool {
    path.starts_with('/')
        && !path.contains("//")
        && !path
            .split('/')
            .any(|segment| segment == "." || segment == "..")
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '/' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    /// The settings as the gateway builds them: a generated token file to open with.
    fn gated() -> WebConfig {
        WebConfig {
            token_file: Some("web.token".into()),
            ..WebConfig::default()
        }
    }

    #[test]
    fn without_a_token_or_a_token_file_any_listen_address_is_refused_with_the_reason() {
        for listen in ["0.0.0.0:8080", "127.0.0.1:8080", "[::1]:8080"] {
            let err = WebConfig::default().check("web", addr(listen)).unwrap_err();
            let message = err.to_string();
            assert!(
                message.contains("channels.web.access_token is required"),
                "{message}"
            );
            assert!(message.contains(listen), "{message}");
        }
    }

    #[test]
    fn a_token_file_or_a_token_allows_any_address_and_only_a_public_chat_on_loopback_needs_none() {
        let generated = WebConfig {
            token_file: Some("web.token".into()),
            ..WebConfig::default()
        };
        assert_eq!(generated.check("web", addr("127.0.0.1:8080")), Ok(()));
        assert_eq!(generated.check("web", addr("0.0.0.0:8080")), Ok(()));
        let public = WebConfig {
            public_hosts: vec!["chat.example.com".into()],
            ..WebConfig::default()
        };
        assert_eq!(public.check("web", addr("127.0.0.1:8080")), Ok(()));
        assert!(public.check("web", addr("0.0.0.0:8080")).is_err());
        let locked = WebConfig {
            access_token: "s3cret".into(),
            ..WebConfig::default()
        };
        assert_eq!(locked.check("web", addr("0.0.0.0:8080")), Ok(()));
        let empty = WebConfig {
            access_token: "".into(),
            ..WebConfig::default()
        };
        assert!(empty.check("web", addr("0.0.0.0:8080")).is_err());
    }

    #[test]
    fn paths_must_be_plain_absolute_paths() {
        for (path, ok) in [
            ("/", true),
            ("/chat", true),
            ("/chat/", true),
            ("/a/b-c_d", true),
            ("chat", false),
            ("/a/../b", false),
            ("//evil", false),
            ("/a b", false),
            ("/<x>", false),
        ] {
            let config = WebConfig {
                path: path.into(),
                ..gated()
            };
            assert_eq!(
                config.check("web", addr("127.0.0.1:1")).is_ok(),
                ok,
                "{path}"
            );
        }
    }

    #[test]
    fn the_base_always_ends_with_one_slash() {
        for (path, base) in [("/", "/"), ("/chat", "/chat/"), ("/chat/", "/chat/")] {
            let config = WebConfig {
                path: path.into(),
                ..WebConfig::default()
            };
            assert_eq!(config.base(), base);
        }
    }

    #[test]
    fn zero_limits_are_refused_by_name() {
        let config = WebConfig {
            max_messages_per_minute: 0,
            ..gated()
        };
        let err = config.check("web", addr("127.0.0.1:1")).unwrap_err();
        assert!(err.to_string().contains("max_messages_per_minute"), "{err}");
    }

    #[test]
    fn debug_output_never_shows_the_token() {
        let config = WebConfig {
            access_token: "tok-very-secret".into(),
            ..WebConfig::default()
        };
        let shown = format!("{config:?}");
        assert!(!shown.contains("tok-very-secret") && shown.contains("[REDACTED]"));
    }

    #[test]
    fn every_zero_limit_is_named_and_unset_keys_take_the_defaults() {
        let config: WebConfig = serde_json::from_value(serde_json::json!({
            "max_message_chars": 0, "history_messages": 0,
        }))
        .expect("parses");
        let keys: Vec<_> = config.problems(None).iter().map(|e| e.key).collect();
        assert_eq!(keys, ["max_message_chars", "history_messages"]);
        assert_eq!(config.path, "/");
        assert_eq!(
            config.max_messages_per_minute,
            DEFAULT_MAX_MESSAGES_PER_MINUTE
        );
    }

    #[test]
    fn an_unknown_key_or_a_history_dir_key_is_refused() {
        for key in ["history_dir", "acess_token"] {
            let parsed = serde_json::from_value::<WebConfig>(serde_json::json!({ key: "x" }));
            assert!(parsed.is_err(), "{key}");
        }
    }
}
