//! The dashboard's own token: generated at first start into `<data_dir>/admin.token` (mode
//! 0600, shared by replicas through the data directory), never the web chat's. Start-up
//! ([`prepare`]) reads it so the scrubber knows it, and hands back the link of a token made
//! now (for the operator's terminal only, never the log); `switchboard admin-token`
//! ([`run`]) prints the link and `--rotate` replaces it, which a running gateway honours at
//! its next request (the page reads the file per request: it is small and the page is
//! rarely used).

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::net::SocketAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use rand::RngCore;
use rand::rngs::OsRng;
use switchboard_channel::Secret;

use crate::cli::ConfigArgs;
use crate::config::Config;

/// Random bytes in a token (256 bits), written as 64 hex digits.
const TOKEN_BYTES: usize = 32;

/// Where the dashboard's token lives under `data_dir`.
pub fn token_path(data_dir: &Path) -> PathBuf {
    data_dir.join("admin.token")
}

/// The stored token, made (and stored, 0600) first when there is none; `true` when it was
/// made now. Two processes starting at once agree: the file appears whole or not at all,
/// and the loser reads the winner's token.
pub fn load_or_create(path: &Path) -> anyhow::Result<(String, bool)> {
    if let Some(token) = read(path)? {
        return Ok((token, false));
    }
    let staged = stage(path)?;
    let linked = fs::hard_link(&staged, path);
    let _ = fs::remove_file(&staged);
    let made = match linked {
        Ok(()) => true,
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => false,
        Err(err) => return Err(err).with_context(|| path.display().to_string()),
    };
    let token =
        read(path)?.with_context(|| format!("{} vanished while it was made", path.display()))?;
    Ok((token, made))
}

/// Replace the token (atomically) and return the new one.
pub fn rotate(path: &Path) -> anyhow::Result<String> {
    let staged = stage(path)?;
    if let Err(err) = fs::rename(&staged, path) {
        let _ = fs::remove_file(&staged);
        return Err(err).with_context(|| path.display().to_string());
    }
    read(path)?.with_context(|| path.display().to_string())
}

/// The token in `path`, `None` when there is no file; an unusable file is an error that
/// names it, so the dashboard stays closed rather than open.
pub fn read(path: &Path) -> anyhow::Result<Option<String>> {
    match fs::read_to_string(path) {
        Ok(text) => {
            let token = text.trim();
            if token.len() < 16 || !token.bytes().all(|b| b.is_ascii_graphic()) {
                anyhow::bail!(
                    "{} does not hold a usable token; replace it with `switchboard admin-token --rotate`",
                    path.display()
                );
            }
            Ok(Some(token.to_owned()))
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err).with_context(|| path.display().to_string()),
    }
}

/// A fresh token in a new 0600 file beside `path`.
fn stage(path: &Path) -> anyhow::Result<PathBuf> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
    let token = generate();
    let staged = dir.join(format!(".admin.token.{}.tmp", &generate()[..16]));
    let written = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&staged)
        .and_then(|mut file| {
            file.write_all(format!("{token}\n").as_bytes())?;
            file.sync_all()
        });
    if let Err(err) = written {
        let _ = fs::remove_file(&staged);
        return Err(err).with_context(|| staged.display().to_string());
    }
    Ok(staged)
}

fn generate() -> String {
    let mut bytes = [0u8; TOKEN_BYTES];
    OsRng.fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Read (or make) the dashboard's token and hand it to the config, so the scrubber
/// redacts it wherever it would appear; returns the dashboard's link when the token was
/// made now (the first start shows it on its terminal). Nothing happens when the dashboard
/// is off.
pub fn prepare(config: &mut Config) -> anyhow::Result<Option<String>> {
    if !config.admin.enabled {
        return Ok(None);
    }
    let (token, made) = load_or_create(&token_path(&config.gateway.data_dir))?;
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
    /// Config file, for the listen address, the data directory and `[admin]`.
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Replace the token: links and browser cookies with the old one stop working at once.
    #[arg(long)]
    pub rotate: bool,
    /// Start of the printed link instead of http://<listen address>, e.g.
    /// https://ops.example.com when a proxy serves the gateway.
    #[arg(long)]
    pub origin: Option<String>,
}

/// `switchboard admin-token`: the dashboard's link with its token on stdout.
pub fn run(args: AdminTokenArgs) -> anyhow::Result<ExitCode> {
    let config = args.config.load()?;
    if !config.admin.enabled {
        anyhow::bail!("the dashboard is off ([admin] enabled = false)");
    }
    let path = token_path(&config.gateway.data_dir);
    let token = if args.rotate {
        let token = rotate(&path)?;
        eprintln!(
            "new dashboard token stored in {}; the old one no longer opens it",
            path.display()
        );
        token
    } else {
        load_or_create(&path)?.0
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
        let path = token_path(dir.path());
        let (first, made) = load_or_create(&path).unwrap();
        assert!(made);
        assert_eq!(first.len(), 64);
        assert_eq!(
            load_or_create(&path).unwrap(),
            (first.clone(), false),
            "kept across starts"
        );
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let second = rotate(&path).unwrap();
        assert_ne!(second, first);
        assert_eq!(read(&path).unwrap(), Some(second));
        fs::write(&path, "short\n").unwrap();
        let err = read(&path).unwrap_err().to_string();
        assert!(
            err.contains("admin.token") && err.contains("--rotate"),
            "{err}"
        );
    }
}
