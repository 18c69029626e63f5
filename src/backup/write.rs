//! `switchboard backup <file>`: plan what to keep, then write the archive through a
//! temporary file (mode 0600) renamed over `<file>`, so a failed backup never leaves a
//! truncated archive where a good one was.
//!
//! **One moment across files.** Each SQLite file is copied as one snapshot, but the files
//! are copied one after another. The order makes the set safe to restore: every database
//! in `data_dir` (the Matrix SDK's stores, which hold its sync token) is copied *before*
//! the gateway's own database (the inbox). A channel saves its cursor only after the
//! events it confirms are in the inbox, so the inbox copy, taken later, holds every event
//! the copied cursor confirms. A restore then reads from that cursor again at worst, and
//! the inbox drops what it already has. Copied the other way round, a cursor newer than
//! the inbox would skip events that were acknowledged and never restored.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use super::{BackupArgs, DATA_PREFIX, DATABASE_ENTRY, FORMAT, MANIFEST_ENTRY, Manifest, sqlite};
use crate::config::ConfigArgs;

/// Top-level directories of `data_dir` kept only with `--workspaces`.
const WORKSPACE_DIRS: [&str; 2] = ["workspaces", "checkpoints"];

/// One thing to put in the archive.
enum Item {
    /// A directory, for its mode.
    Dir(PathBuf),
    /// A file or symlink, copied as it is.
    Plain(PathBuf),
    /// A SQLite database, copied through a snapshot.
    Database(PathBuf),
}

/// `switchboard backup`: the config names what is copied (`gateway.database_url` and
/// `gateway.data_dir`).
pub async fn backup(config: &ConfigArgs, args: BackupArgs) -> anyhow::Result<ExitCode> {
    let config = config.load()?;
    let data_dir = config.gateway.data_dir.clone();
    let database = super::database_file(&config.gateway.database_url)?;
    let out_dir = match args.file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    // Snapshots are written next to the archive: the same filesystem the user chose to
    // have room for it.
    let staging = tempfile::Builder::new()
        .prefix(".switchboard-backup-")
        .tempdir_in(&out_dir)
        .with_context(|| format!("creating a temporary directory in {}", out_dir.display()))?;
    let mut items = Vec::new();
    if data_dir.exists() {
        walk(&data_dir, &data_dir, &mut items, &args, database.as_deref())?;
    }
    let mut manifest = Manifest {
        format: FORMAT,
        version: env!("CARGO_PKG_VERSION").into(),
        commit: env!("SWITCHBOARD_COMMIT").into(),
        created_at: jiff::Timestamp::now().to_string(),
        database: database.is_some(),
        workspaces: args.workspaces,
        entries: Vec::new(),
    };
    if database.is_some() {
        manifest.entries.push(DATABASE_ENTRY.into());
    }
    for item in &items {
        manifest.entries.push(entry_name(&data_dir, item.path())?);
    }
    let (snapshots, main) = take_snapshots(&items, database.as_deref(), staging.path()).await?;
    let temp = write_archive(&out_dir, &manifest, &items, snapshots, main)?;
    temp.persist(&args.file)
        .with_context(|| format!("writing {}", args.file.display()))?;
    report(&args, &manifest, &config.gateway.database_url);
    Ok(ExitCode::SUCCESS)
}

/// Write the archive into a temporary file in `out_dir`: the manifest, the gateway's
/// database, then `data_dir`'s entries in the manifest's order.
fn write_archive(
    out_dir: &Path,
    manifest: &Manifest,
    items: &[Item],
    snapshots: Vec<Snapshot>,
    main: Option<Snapshot>,
) -> anyhow::Result<tempfile::NamedTempFile> {
    let temp = tempfile::NamedTempFile::new_in(out_dir)
        .with_context(|| format!("creating a temporary file in {}", out_dir.display()))?;
    let mut tar = tar::Builder::new(temp.as_file());
    tar.follow_symlinks(false);
    append_bytes(
        &mut tar,
        MANIFEST_ENTRY,
        &serde_json::to_vec_pretty(manifest)?,
    )?;
    if let Some(main) = main {
        main.append(&mut tar, DATABASE_ENTRY)?;
    }
    let mut snapshots = snapshots.into_iter();
    for (item, name) in items
        .iter()
        .zip(manifest.entries.iter().skip(usize::from(manifest.database)))
    {
        match item {
            Item::Dir(path) => tar.append_dir(name, path)?,
            Item::Plain(path) => tar.append_path_with_name(path, name)?,
            Item::Database(_) => snapshots
                .next()
                .context("a database snapshot went missing")?
                .append(&mut tar, name)?,
        }
    }
    tar.into_inner()?.sync_all()?;
    Ok(temp)
}

