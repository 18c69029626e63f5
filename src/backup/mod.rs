//! `switchboard backup` and `switchboard restore`: one archive holding a consistent copy of
//! a live SQLite database and what else in `data_dir` a restore needs, and its way back.
//!
//! Files: `write.rs` builds the archive, `restore.rs` unpacks it, `sqlite.rs` copies a live
//! SQLite file (`VACUUM INTO`), `lock.rs` is the `data_dir/gateway.lock` a running gateway
//! holds so a restore can tell it is there.
//!
//! The archive is a tar: `manifest.json` first, then `database.sqlite` (the gateway's
//! database, SQLite only), then `data/<path>` for each directory and file of `data_dir`.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use clap::Args;
use serde::{Deserialize, Serialize};

mod lock;
mod restore;
mod sqlite;
mod write;

pub use lock::{GatewayLock, LOCK_FILE};
pub use restore::restore;
pub use write::backup;

/// The archive entry holding the gateway's SQLite database.
const DATABASE_ENTRY: &str = "database.sqlite";
/// The archive entry holding the manifest.
const MANIFEST_ENTRY: &str = "manifest.json";
/// The prefix of `data_dir`'s entries in the archive.
const DATA_PREFIX: &str = "data";
/// The manifest format this build writes and reads.
const FORMAT: u32 = 1;

/// `switchboard backup` options.
#[derive(Debug, Args)]
pub struct BackupArgs {
    /// The archive to write (replaced atomically; mode 0600).
    pub file: PathBuf,
    /// Also keep conversations' workspaces and their checkpoints (can be large).
    #[arg(long)]
    pub workspaces: bool,
}

/// `switchboard restore` options.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// The archive `switchboard backup` wrote.
    pub file: PathBuf,
    /// Overwrite files that already exist (never a running gateway's).
    #[arg(long)]
    pub force: bool,
}

/// What an archive holds, written first so a restore can check it before touching anything.
#[derive(Debug, Serialize, Deserialize)]
struct Manifest {
    /// Layout version of the archive.
    format: u32,
    /// The release that wrote it.
    version: String,
    /// The commit that release was built from.
    commit: String,
    /// When the backup started, RFC 3339.
    created_at: String,
    /// Whether `database.sqlite` is inside (false on PostgreSQL: use `pg_dump`).
    database: bool,
    /// Whether workspaces and checkpoints are inside.
    workspaces: bool,
    /// Every entry after the manifest, in order.
    entries: Vec<String>,
}

/// The SQLite file a `sqlite:` database URL names; `None` for PostgreSQL.
fn database_file(url: &str) -> anyhow::Result<Option<PathBuf>> {
    if !url.starts_with("sqlite:") {
        return Ok(None);
    }
    let options = sqlx::sqlite::SqliteConnectOptions::from_str(url)
        .map_err(|e| anyhow::anyhow!("gateway.database_url is not a SQLite URL sqlx reads: {e}"))?;
    let file = options.get_filename();
    anyhow::ensure!(
        file != Path::new(":memory:"),
        "gateway.database_url is an in-memory database; there is nothing to back up or restore"
    );
    Ok(Some(file.to_path_buf()))
}
