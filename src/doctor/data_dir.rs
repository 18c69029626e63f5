//! The doctor's checks of the data directory and of whether tools can reach it: a data
//! directory others may write (they could replace the database or plant files the gateway
//! trusts) or read, and a host where the sandbox user cannot reach its workspace at all.

use std::os::unix::fs::PermissionsExt;

use super::{Finding, Severity};
use crate::config::Config;

/// The data directory's mode: others writing it is critical, its group writing it or
/// others reading it a warning. Search permission alone (`0711`, which a root gateway's
/// sandbox may need) is private: nobody else can list or change what is inside.
pub fn mode(config: &Config) -> Vec<Finding> {
    let data = &config.gateway.data_dir;
    let Ok(meta) = std::fs::metadata(data) else {
        return Vec::new();
    };
    let mode = meta.permissions().mode() & 0o777;
    let shown = data.display();
    let fix = format!("chmod 700 {shown}");
    let found = if mode & 0o002 != 0 {
        Finding::new(
            Severity::Critical,
            format!(
                "the data directory {shown} is world-writable (mode {mode:o}): anyone on this host could replace the database, a token or a skill's verified copy"
            ),
            fix,
        )
    } else if mode & 0o020 != 0 {
        Finding::new(
            Severity::Warning,
            format!(
                "the data directory {shown} is group-writable (mode {mode:o}): its group could replace the database, a token or a skill's verified copy"
            ),
            fix,
        )
    } else if mode & 0o044 != 0 {
        Finding::new(
            Severity::Warning,
            format!(
                "the data directory {shown} is readable by others (mode {mode:o}): conversations, workspaces"
            ),
            fix,
        )
    } else {
        return Vec::new();
    };
    vec![found]
}

/// Tools that cannot reach their workspace on this host: every command would fail.
pub fn reach(posture: &crate::sandbox::Posture) -> Vec<Finding> {
    let Some(why) = &posture.workspace_unreachable else {
        return Vec::new();
    };
    vec![Finding::new(
        Severity::Critical,
        format!("no tool can run on this host: {why}"),
        "move gateway.data_dir to a directory the sandbox user can reach (e.g. /var/lib/switchboard), or run where mount namespaces are allowed",
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn findings(mode_bits: u32) -> Vec<Finding> {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(mode_bits)).unwrap();
        let text = format!("[gateway]\ndata_dir = \"{}\"\n", data.display());
        mode(&crate::config::parse(&text, "t.toml", &[]).unwrap())
    }

    #[test]
    fn a_data_directory_others_can_write_is_critical_and_one_only_searchable_is_private() {
        let world = findings(0o777);
        assert_eq!(world[0].severity, Severity::Critical, "{world:?}");
        assert!(world[0].what.contains("world-writable"), "{world:?}");
        let group = findings(0o770);
        assert_eq!(group[0].severity, Severity::Warning, "{group:?}");
        assert!(group[0].what.contains("group-writable"), "{group:?}");
        assert!(findings(0o755)[0].what.contains("readable by others"));
        for private in [0o700, 0o711, 0o701] {
            assert!(findings(private).is_empty(), "{private:o}");
        }
    }
}
