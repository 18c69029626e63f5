//! `[admin]`: where the operator's dashboard is mounted. Only its token opens it; the old
//! `loopback_without_token` key is read and dropped by the config's deprecation table
//! (`config::deprecated`), which warns and names the token link that replaced it.

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
