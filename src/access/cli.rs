//! `switchboard access …`: what the operator types to see who waits, let them in, make them
//! approvers, or take access away. Works on the database alone, so it runs beside a live
//! gateway (and on any host sharing its PostgreSQL).

use std::process::ExitCode;

use clap::{Args, Subcommand};

use crate::clock::Clock;
use crate::config::ConfigArgs;
use crate::store::{self, AccessRole, AccessStore, Grant, StoreError};

/// `switchboard access` options.
#[derive(Debug, Args)]
pub struct AccessArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: AccessAction,
}

/// `switchboard access`: load the config, open its database, carry out the action.
pub async fn run(config: &ConfigArgs, args: AccessArgs) -> anyhow::Result<ExitCode> {
    let config = config.load()?;
    let store = store::connect(&config.gateway.database_url).await?;
    let now = Clock::wall().now_ms();
    println!("{}", apply(&*store, &args.action, now).await?);
    Ok(ExitCode::SUCCESS)
}

/// `switchboard access` actions.
#[derive(Debug, Clone, Subcommand, PartialEq, Eq)]
pub enum AccessAction {
    /// People who wrote in a private chat and wait with a pairing code.
    Pending,
    /// Let in the person who was sent `code` on `channel`.
    Allow {
        /// Channel instance name (`[channels.<name>]`).
        channel: String,
        /// The pairing code they were sent.
        code: String,
    },
    /// Let `user` approve other people's requests on `channel` (and talk to the bot).
    Approver {
        /// Channel instance name.
        channel: String,
        /// Platform user id (numeric on Telegram).
        user: String,
    },
    /// Take every grant of `user` on `channel` away.
    Revoke {
        /// Channel instance name.
        channel: String,
        /// Platform user id.
        user: String,
    },
    /// Every grant in the database (the config's `allowed_users` come on top).
    List,
}

/// Carry out `action` on `store` at `now_ms`; returns what to print.
pub async fn apply(
    store: &dyn AccessStore,
    action: &AccessAction,
    now_ms: i64,
) -> Result<String, StoreError> {
    Ok(match action {
        AccessAction::Pending => pending(store, now_ms).await?,
        AccessAction::Allow { channel, code } => {
            let code = code.trim().to_ascii_uppercase();
            match store.accept_pairing(channel, &code, now_ms).await? {
                Some(r) => format!(
                    "allowed {} on {channel}",
                    who(&r.user_id, r.user_name.as_deref())
                ),
                None => {
                    format!("no live pairing code {code} on {channel} (codes expire after 1 hour)")
                }
            }
        }
        AccessAction::Approver { channel, user } => {
            for role in [AccessRole::User, AccessRole::Approver] {
                let grant = Grant {
                    channel: channel.clone(),
                    user_id: user.clone(),
                    user_name: None,
                    role,
                    granted_at: now_ms,
                };
                store.grant(&grant).await?;
            }
            format!("{user} may now approve requests on {channel}")
        }
        AccessAction::Revoke { channel, user } => match store.revoke(channel, user).await? {
            0 => format!("{user} had no grant on {channel}"),
            _ => format!("revoked {user} on {channel}"),
        },
        AccessAction::List => list(store).await?,
    })
}

async fn pending(store: &dyn AccessStore, now_ms: i64) -> Result<String, StoreError> {
    let requests = store.pairing_requests(now_ms).await?;
    if requests.is_empty() {
        return Ok("nobody is waiting".to_owned());
    }
    let lines: Vec<String> = requests
        .iter()
        .map(|r| {
            let minutes = (r.expires_at - now_ms).max(0) / 60_000;
            format!(
                "{}  {}  {}  (expires in {minutes} min; allow with: switchboard access allow {} {})",
                r.channel,
                r.code,
                who(&r.user_id, r.user_name.as_deref()),
                r.channel,
                r.code
            )
        })
        .collect();
    Ok(lines.join("\n"))
}

async fn list(store: &dyn AccessStore) -> Result<String, StoreError> {
    let grants = store.grants().await?;
    if grants.is_empty() {
        return Ok("no grants (the config's allowed_users still apply)".to_owned());
    }
    let lines: Vec<String> = grants
        .iter()
        .map(|g| {
            format!(
                "{}  {}  {}  since {}",
                g.channel,
                who(&g.user_id, g.user_name.as_deref()),
                g.role,
                g.granted_at
            )
        })
        .collect();
    Ok(lines.join("\n"))
}

fn who(id: &str, name: Option<&str>) -> String {
    match name {
        Some(name) => format!("{id} ({name})"),
        None => id.to_owned(),
    }
}
