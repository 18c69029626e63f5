//! What every channel crate's `[channels.<name>]` settings type offers the core: checks that
//! name the key to fix, the secrets the scrubber must hide, the HTTP routes the channel will
//! mount (so two channels cannot claim one path), and building the channel itself. The core
//! holds an enum of the crates' settings types and reaches them only through
//! [`ChannelSettings`]; it never names a platform's keys.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

pub use switchboard_env::{EnvString, Secret, expand, expanded, expanded_opt};

use crate::Channel;
use crate::access::AccessRules;
pub use crate::settings_error::SettingsError;

/// What the gateway around a channel looks like, for checks and construction.
#[derive(Debug, Clone, Copy)]
pub struct Site<'a> {
    /// The instance name (`[channels.<name>]`), which is also its conversations' `channel`.
    pub name: &'a str,
    /// The gateway's HTTP listen address; `None` when `gateway.listen` is itself invalid.
    pub listen: Option<SocketAddr>,
    /// The gateway's data directory, for a channel's own files.
    pub data_dir: &'a Path,
    /// What a channel runs every text through before writing it to its own files (the
    /// core's credential scrubber); `None` when only checking settings.
    pub redactor: Option<&'a Redactor>,
    /// Starts a helper process a channel runs beside itself under the core's sandbox;
    /// `None` when only checking settings.
    pub launcher: Option<&'a crate::Launcher>,
}

/// A text filter the core hands a channel when building it: the credential scrubber, so a
/// channel that keeps its own files (the web chat's transcripts) never writes a secret.
/// Channel crates cannot name the core's `Scrubber`, so it travels as a function.
#[derive(Clone, Default)]
pub struct Redactor(Option<Arc<Filter>>);

/// The function inside a [`Redactor`].
type Filter = dyn Fn(&str) -> String + Send + Sync;

impl Redactor {
    /// A redactor that runs `filter` on every text.
    pub fn new(filter: impl Fn(&str) -> String + Send + Sync + 'static) -> Self {
        Self(Some(Arc::new(filter)))
    }

    /// `text` redacted (unchanged by the default redactor, which has no filter).
    pub fn redact(&self, text: &str) -> String {
        match &self.0 {
            Some(filter) => filter(text),
            None => text.to_owned(),
        }
    }
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Redactor(filter)"
        } else {
            "Redactor(none)"
        })
    }
}

/// An HTTP route a channel will mount on the gateway's shared server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRoute {
    /// The key that decides the path (`path`), or `None` when it follows from the name.
    pub key: Option<&'static str>,
    /// The full path, e.g. `/chat/ws`.
    pub path: String,
    /// Whether other channels of the same kind may claim this path too: the crate then
    /// mounts it once and dispatches among them (WhatsApp numbers of one app share one
    /// callback URL).
    pub shared: bool,
}

/// Why a channel could not be built from its settings.
pub type BuildError = Box<dyn std::error::Error + Send + Sync>;

/// A channel crate's settings type, as the core sees it.
pub trait ChannelSettings: Send + Sync {
    /// Every problem serde cannot see (a webhook without its secret, a bad URL). A channel
    /// whose [`missing_credential`](Self::missing_credential) is `Some` is still checked.
    fn validate(&self, site: &Site<'_>) -> Result<(), Vec<SettingsError>>;

    /// Every secret in these settings, for the log scrubber and tool environments.
    fn secrets(&self) -> Vec<&Secret>;

    /// The key of an unset credential without which the channel is skipped (with a warning)
    /// rather than started, so an example config runs with no platform accounts.
    fn missing_credential(&self) -> Option<&'static str> {
        None
    }

    /// The HTTP routes the channel will mount when built (none by default).
    fn http_routes(&self, _name: &str) -> Vec<HttpRoute> {
        Vec::new()
    }

    /// Who may talk to the bot here, for the core's access decision (made in its sink).
    fn access(&self) -> AccessRules;

    /// The channel, ready for the gateway to start.
    fn build(&self, site: &Site<'_>) -> Result<Arc<dyn Channel>, BuildError>;
}

/// `Err` with every problem in `errors`, or `Ok` when there are none.
pub fn collect(errors: Vec<SettingsError>) -> Result<(), Vec<SettingsError>> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Whether `url` is an http(s) URL with something after the scheme.
pub fn is_http_url(url: &str) -> bool {
    ["http://", "https://"].iter().any(|scheme| {
        url.strip_prefix(scheme)
            .is_some_and(|rest| !rest.is_empty())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_reads_as_key_then_what_is_wrong() {
        let err = SettingsError::new("api_url", "must be an http(s) URL");
        assert_eq!(err.to_string(), "api_url must be an http(s) URL");
    }

    #[test]
    fn only_http_and_https_urls_with_a_host_pass() {
        assert!(is_http_url("https://api.telegram.org"));
        assert!(is_http_url("http://127.0.0.1:9"));
        assert!(!is_http_url("ftp://x") && !is_http_url("https://") && !is_http_url("x"));
    }

    #[test]
    fn a_redactor_runs_its_filter_and_the_default_changes_nothing() {
        let redactor = Redactor::new(|t| t.replace("hunter2", "hunt*[REDACTED]"));
        assert_eq!(redactor.redact("pw hunter2"), "pw hunt*[REDACTED]");
        assert_eq!(Redactor::default().redact("pw hunter2"), "pw hunter2");
    }

    #[test]
    fn no_errors_collect_to_ok() {
        assert_eq!(collect(Vec::new()), Ok(()));
        assert!(collect(vec![SettingsError::new("k", "bad")]).is_err());
    }
}