/// Copy every database: `data_dir`'s first, the gateway's own last, so cursors are never
/// newer than the inbox that holds what they confirm (see the module's notes).
async fn take_snapshots(
    items: &[Item],
    database: Option<&Path>,
    staging: &Path,
) -> anyhow::Result<(Vec<Snapshot>, Option<Snapshot>)> {
    let mut snapshots = Vec::new();
    for (n, item) in items.iter().enumerate() {
        if let Item::Database(path) = item {
            snapshots.push(Snapshot::take(path, &staging.join(format!("{n}.sqlite"))).await?);
        }
    }
    let main = match database {
        Some(db) => Some(Snapshot::take(db, &staging.join(DATABASE_ENTRY)).await?),
        None => None,
    };
    Ok((snapshots, main))
}

impl Item {
    fn path(&self) -> &Path {
        match self {
            Item::Dir(p) | Item::Plain(p) | Item::Database(p) => p,
        }
    }
}

/// Gather `dir`'s contents, depth first, skipping what a restore must not get back.
fn walk(
    root: &Path,
    dir: &Path,
    items: &mut Vec<Item>,
    args: &BackupArgs,
    database: Option<&Path>,
) -> anyhow::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .collect::<Result<_, _>>()?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let path = entry.path();
        if skipped(root, &path, args, database) {
            continue;
        }
        let kind = entry.file_type()?;
        if kind.is_dir() {
            items.push(Item::Dir(path.clone()));
            walk(root, &path, items, args, database)?;
        } else if kind.is_file() && sqlite::is_database(&path) {
            items.push(Item::Database(path));
        } else if kind.is_file() || kind.is_symlink() {
            items.push(Item::Plain(path));
        }
    }
    Ok(())
}

fn skipped(root: &Path, path: &Path, args: &BackupArgs, database: Option<&Path>) -> bool {
    let top = path.strip_prefix(root).ok().and_then(|p| p.iter().next());
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let same = |other: &Path| same_file(path, other);
    (!args.workspaces && top.is_some_and(|t| WORKSPACE_DIRS.iter().any(|w| t == *w)))
        || (path.parent() == Some(root) && name == super::LOCK_FILE)
        || name.starts_with(".switchboard-backup-")
        || name.starts_with(".tmp")
        || same(&args.file)
        || database.is_some_and(same)
        || sqlite::is_companion(path)
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn entry_name(root: &Path, path: &Path) -> anyhow::Result<String> {
    let rel = path.strip_prefix(root)?;
    let rel = rel
        .to_str()
        .with_context(|| format!("{} has a name that is not UTF-8", path.display()))?;
    Ok(format!("{DATA_PREFIX}/{rel}"))
}

fn append_bytes(tar: &mut tar::Builder<&File>, name: &str, bytes: &[u8]) -> anyhow::Result<()> {
    let mut header = tar::Header::new_gnu();
    header.set_size(bytes.len() as u64);
    header.set_mode(0o600);
    header.set_mtime(jiff::Timestamp::now().as_second().try_into().unwrap_or(0));
    header.set_cksum();
    tar.append_data(&mut header, name, bytes)?;
    Ok(())
}

/// A consistent copy of a live SQLite file, staged until it is appended.
struct Snapshot {
    /// The staged copy.
    copy: PathBuf,
    /// The original's metadata, for its mode and times.
    metadata: std::fs::Metadata,
}

impl Snapshot {
    /// Copy the database `src` to the new file `copy`.
    async fn take(src: &Path, copy: &Path) -> anyhow::Result<Self> {
        let metadata =
            std::fs::metadata(src).with_context(|| format!("reading {}", src.display()))?;
        sqlite::snapshot(src, copy).await?;
        Ok(Self {
            copy: copy.to_path_buf(),
            metadata,
        })
    }

    /// Append the copy as `name`, with the original's mode, then drop the staged file.
    fn append(self, tar: &mut tar::Builder<&File>, name: &str) -> anyhow::Result<()> {
        let mut header = tar::Header::new_gnu();
        header.set_metadata(&self.metadata);
        let file = File::open(&self.copy)?;
        header.set_size(file.metadata()?.len());
        header.set_cksum();
        tar.append_data(&mut header, name, file)?;
        std::fs::remove_file(&self.copy)?;
        Ok(())
    }
}

fn report(args: &BackupArgs, manifest: &Manifest, url: &str) {
    println!(
        "wrote {} ({} entries{})",
        args.file.display(),
        manifest.entries.len(),
        if manifest.workspaces {
            ", with workspaces and checkpoints"
        } else {
            ""
        }
    );
    if !manifest.database {
        let scheme = url.split(':').next().unwrap_or_default();
        println!(
            "the database ({scheme}) is not in this archive: back it up with pg_dump \
             (README, \"Backups\")"
        );
    }
}
