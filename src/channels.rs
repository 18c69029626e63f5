//! Building the configured channel instances from their settings (each crate builds its own;
//! see `switchboard_channel::ChannelSettings`). A channel whose credential is unset is skipped
//! with one warning, so the example config starts with no platform accounts at all; the web
//! chat needs no credential and is always built. A channel that runs a helper process
//! (signal-cli with `command`) gets a [`Launcher`] that starts it under the tool sandbox.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use switchboard_channel::{Channel, Launched, Launcher, Redactor, Site};

use crate::config::Config;
use crate::sandbox::{Network, Sandbox, SandboxConfig, ServerAllowances};

/// Every configured channel that has its credentials. The config has been checked when it was
/// loaded, so an error here means settings changed in code after loading. Each channel gets
/// the gateway's credential scrubber ([`Config::scrubber`]) as its [`Redactor`], for
/// whatever it writes to its own files.
pub fn from_config(config: &Config) -> anyhow::Result<Vec<Arc<dyn Channel>>> {
    let scrubber = config.scrubber();
    let redactor = Redactor::new(move |text| scrubber.scrub(text).into_owned());
    let launcher = launcher(&config.sandbox, &config.gateway.data_dir);
    let mut channels: Vec<Arc<dyn Channel>> = Vec::new();
    for (name, channel) in &config.channels {
        let settings = channel.settings();
        if let Some(key) = settings.missing_credential() {
            tracing::warn!(
                channel = %name,
                "channels.{name}.{key} is not set; the {} channel is skipped",
                channel.kind()
            );
            continue;
        }
        let built = settings
            .build(&Site {
                redactor: Some(&redactor),
                launcher: Some(&launcher),
                ..config.site(name)
            })
            .map_err(|e| anyhow::anyhow!(e))?;
        channels.push(built);
    }
    Ok(channels)
}

/// Starts a channel's helper process as MCP stdio servers are started: through the sandbox's
/// supervisor, in a working directory of its own (`workspaces/.<name>` under `data_dir`, which
/// no conversation's workspace can be, and which is its `HOME`: signal-cli keeps its keys
/// there), with the gateway's environment left behind. It gets the network (signal-cli
/// reaches Signal's servers and listens for the gateway on loopback) but otherwise the tool
/// sandbox's layers and limits. The sandbox is measured on first use only.
fn launcher(config: &SandboxConfig, data_dir: &std::path::Path) -> Launcher {
    let (config, data_dir) = (config.clone(), data_dir.to_path_buf());
    let sandbox: OnceLock<Arc<Sandbox>> = OnceLock::new();
    Launcher::new(move |name, argv| {
        let sandbox = sandbox.get_or_init(|| Arc::new(Sandbox::new(&config, &data_dir)));
        let workspace: PathBuf = data_dir.join("workspaces").join(format!(".{name}"));
        let allow = ServerAllowances {
            network: Network::Full,
            ..ServerAllowances::default()
        };
        let (mut process, stdout, stdin) = sandbox.spawn_server(&workspace, argv, &[], &allow)?;
        let mut output: Vec<Box<dyn tokio::io::AsyncRead + Send + Unpin>> = vec![Box::new(stdout)];
        if let Some(stderr) = process.take_stderr() {
            output.push(Box::new(stderr));
        }
        let exited = Box::pin(async move {
            // Held open: some programs end when their input does.
            let _stdin = stdin;
            process.wait().await;
        });
        Ok(Launched { exited, output })
    })
}
