//! The channel under test, running its receive loop against the real servers
//! (`switchboard_standins::mail`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use switchboard_channel::{Channel, EventSink};
use switchboard_email::{EmailChannel, EmailConfig};
pub use switchboard_standins::mail::{Draft, Person, header, servers};
use tokio_util::sync::CancellationToken;

/// The typed settings of `switchboard_standins::mail::Servers::config`.
pub fn config(
    servers: &switchboard_standins::mail::Servers,
    bot: &switchboard_standins::mail::Account,
    allowed: &[&str],
) -> EmailConfig {
    serde_json::from_value(servers.config(bot, allowed)).expect("test config parses")
}

/// The channel under test, running its receive loop.
pub struct Running {
    pub channel: Arc<EmailChannel>,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    /// Build the channel (state in `dir`) and start receiving into `sink`.
    pub fn start(config: EmailConfig, dir: &std::path::Path, sink: Arc<dyn EventSink>) -> Self {
        let channel =
            Arc::new(EmailChannel::new("mail", config, dir.to_owned()).expect("channel builds"));
        let shutdown = CancellationToken::new();
        let task = tokio::spawn({
            let (channel, shutdown) = (Arc::clone(&channel), shutdown.clone());
            async move {
                let _ = channel.start(sink, shutdown).await;
            }
        });
        Self {
            channel,
            shutdown,
            task,
        }
    }

    /// Stop receiving, as a gateway stopping (or killed: nothing is flushed on the way out).
    pub async fn stop(self) {
        self.shutdown.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(10), self.task).await;
    }
}

/// A fresh folder for a channel's state.
pub fn state_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sb-email-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}
