//! `[skills]`: where Agent Skills are installed and where their pins are kept. A skill is a
//! folder holding a `SKILL.md` (see `crate::skills`); each directory in `dirs` holds skill
//! folders. Which skills a profile may use is `[agents.<name>] skills`.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// `[skills]`.
#[derive(Debug, Clone, Deserialize, Default, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct SkillsConfig {
    /// Directories whose sub-folders are skills (`skills/pdf/SKILL.md`); none by default.
    pub dirs: Vec<PathBuf>,
    /// The file holding each trusted skill's content hash (default:
    /// `<data_dir>/skills.lock`). `switchboard skills trust` writes it; a skill whose files
    /// no longer hash to its pin is not loaded.
    pub lock: Option<PathBuf>,
}

impl SkillsConfig {
    /// The lock file in effect for a gateway whose data directory is `data_dir`.
    pub fn lock_file(&self, data_dir: &Path) -> PathBuf {
        self.lock
            .clone()
            .unwrap_or_else(|| data_dir.join("skills.lock"))
    }
}

/// Problems with `[skills]`, as `(key, message)`: a directory given twice, an empty path.
pub(super) fn problems(config: &SkillsConfig) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (i, dir) in config.dirs.iter().enumerate() {
        if dir.as_os_str().is_empty() {
            out.push(("skills.dirs".into(), "a directory is empty".into()));
        } else if config.dirs[..i].contains(dir) {
            let message = format!("{} is listed twice", dir.display());
            out.push(("skills.dirs".into(), message));
        }
    }
    if config
        .lock
        .as_ref()
        .is_some_and(|l| l.as_os_str().is_empty())
    {
        out.push(("skills.lock".into(), "must not be empty".into()));
    }
    out
}
