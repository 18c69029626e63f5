//! Copying a SQLite file another process has open: `VACUUM INTO` reads one transaction's
//! snapshot, so the copy is consistent while the gateway (or the Matrix SDK) keeps writing
//! in WAL mode, and it takes no lock that would stall those writers.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use sqlx::Connection;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};

/// Every SQLite database file starts with these bytes.
const MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Whether `path` is a SQLite database file (by its header, whatever its name).
pub(super) fn is_database(path: &Path) -> bool {
    let mut head = [0u8; 16];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| &head == MAGIC)
}

/// Whether `path` is a journal beside a SQLite database (`-wal`, `-shm`, `-journal`): its
/// content is inside the snapshot, and a stale one beside a restored file would corrupt it.
pub(super) fn is_companion(path: &Path) -> bool {
    let name = path.to_string_lossy();
    ["-wal", "-shm", "-journal"].iter().any(|suffix| {
        name.strip_suffix(suffix)
            .is_some_and(|base| is_database(Path::new(base)))
    })
}

/// Write a consistent copy of the database `src` to the new file `dst`.
pub(super) async fn snapshot(src: &Path, dst: &Path) -> anyhow::Result<()> {
    let options = SqliteConnectOptions::new()
        .filename(src)
        .create_if_missing(false)
        // A writer mid-checkpoint can hold the database briefly; wait rather than fail.
        .busy_timeout(Duration::from_secs(30));
    let mut conn = SqliteConnection::connect_with(&options)
        .await
        .with_context(|| format!("opening {}", src.display()))?;
    let target = dst
        .to_str()
        .context("the temporary directory's path is not UTF-8")?;
    sqlx::query("VACUUM INTO ?")
        .bind(target)
        .execute(&mut conn)
        .await
        .with_context(|| format!("copying {} (VACUUM INTO)", src.display()))?;
    conn.close().await?;
    Ok(())
}
