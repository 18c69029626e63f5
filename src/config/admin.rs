//! `[admin]`: where the operator's dashboard is mounted, and the paths it mounts there (the
//! config's route check and the dashboard's router read the one list). Only its token opens it; the old
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

/// The pages, in the order of the navigation: (path below the base, title).
pub const PAGES: [(&str, &str); 7] = [
    ("/", "Health"),
    ("/approvals", "Approvals"),
    ("/access", "Access"),
    ("/conversations", "Conversations"),
    ("/usage", "Usage"),
    ("/audit", "Audit log"),
    ("/schedules", "Schedules"),
];

/// Every path the dashboard mounts under `base` (for the config's route check).
pub fn paths(base: &str) -> Vec<String> {
    let mut out = vec![base.to_owned()];
    out.extend(PAGES.iter().map(|(p, _)| format!("{base}{p}")));
    out.extend(
        [
            "/admin.js",
            "/admin.css",
            "/events",
            "/approvals/decide",
            "/access/allow",
            "/access/refuse",
            "/access/revoke",
            "/conversations/stop",
        ]
        .iter()
        .map(|p| format!("{base}{p}")),
    );
    out
}
