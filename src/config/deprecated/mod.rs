//! Config keys that were renamed or removed: the one table of them ([`DEPRECATIONS`]), the
//! record of each use a loaded config made of one (with its file and line, or its
//! environment variable), and the rewrite into the current form that the loader applies
//! before deserialising and `switchboard config migrate` writes back to the file.
//!
//! A deprecated key keeps working for one minor version with a warning naming what replaced
//! it, and is refused (as an unknown key) from the version after. Files: this one holds the
//! table and the uses; `rewrite` moves and removes keys in a `toml_edit` document, keeping
//! comments, order and formatting; `tests` checks both.

mod rewrite;
#[cfg(test)]
mod tests;

use std::fmt;

use rewrite::{Conflict, apply};

use super::load::{ConfigError, Problem};

/// One renamed or removed key.
#[derive(Debug, PartialEq, Eq)]
pub struct Deprecation {
    /// Its dotted path, e.g. `streaming.progress_min_interval_ms`.
    pub key: &'static str,
    /// What became of it.
    pub change: Change,
    /// The release that deprecated it (from then on it warns).
    pub since: &'static str,
    /// The release that no longer reads it (the minor version after `since`).
    pub removed_in: &'static str,
}

/// What became of a deprecated key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Its value now belongs to this dotted path.
    Renamed(&'static str),
    /// It no longer does anything and is ignored; the words say what replaced it.
    Removed(&'static str),
}

/// Every deprecated key. Delete an entry in the release named by its `removed_in` (a test
/// fails once the crate's version reaches it), so a config then names it as unknown.
pub const DEPRECATIONS: &[Deprecation] = &[
    Deprecation {
        // It paces every intermediate edit of a streaming answer, not only progress lines.
        key: "streaming.progress_min_interval_ms",
        change: Change::Renamed("streaming.edit_min_interval_ms"),
        since: "0.2.0",
        removed_in: "0.3.0",
    },
    Deprecation {
        // A loopback peer is not the operator: a sandboxed tool or a proxy on this host is
        // one too. Only the dashboard's token opens it now.
        key: "admin.loopback_without_token",
        change: Change::Removed("the dashboard's token link (`switchboard admin-token` prints it)"),
        since: "0.2.0",
        removed_in: "0.3.0",
    },
];

/// The table's entry for `key` (a dotted path, lower case), if it is deprecated.
pub(super) fn find(key: &str) -> Option<&'static Deprecation> {
    DEPRECATIONS.iter().find(|d| d.key == key)
}

/// Where a deprecated key was used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Written in the config file.
    File {
        /// The file as named on the command line.
        file: String,
        /// 1-based line and column of the key, when known.
        position: Option<(usize, usize)>,
    },
    /// Set by this `SWITCHBOARD__…` environment variable.
    Env(String),
}

/// One use of a deprecated key by a loaded config; its `Display` is the warning `run` logs
/// and `check` prints, naming the place, the key and what replaced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Use {
    /// The table entry.
    pub deprecation: &'static Deprecation,
    /// Where it was used.
    pub origin: Origin,
}

/// The environment variable that sets dotted `key` (`SWITCHBOARD__SECTION__KEY`).
fn env_name(key: &str) -> String {
    let path = key.replace('.', "__").to_ascii_uppercase();
    format!("{}{path}", super::load::ENV_PREFIX)
}

impl fmt::Display for Use {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Deprecation {
            key, removed_in, ..
        } = self.deprecation;
        match &self.origin {
            Origin::File {
                file,
                position: Some((line, column)),
            } => write!(f, "{file}:{line}:{column}: ")?,
            Origin::File {
                file,
                position: None,
            } => write!(f, "{file}: ")?,
            Origin::Env(var) => write!(f, "environment variable {var}: ")?,
        }
        match (self.deprecation.change, &self.origin) {
            (Change::Renamed(new), Origin::File { .. }) => write!(
                f,
                "`{key}` is deprecated: it is now `{new}` ({removed_in} will refuse the old \
                 name; `switchboard config migrate` renames it)"
            ),
            (Change::Renamed(new), Origin::Env(_)) => write!(
                f,
                "`{key}` is deprecated: it is now `{new}`; set {} instead ({removed_in} will \
                 refuse the old name)",
                env_name(new)
            ),
            (Change::Removed(by), Origin::File { .. }) => write!(
                f,
                "`{key}` no longer does anything and is ignored: {by} replaced it \
                 ({removed_in} will refuse it; `switchboard config migrate` removes it)"
            ),
            (Change::Removed(by), Origin::Env(var)) => write!(
                f,
                "`{key}` no longer does anything and is ignored: {by} replaced it; unset \
                 {var} ({removed_in} will refuse it)"
            ),
        }
    }
}

/// A config file's text in its current form, and the deprecations that changed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Migrated {
    /// The whole text: the deprecated keys renamed or removed, every other byte kept.
    pub text: String,
    /// What was rewritten, in table order; empty when the file was current.
    pub applied: Vec<&'static Deprecation>,
}

/// `text` (the config file named `file` in errors) with every deprecated key it uses in its
/// current form. Refuses a file that is not TOML, or that sets a renamed key under both names.
pub fn migrate(text: &str, file: &str) -> Result<Migrated, ConfigError> {
    migrate_with(text, file, DEPRECATIONS)
}

fn migrate_with(
    text: &str,
    file: &str,
    table: &'static [Deprecation],
) -> Result<Migrated, ConfigError> {
    let invalid = |problems| ConfigError::Invalid {
        file: file.to_owned(),
        problems,
    };
    let mut doc = super::load::document(text).map_err(|p| invalid(vec![p]))?;
    let applied = apply(&mut doc, table).map_err(|c| invalid(problems(text, c)))?;
    let text = match applied.is_empty() {
        true => text.to_owned(),
        false => doc.to_string(),
    };
    Ok(Migrated { text, applied })
}

/// Renames and removals the loader applies to `doc` (parsed from `text`, named `file`)
/// before deserialising, each recorded with the line it is on.
pub(super) fn apply_for_load(
    doc: &mut toml_edit::DocumentMut,
    text: &str,
    file: &str,
) -> Result<Vec<Use>, Vec<Problem>> {
    let applied = apply(doc, DEPRECATIONS).map_err(|c| problems(text, c))?;
    Ok(applied
        .into_iter()
        .map(|deprecation| Use {
            deprecation,
            origin: Origin::File {
                file: file.to_owned(),
                position: super::locate::position(text, deprecation.key),
            },
        })
        .collect())
}

fn problems(text: &str, conflicts: Vec<Conflict>) -> Vec<Problem> {
    conflicts
        .into_iter()
        .map(|c| Problem {
            key: c.key.to_owned(),
            position: super::locate::position(text, c.key),
            message: c.message,
        })
        .collect()
}
