//! `[admin]`: where the operator's dashboard is mounted. Only its token opens it; the old
//! `loopback_without_token` key is still accepted, with a warning saying what replaced it.

use serde::Deserialize;
use switchboard_channel::Secret;

/// `[admin]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdminConfig {
    /// Serve the dashboard on the gateway's listener.
    pub enabled: bool,
    /// Its path (`/admin`): the pages are below it.
    pub path: String,
    /// No longer does anything: a loopback peer is never let in without the token (a
    /// sandboxed tool with network and a proxy on this host are loopback peers too).
    /// Accepted so an older config still loads; [`AdminConfig::warnings`] names what
    /// replaced it.
    pub loopback_without_token: Option<bool>,
    /// The generated token (`<data_dir>/admin.token`), read at start-up so the scrubber
    /// knows it; never configured.
    #[serde(skip)]
    pub token: Secret,
}

impl Default for AdminConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            path: "/admin".into(),
            loopback_without_token: None,
            token: Secret::default(),
        }
    }
}

impl AdminConfig {
    /// The path without a trailing slash (`/admin`).
    pub fn base(&self) -> String {
        let trimmed = self.path.trim_end_matches('/');
        if trimmed.is_empty() {
            "/admin".into()
        } else {
            trimmed.to_owned()
        }
    }

    /// What `check` and start-up warn about: a key that no longer does anything.
    pub fn warnings(&self) -> Vec<String> {
        match self.loopback_without_token {
            None => Vec::new(),
            Some(_) => vec![
                "[admin] loopback_without_token no longer does anything and can be removed: the \
                 dashboard opens only with its token, from loopback too (a tool or a proxy on \
                 this host is loopback as well). The token link replaced it: the first start \
                 prints it on its terminal, and `switchboard admin-token` prints it again"
                    .to_owned(),
            ],
        }
    }

    /// Problems with the settings, as (key, message).
    pub fn problems(&self) -> Vec<(String, String)> {
        let path = &self.path;
        let bad = !path.starts_with('/')
            || path.trim_end_matches('/').is_empty()
            || path.contains(['?', '#', '{', '}', '*', ' ']);
        if self.enabled && bad {
            let message = format!(
                "{path:?} must be a path below the root like \"/admin\" (no query, braces or spaces)"
            );
            return vec![("admin.path".into(), message)];
        }
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_old_loopback_key_still_loads_with_a_warning_that_names_the_token_link() {
        for value in ["true", "false"] {
            let text = format!("[admin]\nloopback_without_token = {value}\n");
            let config = crate::config::parse(&text, "t.toml", &[]).unwrap();
            let warnings = config.admin.warnings();
            assert_eq!(warnings.len(), 1, "{warnings:?}");
            assert!(
                warnings[0].contains("loopback_without_token")
                    && warnings[0].contains("switchboard admin-token"),
                "{warnings:?}"
            );
        }
        let config = crate::config::parse("", "t.toml", &[]).unwrap();
        assert!(config.admin.warnings().is_empty());
    }
}
