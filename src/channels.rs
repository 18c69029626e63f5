//! Building the configured channel instances. A channel whose credential is unset is skipped
//! with one warning, so the example config starts with no platform accounts at all; the web
//! chat needs no credential and is always built.

use std::sync::Arc;

use switchboard_channel::Channel;

use crate::config::{ChannelConfig, Config};

/// Every configured channel that has its credentials.
pub fn from_config(config: &Config) -> anyhow::Result<Vec<Arc<dyn Channel>>> {
    let mut channels: Vec<Arc<dyn Channel>> = Vec::new();
    for (name, settings) in &config.channels {
        let (key, secret) = settings.required_secret();
        if !secret.is_set() && !matches!(settings, ChannelConfig::Web(_)) {
            tracing::warn!(
                channel = %name,
                "channels.{name}.{key} is not set; the {} channel is skipped",
                settings.kind()
            );
            continue;
        }
        channels.push(build(name, settings, config)?);
    }
    Ok(channels)
}

fn build(
    name: &str,
    settings: &ChannelConfig,
    config: &Config,
) -> anyhow::Result<Arc<dyn Channel>> {
    match settings {
        ChannelConfig::Slack(s) => slack(name, s),
        ChannelConfig::Telegram(s) => telegram(name, s),
        ChannelConfig::Discord(s) => discord(name, s),
        ChannelConfig::Web(s) => web(name, s, &config.gateway),
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

#[cfg(feature = "web")]
fn web(
    name: &str,
    s: &crate::config::WebSettings,
    gateway: &crate::config::GatewayConfig,
) -> anyhow::Result<Arc<dyn Channel>> {
    let listen: std::net::SocketAddr = gateway
        .listen
        .parse()
        .map_err(|e| anyhow::anyhow!("gateway.listen: {e}"))?;
    let defaults = switchboard_web::WebConfig::default();
    let config = switchboard_web::WebConfig {
        path: s.path.as_ref().map_or(defaults.path, |p| p.to_string()),
        access_token: s.access_token.expose().map(str::to_owned),
        allowed_origins: s.allowed_origins.clone(),
        max_message_chars: s.max_message_chars.unwrap_or(defaults.max_message_chars),
        max_messages_per_minute: s
            .max_messages_per_minute
            .unwrap_or(defaults.max_messages_per_minute),
        history_messages: s.history_messages.unwrap_or(defaults.history_messages),
        history_dir: Some(gateway.data_dir.join("web").join(name)),
    };
    Ok(Arc::new(switchboard_web::WebChannel::new(
        name, config, listen,
    )?))
}

#[cfg(not(feature = "web"))]
fn web(
    name: &str,
    _: &crate::config::WebSettings,
    _: &crate::config::GatewayConfig,
) -> anyhow::Result<Arc<dyn Channel>> {
    anyhow::bail!("channels.{name}: this binary was built without the `web` feature")
}

#[cfg(feature = "telegram")]
fn telegram(name: &str, s: &crate::config::TelegramSettings) -> anyhow::Result<Arc<dyn Channel>> {
    use switchboard_telegram::{DraftTransport, Mode, TelegramChannel, TelegramConfig};
    let mode = match s.mode.as_str() {
        "polling" => Mode::Polling,
        "webhook" => Mode::Webhook,
        other => anyhow::bail!("channels.{name}.mode: {other:?} is not \"polling\" or \"webhook\""),
    };
    let draft_transport = match s.draft_transport.as_str() {
        "edit" => DraftTransport::Edit,
        "draft" => DraftTransport::Draft,
        other => {
            anyhow::bail!("channels.{name}.draft_transport: {other:?} is not \"edit\" or \"draft\"")
        }
    };
    let config = TelegramConfig {
        token: s.token.expose().unwrap_or_default().to_owned(),
        api_url: s.api_url.to_string(),
        mode,
        webhook_url: s.webhook_url.as_ref().map(|u| u.to_string()),
        secret_token: s.secret_token.expose().map(str::to_owned),
        allowed_users: s.allowed_users.clone(),
        require_mention_in_groups: s.require_mention_in_groups,
        draft_transport,
        poll_timeout_secs: s.poll_timeout_secs,
    };
    let channel =
        TelegramChannel::new(name, config).map_err(|e| anyhow::anyhow!("channels.{name}: {e}"))?;
    Ok(Arc::new(channel))
}

#[cfg(not(feature = "telegram"))]
fn telegram(name: &str, _: &crate::config::TelegramSettings) -> anyhow::Result<Arc<dyn Channel>> {
    anyhow::bail!("channels.{name}: this binary was built without the `telegram` feature")
}

#[cfg(feature = "discord")]
fn discord(name: &str, s: &crate::config::DiscordSettings) -> anyhow::Result<Arc<dyn Channel>> {
    let config = switchboard_discord::DiscordConfig {
        token: s.token.expose().unwrap_or_default().to_owned(),
        api_url: s.api_url.to_string(),
        allowed_users: s.allowed_users.clone(),
        allowed_guilds: s.allowed_guilds.clone(),
        allowed_channels: s.allowed_channels.clone(),
        always_on_channels: s.always_on_channels.clone(),
        require_mention_in_guilds: s.require_mention_in_guilds,
    };
    Ok(Arc::new(switchboard_discord::DiscordChannel::new(
        name, config,
    )))
}

#[cfg(not(feature = "discord"))]
fn discord(name: &str, _: &crate::config::DiscordSettings) -> anyhow::Result<Arc<dyn Channel>> {
    anyhow::bail!("channels.{name}: this binary was built without the `discord` feature")
}
