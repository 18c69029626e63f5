//! One thing wrong with a channel's settings, naming the key to fix. Below both the access
//! rules (which report a `"*"` allow list without `dm_policy = "open"` as one) and the
//! settings trait (whose `validate` returns them), so neither has to import the other for it.

/// One thing wrong with a channel's settings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key} {message}")]
pub struct SettingsError {
    /// The key within `[channels.<name>]`, e.g. `secret_token`.
    pub key: &'static str,
    /// What is wrong, written to follow the key (`must be an https URL`).
    pub message: String,
}

impl SettingsError {
    /// A problem with `key`.
    pub fn new(key: &'static str, message: impl Into<String>) -> Self {
        Self {
            key,
            message: message.into(),
        }
    }
}
