//! `data_dir/gateway.lock`: every running gateway holds a shared lock on it for its whole
//! life, and a restore takes it exclusively. The kernel drops the lock when the process
//! ends however it ends, so unlike a pid file it is never stale, and replicas sharing
//! `data_dir` hold it together. (A `/healthz` probe would miss a gateway listening
//! elsewhere; SQLite's own locks are idle between writes in WAL mode.)

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use anyhow::Context;
use rustix::fs::{FlockOperation, flock};
use rustix::io::Errno;

/// The lock file's name under `data_dir`.
pub const LOCK_FILE: &str = "gateway.lock";

/// A held lock on `data_dir/gateway.lock`; released when dropped.
#[derive(Debug)]
pub struct GatewayLock {
    /// Open for as long as the lock is held: closing it releases the lock.
    _file: File,
}

impl GatewayLock {
    /// The shared lock a gateway holds while it runs; fails while a restore is under way.
    pub fn running(data_dir: &Path) -> anyhow::Result<Self> {
        let file = open(data_dir)?;
        // `flock` (std's `File::try_lock*` is newer than our MSRV).
        match flock(&file, FlockOperation::NonBlockingLockShared) {
            Ok(()) => Ok(Self { _file: file }),
            Err(Errno::WOULDBLOCK) => anyhow::bail!(
                "a `switchboard restore` into {} is under way; start the gateway when it is done",
                data_dir.display()
            ),
            Err(e) => Err(std::io::Error::from(e)).context("locking data_dir/gateway.lock"),
        }
    }

    /// The exclusive lock a restore holds; fails while any gateway runs on `data_dir`.
    pub(super) fn restoring(data_dir: &Path) -> anyhow::Result<Self> {
        let file = open(data_dir)?;
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(Self { _file: file }),
            Err(Errno::WOULDBLOCK) => anyhow::bail!(
                "a gateway is running on {} (it holds {LOCK_FILE}); stop it before restoring, \
                 its database must not be overwritten while it is open",
                data_dir.display()
            ),
            Err(e) => Err(std::io::Error::from(e)).context("locking data_dir/gateway.lock"),
        }
    }
}

fn open(data_dir: &Path) -> anyhow::Result<File> {
    std::fs::create_dir_all(data_dir)
        .with_context(|| format!("creating data_dir {}", data_dir.display()))?;
    let path = data_dir.join(LOCK_FILE);
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restore_cannot_lock_while_a_gateway_holds_the_lock_and_can_after() {
        let dir = tempfile::tempdir().unwrap();
        let running = GatewayLock::running(dir.path()).unwrap();
        let replica = GatewayLock::running(dir.path()).unwrap();
        let err = GatewayLock::restoring(dir.path()).unwrap_err();
        assert!(err.to_string().contains("a gateway is running"), "{err}");
        drop((running, replica));
        let restoring = GatewayLock::restoring(dir.path()).unwrap();
        let err = GatewayLock::running(dir.path()).unwrap_err();
        assert!(err.to_string().contains("restore"), "{err}");
        drop(restoring);
    }
}
