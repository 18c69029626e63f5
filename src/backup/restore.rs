//! `switchboard restore <file>`: put an archive back into the configured `data_dir` and
//! database, never under a running gateway, never over an existing file without `--force`.
//! Modes come back as they were; `data_dir` itself is made 0700.

use std::fs::{File, Permissions};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use super::{
    DATA_PREFIX, DATABASE_ENTRY, FORMAT, GatewayLock, MANIFEST_ENTRY, Manifest, RestoreArgs,
};
use crate::config::ConfigArgs;

/// `switchboard restore`: the config names where the database and `data_dir` go.
pub async fn restore(config: &ConfigArgs, args: RestoreArgs) -> anyhow::Result<ExitCode> {
    let config = config.load()?;
    let data_dir = config.gateway.data_dir.clone();
    let database = super::database_file(&config.gateway.database_url)?;
    // Held until every file is in place, so a gateway cannot start half-way either.
    let _lock = GatewayLock::restoring(&data_dir)?;
    std::fs::set_permissions(&data_dir, Permissions::from_mode(0o700))?;
    let manifest = read_manifest(&args.file)?;
    let targets = targets(&manifest, &data_dir, database.as_deref())?;
    let existing: Vec<&PathBuf> = targets
        .iter()
        .filter(|t| t.exists() && !t.is_dir())
        .collect();
    if !existing.is_empty() && !args.force {
        let shown: Vec<String> = existing
            .iter()
            .take(5)
            .map(|p| p.display().to_string())
            .collect();
        anyhow::bail!(
            "{} file(s) would be overwritten ({}{}); restore into an empty data_dir, or pass --force",
            existing.len(),
            shown.join(", "),
            if existing.len() > 5 { ", …" } else { "" }
        );
    }
    unpack(&args.file, &targets, database.as_deref())?;
    println!(
        "restored {} entries from {} (written by {} commit {} at {})",
        targets.len(),
        args.file.display(),
        manifest.version,
        manifest.commit,
        manifest.created_at
    );
    Ok(ExitCode::SUCCESS)
}

fn open(file: &Path) -> anyhow::Result<tar::Archive<File>> {
    let f = File::open(file).with_context(|| format!("opening {}", file.display()))?;
    Ok(tar::Archive::new(f))
}

fn read_manifest(file: &Path) -> anyhow::Result<Manifest> {
    let mut archive = open(file)?;
    let mut first = archive
        .entries()?
        .next()
        .context("the archive is empty")??;
    anyhow::ensure!(
        first.path()?.as_ref() == Path::new(MANIFEST_ENTRY),
        "{} is not a switchboard backup (it does not start with {MANIFEST_ENTRY})",
        file.display()
    );
    let manifest: Manifest = serde_json::from_reader(&mut first)
        .with_context(|| format!("reading {MANIFEST_ENTRY} in {}", file.display()))?;
    anyhow::ensure!(
        manifest.format == FORMAT,
        "{} has archive format {}; this build reads format {FORMAT}",
        file.display(),
        manifest.format
    );
    Ok(manifest)
}

/// Where each entry of the manifest goes, in order.
fn targets(
    manifest: &Manifest,
    data_dir: &Path,
    database: Option<&Path>,
) -> anyhow::Result<Vec<PathBuf>> {
    manifest
        .entries
        .iter()
        .map(|name| target(name, data_dir, database))
        .collect()
}

fn target(name: &str, data_dir: &Path, database: Option<&Path>) -> anyhow::Result<PathBuf> {
    if name == DATABASE_ENTRY {
        return database.map(Path::to_path_buf).context(
            "the archive holds a SQLite database but gateway.database_url is not SQLite; \
             restore with a SQLite database_url, or load PostgreSQL from its pg_dump",
        );
    }
    let rel = Path::new(name)
        .strip_prefix(DATA_PREFIX)
        .ok()
        .filter(|rel| rel.components().all(|c| matches!(c, Component::Normal(_))))
        .with_context(|| format!("the archive entry {name:?} is not inside data/"))?;
    Ok(data_dir.join(rel))
}

/// Write every entry after the manifest to its target; files go through a temporary name
/// in the same directory and a rename, so an interrupted restore leaves no half file.
fn unpack(file: &Path, targets: &[PathBuf], database: Option<&Path>) -> anyhow::Result<()> {
    let mut archive = open(file)?;
    archive.set_preserve_permissions(true);
    archive.set_preserve_mtime(true);
    let mut entries = archive.entries()?.skip(1);
    for target in targets {
        let mut entry = entries
            .next()
            .context("the archive ends before its manifest does")??;
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        if entry.header().entry_type().is_dir() {
            std::fs::create_dir_all(target)?;
            let mode = entry.header().mode()?;
            std::fs::set_permissions(target, Permissions::from_mode(mode))?;
            continue;
        }
        let dir = target.parent().unwrap_or(Path::new("."));
        let temp = tempfile::Builder::new()
            .prefix(".restore-")
            .make_in(dir, |p| entry.unpack(p).map(|_| ()));
        let temp = temp.with_context(|| format!("writing {}", target.display()))?;
        if Some(target.as_path()) == database {
            remove_journals(target)?;
        }
        temp.persist(target)
            .with_context(|| format!("writing {}", target.display()))?;
    }
    Ok(())
}

/// A `-wal` or `-shm` left beside an overwritten database belongs to the old one: SQLite
/// would replay it into the restored file.
fn remove_journals(db: &Path) -> anyhow::Result<()> {
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut name = db.as_os_str().to_owned();
        name.push(suffix);
        match std::fs::remove_file(&name) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("removing {}", Path::new(&name).display()));
            }
            _ => {}
        }
    }
    Ok(())
}
