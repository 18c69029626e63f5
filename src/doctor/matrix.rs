//! The doctor's check of Matrix accounts: what of the bot's device lies on disk, and who
//! can read it.

#[cfg(feature = "matrix")]
use std::os::unix::fs::PermissionsExt;

use super::Finding;
#[cfg(feature = "matrix")]
use super::Severity;
use crate::config::Config;

/// Matrix accounts whose encryption keys lie unencrypted on disk, or whose saved session
/// (an access token) others can read.
pub(super) fn findings(config: &Config) -> Vec<Finding> {
    let mut out = Vec::new();
    #[cfg(feature = "matrix")]
    for (name, channel) in &config.channels {
        let crate::config::ChannelConfig::Matrix(settings) = channel else {
            continue;
        };
        let dir = config.gateway.data_dir.join("matrix").join(name);
        // A channel without its password is skipped at start: nothing of it is on disk.
        let runs = switchboard_channel::ChannelSettings::missing_credential(settings).is_none();
        if runs && !settings.store_passphrase.is_set() {
            out.push(Finding::new(
                Severity::Warning,
                format!(
                    "channels.{name}: the bot's Matrix encryption keys in {} are stored unencrypted",
                    dir.display()
                ),
                format!(
                    "set `store_passphrase = \"${{MATRIX_STORE_PASSPHRASE}}\"` in [channels.{name}] before the \
                     first start (an existing store cannot take one: move {} away to start over as a new device)",
                    dir.display()
                ),
            ));
        }
        let session = dir.join("session.json");
        if std::fs::metadata(&session).is_ok_and(|m| m.permissions().mode() & 0o044 != 0) {
            out.push(Finding::new(
                Severity::Critical,
                format!(
                    "the Matrix session {} (the bot's access token) is readable by others",
                    session.display()
                ),
                format!(
                    "chmod 600 {}, then log the device out from another client and move {} away",
                    session.display(),
                    dir.display()
                ),
            ));
        }
    }
    #[cfg(not(feature = "matrix"))]
    let _ = config;
    out
}

#[cfg(all(test, feature = "matrix"))]
mod tests {
    use super::*;

    #[test]
    fn a_matrix_store_without_a_passphrase_is_a_warning_and_a_readable_session_critical() {
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            "[gateway]\ndata_dir = \"{}\"\n[channels.mx]\nkind = \"matrix\"\nhomeserver = \"https://m.example.org\"\nuser_id = \"@b:example.org\"\npassword = \"not-a-real-one\"\n",
            dir.path().display()
        );
        let config = crate::config::parse(&text, "t.toml", &[]).unwrap();
        let found = findings(&config);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].severity, Severity::Warning);
        assert!(found[0].fix.contains("store_passphrase"), "{found:?}");
        let session = dir.path().join("matrix/mx/session.json");
        std::fs::create_dir_all(session.parent().unwrap()).unwrap();
        std::fs::write(&session, "{}").unwrap();
        std::fs::set_permissions(&session, std::fs::Permissions::from_mode(0o644)).unwrap();
        let found = findings(&config);
        assert!(
            found.iter().any(|f| f.severity == Severity::Critical),
            "{found:?}"
        );
    }
}
