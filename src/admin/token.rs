//! The dashboard's own token: generated at first start into `<data_dir>/admin.token` (mode
//! 0600, shared by replicas through the data directory), never the web chat's. Start-up
//! ([`prepare`]) reads it so the scrubber knows it, and hands back the link of a token made
//! now (for the operator's terminal only, never the log); `switchboard admin-token`
//! ([`run`]) prints the link and `--rotate` replaces it, which a running gateway honours at
//! its next request (the page reads the file per request: it is small and the page is
//! rarely used).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use switchboard_channel::{Secret, TokenFile};

use crate::config::{Config, ConfigArgs};

/// The command that replaces the token, named when its file goes bad.
pub const ROTATE_COMMAND: &str = "switchboard admin-token --rotate";

/// Where the dashboard's token lives under `data_dir`.
pub fn token_path(data_dir: &Path) -> PathBuf {
    crate::data_dir::admin_token(data_dir)
}

/// The dashboard's token file under `data_dir`; nothing is read yet.
pub fn token_file(data_dir: &Path) -> TokenFile {
    TokenFile::new(token_path(data_dir), ROTATE_COMMAND)
}

/// Read (or make) the dashboard's token and hand it to the config, so the scrubber
/// redacts it wherever it would appear; returns the dashboard's link when the token was
/// made now (the first start shows it on its terminal). Nothing happens when the dashboard
/// is off.
pub fn prepare(config: &mut Config) -> anyhow::Result<Option<String>> {
    if !config.admin.enabled {
        return Ok(None);
    }
    let (token, made) = token_file(&config.gateway.data_dir).load_or_create()?;
    let link = made.then(|| link(config, None, &token)).transpose()?;
    config.admin.token = Secret::new(token);
    Ok(link)
}

/// The start-up log line about the dashboard: where its token is kept and the command that
/// prints its link (never the token); `None` when the dashboard is off.
pub fn start_line(config: &Config) -> Option<String> {
    config.admin.enabled.then(|| {
        format!(
            "dashboard at {}: opens only with its token (stored in {}); print the link with \
             `switchboard admin-token`",
            config.admin.base(),
            token_path(&config.gateway.data_dir).display()
        )
    })
}

/// The dashboard's link with `token`: `origin` (or http://<listen address>, with a `<host>`
/// placeholder for a wildcard address) and the dashboard's path.
fn link(config: &Config, origin: Option<String>, token: &str) -> anyhow::Result<String> {
    let origin = match origin {
        Some(origin) => origin.trim_end_matches('/').to_owned(),
        None => {
            let listen: SocketAddr = config
                .gateway
                .listen
                .parse()
                .with_context(|| format!("gateway.listen = {}", &*config.gateway.listen))?;
            if listen.ip().is_unspecified() {
                format!("http://<host>:{}", listen.port())
            } else {
                format!("http://{listen}")
            }
        }
    };
    Ok(format!("{origin}{}/?token={token}", config.admin.base()))
}

/// `switchboard admin-token` options.
#[derive(Debug, Args)]
pub struct AdminTokenArgs {
    /// Replace the token: links and browser cookies with the old one stop working at once.
    #[arg(long)]
    pub rotate: bool,
    /// Start of the printed link instead of http://<listen address>, e.g.
    /// https://ops.example.com when a proxy serves the gateway.
    #[arg(long)]
    pub origin: Option<String>,
}

/// `switchboard admin-token`: the dashboard's link with its token on stdout. The config
/// gives the listen address, the data directory and `[admin]`.
pub fn run(config: &ConfigArgs, args: AdminTokenArgs) -> anyhow::Result<ExitCode> {
    let config = config.load()?;
    if !config.admin.enabled {
        anyhow::bail!("the dashboard is off ([admin] enabled = false)");
    }
    let file = token_file(&config.gateway.data_dir);
    let token = if args.rotate {
        let token = file.rotate()?;
        eprintln!(
            "new dashboard token stored in {}; the old one no longer opens it",
            file.path().display()
        );
        token
    } else {
        file.load_or_create()?.0
    };
    println!("{}", link(&config, args.origin, &token)?);
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_token_is_made_once_private_and_rotation_replaces_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = token_file(dir.path());
        assert_eq!(file.path(), dir.path().join("admin.token"));
        let (first, made) = file.load_or_create().unwrap();
        assert!(made);
        assert_eq!(first.len(), 64);
        assert_eq!(
            file.load_or_create().unwrap(),
            (first.clone(), false),
            "kept across starts"
        );
        let mode = std::fs::metadata(file.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let second = file.rotate().unwrap();
        assert_ne!(second, first);
        assert_eq!(file.read().unwrap(), Some(second));
        std::fs::write(file.path(), "short\n").unwrap();
        let err = file.read().unwrap_err().to_string();
        assert!(
            err.contains("admin.token") && err.contains("admin-token --rotate"),
            "{err}"
        );
    }
}
