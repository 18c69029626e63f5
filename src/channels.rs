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
        ChannelConfig::Slack(s) => slack(name, s),
    }
}

#[cfg(feature = "slack")]
fn slack(name: &str, s: &crate::config::SlackSettings) -> anyhow::Result<Arc<dyn Channel>> {
    let (Some(token), Some(secret)) = (s.bot_token.expose(), s.signing_secret.expose()) else {
        anyhow::bail!("channels.{name}.signing_secret is required with bot_token");
    };
    let config = switchboard_slack::SlackConfig {
        bot_token: token.to_owned(),
        signing_secret: secret.to_owned(),
        api_url: s.api_url.to_string(),
        allowed_users: s.allowed_users.clone(),
        allowed_channels: s.allowed_channels.clone(),
        reply_in_thread: s.reply_in_thread,
    };
    Ok(Arc::new(switchboard_slack::SlackChannel::new(name, config)))
}

#[cfg(not(feature = "slack"))]
fn slack(name: &str, _: &crate::config::SlackSettings) -> anyhow::Result<Arc<dyn Channel>> {
    anyhow::bail!("channels.{name}: this binary was built without the `slack` feature")
}
