//! Writes to files that run code later on their own: shell start-up files, git's hooks and
//! config, desktop autostart entries. A write there waits for the next login or `git` call.

use super::{normalise, written_paths};
use crate::part::{Analysis, Part};

/// File names a shell or git reads at start-up, wherever they are written.
const STARTUP_FILES: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".kshrc",
    ".inputrc",
    ".gitconfig",
    ".npmrc",
    ".pythonrc",
];

/// Directories under home whose files run at start-up.
const STARTUP_DIRS: &[&str] = &["~/.config/autostart", "~/.config/fish", "~/.config/git"];

/// Whether `part` writes a start-up file, a git hook or a repository's git config.
pub(super) fn startup_write(part: &Part, _: &Analysis) -> bool {
    written_paths(part).iter().any(|path| {
        let path = normalise(path);
        let components: Vec<&str> = path.split('/').collect();
        let name = components.last().copied().unwrap_or_default();
        let git = components
            .windows(2)
            .any(|w| w[0] == ".git" && matches!(w[1], "hooks" | "config"));
        let under = |dir: &&str| {
            path.strip_prefix(dir)
                .is_some_and(|r| r.is_empty() || r.starts_with('/'))
        };
        git || STARTUP_FILES.contains(&name) || STARTUP_DIRS.iter().any(under)
    })
}
