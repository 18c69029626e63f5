//! `[channels.<name>] kind = "web"` as the channel sees it: read once at start-up and checked
//! against the gateway's listen address before anything is served.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Default longest message a person may type, in characters.
pub const DEFAULT_MAX_MESSAGE_CHARS: usize = 8000;
/// Default number of messages (and button presses) one session may send per minute.
pub const DEFAULT_MAX_MESSAGES_PER_MINUTE: u32 = 30;
/// Default number of messages each session keeps for resync and page reloads.
pub const DEFAULT_HISTORY_MESSAGES: usize = 100;

/// Configuration of one web chat instance.
#[derive(Clone)]
pub struct WebConfig {
    /// Where the page is served (`/` or `/chat`); the socket is `<path>/ws`.
    pub path: String,
    /// Token a browser must present (`?token=` once, then a cookie); `None` serves anyone,
    /// which is only allowed on a loopback listen address.
    pub access_token: Option<String>,
    /// Origins (`https://chat.example.com`) allowed to open the socket besides the page's
    /// own; empty allows the same origin only.
    pub allowed_origins: Vec<String>,
    /// Longest message a person may send, in characters; longer closes the socket (1009).
    pub max_message_chars: usize,
    /// Messages plus button presses one session may send per minute; more are refused.
    pub max_messages_per_minute: u32,
    /// Messages kept per session for reloads and reconnects (oldest dropped first).
    pub history_messages: usize,
    /// Directory where each session's messages are saved as JSON so they survive a restart;
    /// `None` keeps them in memory only.
    pub history_dir: Option<PathBuf>,
}

impl Default for WebConfig {
    fn default() -> Self {
        Self {
            path: "/".to_owned(),
            access_token: None,
            allowed_origins: Vec::new(),
            max_message_chars: DEFAULT_MAX_MESSAGE_CHARS,
            max_messages_per_minute: DEFAULT_MAX_MESSAGES_PER_MINUTE,
            history_messages: DEFAULT_HISTORY_MESSAGES,
            history_dir: None,
        }
    }
}

/// Why a web chat configuration cannot be served.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WebConfigError {
    /// Anyone who can reach a non-loopback address could talk to the agent.
    #[error(
        "channels.{name}.access_token is required because gateway.listen = {listen} is not a \
         loopback address; set it (e.g. access_token = \"${{SWITCHBOARD_WEB_TOKEN}}\") or \
         listen on 127.0.0.1"
    )]
    TokenRequired {
        /// Channel instance name.
        name: String,
        /// The gateway's listen address.
        listen: SocketAddr,
    },
    /// The path is not a plain absolute URL path.
    #[error(
        "channels.{name}.path = {path:?} must start with / and use only letters, digits, \
         -, _ and / (no .., no //)"
    )]
    BadPath {
        /// Channel instance name.
        name: String,
        /// The configured path.
        path: String,
    },
    /// A limit is zero.
    #[error("channels.{name}.{key} must be at least 1")]
    ZeroLimit {
        /// Channel instance name.
        name: String,
        /// The key that is zero.
        key: &'static str,
    },
}

impl WebConfig {
    /// Check the configuration of channel `name` for a gateway listening on `listen`.
    pub fn check(&self, name: &str, listen: SocketAddr) -> Result<(), WebConfigError> {
        let has_token = self.access_token.as_deref().is_some_and(|t| !t.is_empty());
        if !has_token && !listen.ip().is_loopback() {
            return Err(WebConfigError::TokenRequired {
                name: name.to_owned(),
                listen,
            });
        }
        if !valid_path(&self.path) {
            return Err(WebConfigError::BadPath {
                name: name.to_owned(),
                path: self.path.clone(),
            });
        }
        let zero = [
            ("max_message_chars", self.max_message_chars == 0),
            ("max_messages_per_minute", self.max_messages_per_minute == 0),
            ("history_messages", self.history_messages == 0),
        ];
        match zero.into_iter().find(|(_, is_zero)| *is_zero) {
            Some((key, _)) => Err(WebConfigError::ZeroLimit {
                name: name.to_owned(),
                key,
            }),
            None => Ok(()),
        }
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

/// Shows everything but the token, so a config can be logged.
impl fmt::Debug for WebConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let token = self.access_token.as_ref().map(|_| "[redacted]");
        f.debug_struct("WebConfig")
            .field("path", &self.path)
            .field("access_token", &token)
            .field("allowed_origins", &self.allowed_origins)
            .field("max_message_chars", &self.max_message_chars)
            .field("max_messages_per_minute", &self.max_messages_per_minute)
            .field("history_messages", &self.history_messages)
            .field("history_dir", &self.history_dir)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_public_listen_address_without_a_token_is_refused_with_the_reason() {
        let err = WebConfig::default()
            .check("web", addr("0.0.0.0:8080"))
            .unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("channels.web.access_token is required"),
            "{message}"
        );
        assert!(message.contains("0.0.0.0:8080"), "{message}");
    }

    #[test]
    fn loopback_needs_no_token_and_a_token_allows_any_address() {
        let open = WebConfig::default();
        assert_eq!(open.check("web", addr("127.0.0.1:8080")), Ok(()));
        assert_eq!(open.check("web", addr("[::1]:8080")), Ok(()));
        let locked = WebConfig {
            access_token: Some("s3cret".into()),
            ..WebConfig::default()
        };
        assert_eq!(locked.check("web", addr("0.0.0.0:8080")), Ok(()));
        let empty = WebConfig {
            access_token: Some(String::new()),
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
                ..WebConfig::default()
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
            ..WebConfig::default()
        };
        let err = config.check("web", addr("127.0.0.1:1")).unwrap_err();
        assert!(err.to_string().contains("max_messages_per_minute"), "{err}");
    }

    #[test]
    fn debug_output_never_shows_the_token() {
        let config = WebConfig {
            access_token: Some("tok-very-secret".into()),
            ..WebConfig::default()
        };
        let shown = format!("{config:?}");
        assert!(!shown.contains("tok-very-secret") && shown.contains("[redacted]"));
    }
}
