//! Which config file a subcommand reads: `--config` (or `SWITCHBOARD_CONFIG`), given before
//! or after the subcommand (a global option, so `switchboard skills list --config x.toml`
//! and `switchboard --config x.toml skills list` are the same), else
//! `config/switchboard.toml`; when that file does not exist, a fallback stands in for it
//! with a log line saying so: `--fallback-config` (or `SWITCHBOARD_FALLBACK_CONFIG`), else
//! the example config when no `--config` was given.
//!
//! The Docker image sets both variables: `SWITCHBOARD_CONFIG=/config/switchboard.toml` (the
//! user's file, from a mounted `./config` directory, when there is one) and
//! `SWITCHBOARD_FALLBACK_CONFIG` (the config baked into the image). So `docker compose up` on
//! a fresh clone runs on the built-in config, and writing `config/switchboard.toml` switches
//! to it at the next start, for `run` and `docker compose exec` subcommands alike.

use std::path::PathBuf;

use clap::Args;

use super::{Config, ConfigError};

/// Where `--config` points when it is not given.
pub const DEFAULT_CONFIG: &str = "config/switchboard.toml";
/// Used, with a log line saying so, when the default config does not exist.
pub const EXAMPLE_CONFIG: &str = "config/switchboard.example.toml";

/// The config file options of the command line: global, so every subcommand (nested ones
/// too) takes them before or after its name.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// Config file (default config/switchboard.toml, else the example config).
    #[arg(long, short, global = true, env = "SWITCHBOARD_CONFIG")]
    pub config: Option<PathBuf>,
    /// Config used instead, with a log line, when the config file does not exist (the Docker
    /// image's built-in config); without it a missing --config file is an error.
    #[arg(long, global = true, env = "SWITCHBOARD_FALLBACK_CONFIG")]
    pub fallback_config: Option<PathBuf>,
}

impl ConfigArgs {
    /// The config path in effect, and the missing file it stands in for, if any.
    pub(crate) fn path(&self) -> (PathBuf, Option<PathBuf>) {
        let wanted = self.config.clone().unwrap_or_else(|| DEFAULT_CONFIG.into());
        let fallback = self
            .fallback_config
            .clone()
            .or_else(|| self.config.is_none().then(|| PathBuf::from(EXAMPLE_CONFIG)));
        match fallback {
            Some(fallback) if !wanted.exists() => (fallback, Some(wanted)),
            _ => (wanted, None),
        }
    }

    /// The config in effect, parsed and checked.
    pub(crate) fn load(&self) -> Result<Config, ConfigError> {
        let (path, missing) = self.path();
        let config = super::load(&path)?;
        log_fallback(&path, missing.as_ref());
        Ok(config)
    }
}

/// The log line for a fallback config (call it once logging is set up).
pub(crate) fn log_fallback(used: &std::path::Path, missing: Option<&PathBuf>) {
    if let Some(missing) = missing {
        tracing::info!("{} not found; using {}", missing.display(), used.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(config: Option<&str>, fallback: Option<&str>) -> ConfigArgs {
        ConfigArgs {
            config: config.map(PathBuf::from),
            fallback_config: fallback.map(PathBuf::from),
        }
    }

    #[test]
    fn a_fallback_stands_in_only_for_a_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let (user, baked) = (dir.path().join("user.toml"), dir.path().join("baked.toml"));
        std::fs::write(&baked, "").unwrap();
        let both = args(user.to_str(), baked.to_str());
        assert_eq!(both.path(), (baked.clone(), Some(user.clone())));
        std::fs::write(&user, "").unwrap();
        assert_eq!(both.path(), (user.clone(), None), "the user's file wins");
        let missing = dir.path().join("typo.toml");
        let explicit = args(missing.to_str(), None);
        assert_eq!(
            explicit.path(),
            (missing, None),
            "no fallback: an error later"
        );
    }
}
