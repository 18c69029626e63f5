//! Building the configured channel instances from their settings (each crate builds its own;
//! see `switchboard_channel::ChannelSettings`). A channel whose credential is unset is skipped
//! with one warning, so the example config starts with no platform accounts at all; the web
//! chat needs no credential and is always built.

use std::sync::Arc;

use switchboard_channel::{Channel, Redactor, Site};

use crate::config::Config;

/// Every configured channel that has its credentials. The config has been checked when it was
/// loaded, so an error here means settings changed in code after loading. Each channel gets
/// the gateway's credential scrubber ([`Config::scrubber`]) as its [`Redactor`], for
/// whatever it writes to its own files.
pub fn from_config(config: &Config) -> anyhow::Result<Vec<Arc<dyn Channel>>> {
    let scrubber = config.scrubber();
    let redactor = Redactor::new(move |text| scrubber.scrub(text).into_owned());
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
                ..config.site(name)
            })
            .map_err(|e| anyhow::anyhow!(e))?;
        channels.push(built);
    }
    Ok(channels)
}
