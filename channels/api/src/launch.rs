//! Helper processes a channel keeps running beside itself (signal-cli's daemon). A channel
//! crate never starts a process: the core hands it a [`Launcher`] that starts one under the
//! tool sandbox (its own working directory under `data_dir`, the supervisor's layers and
//! limits, the gateway's environment left behind), and the channel supervises what it gets
//! back: waits for it to exit, keeps the last lines it wrote, restarts it with a backoff.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio::io::AsyncRead;

/// A started helper process.
pub struct Launched {
    /// Ends when the process exits. Dropping it stops the process and everything it started.
    pub exited: Pin<Box<dyn Future<Output = ()> + Send>>,
    /// What it writes (standard output and error), for the caller to drain: a pipe nobody
    /// reads would block it once full.
    pub output: Vec<Box<dyn AsyncRead + Send + Unpin>>,
}

/// The function inside a [`Launcher`]: (helper name, argv) → a started process or why not.
type Start = dyn Fn(&str, &[String]) -> Result<Launched, String> + Send + Sync;

/// Starts helper processes under the gateway's sandbox; see the module docs.
#[derive(Clone)]
pub struct Launcher(Arc<Start>);

impl Launcher {
    /// A launcher that starts processes with `start`.
    pub fn new(
        start: impl Fn(&str, &[String]) -> Result<Launched, String> + Send + Sync + 'static,
    ) -> Self {
        Self(Arc::new(start))
    }

    /// Start `argv` (program first) as the helper `name` (which names its working directory,
    /// so it must be unique per channel instance), or say why it cannot start.
    pub fn launch(&self, name: &str, argv: &[String]) -> Result<Launched, String> {
        (self.0)(name, argv)
    }
}

impl fmt::Debug for Launcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Launcher")
    }
}
