//! Building the configured channel instances. A channel whose credential is unset is skipped
//! with one warning, so the example config starts with no platform accounts at all.

use std::sync::Arc;

use switchboard_channel::Channel;

use crate::config::{ChannelConfig, Config};

/// Every configured channel that has its credentials.
pub fn from_config(config: &Config) -> anyhow::Result<Vec<Arc<dyn Channel>>> {
    let mut channels: Vec<Arc<dyn Channel>> = Vec::new();
    for (name, settings) in &config.channels {
        let (key, secret) = settings.required_secret();
        if !secret.is_set() {
            tracing::warn!(
                channel = %name,
                "channels.{name}.{key} is not set; the {} channel is skipped",
                settings.kind()
            );
            continue;
        }
        channels.push(build(name, settings)?);
    }
    Ok(channels)
}

fn build(name: &str, settings: &ChannelConfig) -> anyhow::Result<Arc<dyn Channel>> {
    match settings {
        ChannelConfig::Slack(_) => {
            anyhow::bail!("channels.{name}: the slack channel is not built into this binary yet")
        }
    }
}
