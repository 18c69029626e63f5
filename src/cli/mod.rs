//! The command line: `run`, `check`, `config migrate`, `migrate`, `audit`, `approvals`,
//! `healthcheck`, `memory`, `access`, `schedules`, `skills`, `backup`, `restore`, `web-token`
//! and `admin-token`, each a thin layer over library code. Which config file they read is
//! `config::ConfigArgs`'s business (a user's file, else a fallback): one global `--config`,
//! accepted before or after any subcommand.
//!
//! Every subcommand loads the config through [`config::load`], which parses it and then runs
//! every check, including each channel crate's own `validate()` and the route collisions
//! between channels. So whatever `check` reports (with file, line and key), `run` refuses
//! with the same message and exit code 1 before it binds a port or builds a channel.

use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};

use crate::config::{self, Config, ConfigArgs};
use crate::ids::MemoryScope;
use crate::{Gateway, channels, store, telemetry};

pub mod config_migrate;
mod links;

/// What `switchboard --version` prints after the name: the release and the commit it was
/// built from (`build.rs`; `unknown` when the build had neither `.git` nor a
/// `SWITCHBOARD_COMMIT`).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("SWITCHBOARD_COMMIT"),
    ")"
);

/// Switchboard: an LLM agent behind your chat platforms.
#[derive(Debug, Parser)]
#[command(version = VERSION, about)]
pub struct Cli {
    /// Which config file every subcommand reads (before or after the subcommand's name).
    #[command(flatten)]
    pub config: ConfigArgs,
    /// What to do.
    #[command(subcommand)]
    pub command: CliCommand,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum CliCommand {
    /// Run the gateway until SIGINT/SIGTERM.
    Run,
    /// Validate the config and print every problem (exit 0 when it is valid).
    Check(CheckArgs),
    /// The config file itself: `config migrate` rewrites deprecated keys into their current
    /// form, keeping comments and order, after showing the diff.
    Config(config_migrate::ConfigCommandArgs),
    /// Review the deployment: what is exposed, secrets in plain text, file modes, the
    /// sandbox; findings by severity with their fixes (exit 1 when one is critical).
    Doctor(crate::doctor::DoctorArgs),
    /// Apply database migrations and exit.
    Migrate,
    /// Print the audit log of tool executions, newest first.
    Audit(AuditArgs),
    /// List approval requests, newest first.
    Approvals(ApprovalsArgs),
    /// Ask a running gateway's /readyz; exit 0 when ready, 1 otherwise (Docker HEALTHCHECK).
    Healthcheck(HealthcheckArgs),
    /// List, search or forget remembered facts.
    Memory(MemoryArgs),
    /// The sandbox supervisor the gateway starts for every tool process (internal).
    #[command(hide = true)]
    Supervise(SupervisorArgs),
    /// Who may talk to the bot: pending pairing codes, allow, approver, revoke, list.
    Access(crate::access::cli::AccessArgs),
    /// List the operator's `[[schedules]]` with their next run (`--all`: chat tasks too).
    Schedules(crate::schedule::operator::SchedulesArgs),
    /// Agent Skills: list them with their state, or trust one as its files are now.
    Skills(crate::skills::cli::SkillsArgs),
    /// Write one archive of the live SQLite database and what a restore needs from
    /// data_dir (--workspaces: workspaces and checkpoints too); on PostgreSQL, use pg_dump.
    Backup(crate::backup::BackupArgs),
    /// Put a backup archive back into the configured data_dir and database; refuses while a
    /// gateway runs there, and over existing files without --force.
    Restore(crate::backup::RestoreArgs),
    /// Print the dashboard's link with its token; --rotate replaces the token.
    AdminToken(crate::admin::token::AdminTokenArgs),
    /// Print the web chat's link with its access token; --rotate replaces a generated one.
    #[cfg(feature = "web")]
    WebToken(crate::web_token::WebTokenArgs),
}

/// `switchboard supervise` (hidden; started by the gateway, never by people).
#[derive(Debug, clap::Args)]
pub struct SupervisorArgs {
    /// The sandbox's spec as JSON.
    #[arg(long, env = crate::sandbox::SPEC_VAR, hide_env_values = true)]
    pub spec: String,
}

/// `switchboard memory` options.
#[derive(Debug, Args)]
pub struct MemoryArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: MemoryAction,
}

/// `switchboard memory` actions. Scopes look like `conv:<channel:chat[:thread]>` or
/// `user:<channel>:<user id>`.
#[derive(Debug, Subcommand)]
pub enum MemoryAction {
    /// The newest memories, optionally of one scope.
    List {
        /// Only this scope.
        #[arg(long)]
        scope: Option<MemoryScope>,
        /// How many.
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// Full-text search within one scope.
    Search {
        /// Scope to search.
        #[arg(long)]
        scope: MemoryScope,
        /// Words to look for.
        query: String,
    },
    /// Forget one key, or the whole scope without --key.
    Forget {
        /// Scope.
        #[arg(long)]
        scope: MemoryScope,
        /// Key to forget.
        #[arg(long)]
        key: Option<String>,
    },
    /// Embed every memory that has no vector of the `[memory.embeddings]` model.
    Reindex {
        /// Drop every vector first and embed all memories again.
        #[arg(long)]
        all: bool,
    },
    /// How many memories there are, embedded and waiting for their vector.
    Stats,
}

/// `switchboard check` options.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Also make one tiny real request to the provider and each configured platform
    /// (Telegram getMe, Slack auth.test, Discord users/@me) and print what works; exit 1
    /// when one fails.
    #[arg(long)]
    pub probe: bool,
}

/// `switchboard healthcheck` options.
#[derive(Debug, Args)]
pub struct HealthcheckArgs {
    /// Check this URL instead of http://<gateway.listen>/readyz.
    #[arg(long)]
    pub url: Option<String>,
}

/// `switchboard approvals` options.
#[derive(Debug, Args)]
pub struct ApprovalsArgs {
    /// Only those still waiting for a decision.
    #[arg(long)]
    pub pending: bool,
    /// How many.
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
}

/// `switchboard audit` options.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Only this conversation (`channel:chat[:thread]`).
    #[arg(long)]
    pub conversation: Option<String>,
    /// How many entries.
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
}

/// `switchboard run`.
pub async fn run(config: &ConfigArgs) -> anyhow::Result<ExitCode> {
    let (path, missing) = config.path();
    let mut config = config::load(&path)?;
    crate::data_dir::create(&config.gateway.data_dir)
        .with_context(|| format!("creating {}", config.gateway.data_dir.display()))?;
    // Before the scrubber is built, so the generated tokens are redacted like the rest.
    let tokens = links::Tokens::prepare(&mut config)?;
    telemetry::init(config.gateway.log_format, scrubber(&config));
    config::log_fallback(&path, missing.as_ref());
    tokens.announce();
    for warning in crate::access::warnings(&config) {
        tracing::warn!("{warning}");
    }
    for used in &config.deprecated {
        tracing::warn!("{used}");
    }
    // Listen for signals before serving, so a SIGTERM right after start-up is a clean stop.
    let stop = shutdown_signal()?;
    let listener = tokio::net::TcpListener::bind(&*config.gateway.listen)
        .await
        .with_context(|| format!("binding gateway.listen = {}", &*config.gateway.listen))?;
    let mut gateway = Gateway::new(config.clone());
    for channel in channels::from_config(&config)? {
        gateway = gateway.channel(channel);
    }
    let running = gateway.start(listener).await?;
    stop.await;
    tracing::info!("shutting down");
    running.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

/// `switchboard check` (and `--probe`).
pub async fn check(file: &ConfigArgs, args: CheckArgs) -> anyhow::Result<ExitCode> {
    let (path, _) = file.path();
    match file.load() {
        Ok(config) => {
            println!(
                "{}: ok ({} channel(s) configured, provider {:?} model {})",
                path.display(),
                config.channels.len(),
                config.provider.kind,
                &*config.provider.model
            );
            let skipped: Vec<String> = config
                .channels
                .iter()
                .filter_map(|(name, c)| {
                    let key = c.settings().missing_credential()?;
                    Some(format!("{name} ({key} unset)"))
                })
                .collect();
            if !skipped.is_empty() {
                println!("skipped at run: {}", skipped.join(", "));
            }
            for used in &config.deprecated {
                println!("deprecated: {used}");
            }
            crate::sandbox::check_report(&config.sandbox, &config.gateway.data_dir);
            for warning in crate::access::warnings(&config) {
                println!("warning: {warning}");
            }
            if let Some(warning) = crate::provider::key_warning(&config.provider) {
                println!("warning: {warning}");
            }
            let user = crate::mcp::ToolUser::of(&config);
            for warning in crate::mcp::path_warnings(&config, user) {
                println!("warning: {warning}");
            }
            let skills_bad = check_skills(&config);
            if args.probe && !crate::probe::run(&config).await {
                return Ok(ExitCode::FAILURE);
            }
            Ok(match skills_bad {
                true => ExitCode::FAILURE,
                false => ExitCode::SUCCESS,
            })
        }
        Err(err) => {
            eprintln!("{err}");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// `check`'s skill lines; true when a skill will not load (exit 1, so a deployment script
/// stops before a skill silently goes missing).
fn check_skills(config: &Config) -> bool {
    if config.skills.dirs.is_empty() {
        return false;
    }
    let catalog = crate::skills::Catalog::scan(&config.skills, &config.gateway.data_dir);
    let (lines, bad) = crate::skills::report::check_lines(config, &catalog);
    for line in lines {
        println!("{line}");
    }
    bad
}

/// `switchboard migrate`.
pub async fn migrate(config: &ConfigArgs) -> anyhow::Result<ExitCode> {
    let config = config.load()?;
    telemetry::init(config.gateway.log_format, scrubber(&config));
    store::connect(&config.gateway.database_url).await?;
    println!("migrations applied");
    Ok(ExitCode::SUCCESS)
}

/// `switchboard audit`.
pub async fn audit(config: &ConfigArgs, args: AuditArgs) -> anyhow::Result<ExitCode> {
    let config = config.load()?;
    let key = match &args.conversation {
        Some(k) => Some(k.parse::<switchboard_channel::ConversationKey>()?),
        None => None,
    };
    let store = store::connect(&config.gateway.database_url).await?;
    let entries = store.audit(key.as_ref(), args.limit).await?;
    if entries.is_empty() {
        println!("no audit entries");
    }
    for e in entries {
        println!(
            "{}  {}  {} {}  {}  {} ms  {}{}\n    args: {}\n    output: {}",
            e.created_at,
            e.conversation,
            e.tool,
            e.call_id,
            e.status,
            e.duration_ms,
            e.decision,
            e.decided_by.map(|d| format!(" by {d}")).unwrap_or_default(),
            e.args,
            e.output.lines().next().unwrap_or_default(),
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `switchboard approvals`.
pub async fn approvals(config: &ConfigArgs, args: ApprovalsArgs) -> anyhow::Result<ExitCode> {
    let config = config.load()?;
    let store = store::connect(&config.gateway.database_url).await?;
    let list = store.list_approvals(args.pending, args.limit).await?;
    if list.is_empty() {
        println!("no approvals");
    }
    for a in list {
        println!(
            "{}  {}  {}  {}{}  requested by {}  expires {}\n    {}: {}\n    reason: {}",
            a.id,
            a.status,
            a.conversation,
            a.tool,
            a.decided_by
                .map(|d| format!(" (decided by {d})"))
                .unwrap_or_default(),
            a.requester,
            a.expires_at,
            a.tool,
            a.args.lines().next().unwrap_or_default(),
            a.reason,
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `switchboard healthcheck`.
pub async fn healthcheck(config: &ConfigArgs, args: HealthcheckArgs) -> anyhow::Result<ExitCode> {
    let url = match args.url {
        Some(url) => url,
        None => {
            let config = config.load()?;
            let addr: std::net::SocketAddr = config.gateway.listen.parse()?;
            let host = if addr.ip().is_unspecified() {
                "127.0.0.1".to_owned()
            } else {
                addr.ip().to_string()
            };
            format!("http://{host}:{}/readyz", addr.port())
        }
    };
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(5))
        .build()?;
    match client.get(&url).send().await {
        Ok(response) if response.status().is_success() => {
            println!("ready");
            Ok(ExitCode::SUCCESS)
        }
        Ok(response) => {
            let status = response.status();
            println!(
                "not ready ({status}): {}",
                response.text().await.unwrap_or_default()
            );
            Ok(ExitCode::FAILURE)
        }
        Err(err) => {
            println!("not reachable: {}", err.without_url());
            Ok(ExitCode::FAILURE)
        }
    }
}

/// `switchboard memory`.
pub async fn memory(config: &ConfigArgs, args: MemoryArgs) -> anyhow::Result<ExitCode> {
    let config = config.load()?;
    match args.action {
        MemoryAction::Reindex { all } => crate::memory::cli::reindex(&config, all).await,
        MemoryAction::Stats => crate::memory::cli::stats(&config).await,
        action => browse_memory(&config, action).await,
    }
}

/// `switchboard memory list`, `search` and `forget`.
async fn browse_memory(config: &Config, action: MemoryAction) -> anyhow::Result<ExitCode> {
    let store = store::connect(&config.gateway.database_url).await?;
    let shown = match action {
        MemoryAction::List { scope, limit } => store.memories(scope.as_ref(), limit).await?,
        MemoryAction::Search { scope, query } => store.recall(&scope, &query, 20).await?,
        MemoryAction::Forget {
            scope,
            key: Some(key),
        } => {
            let existed = store.forget(&scope, &key).await?;
            println!(
                "{}",
                if existed {
                    "forgotten"
                } else {
                    "no such memory"
                }
            );
            return Ok(ExitCode::SUCCESS);
        }
        MemoryAction::Forget { scope, key: None } => {
            println!("forgot {} memories", store.forget_scope(&scope).await?);
            return Ok(ExitCode::SUCCESS);
        }
        MemoryAction::Reindex { .. } | MemoryAction::Stats => Vec::new(),
    };
    if shown.is_empty() {
        println!("no memories");
    }
    for m in shown {
        println!(
            "{}  {}  [{}]  {}",
            m.scope,
            m.key,
            m.category,
            m.content.replace('\n', " ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn scrubber(config: &Config) -> std::sync::Arc<crate::scrub::Scrubber> {
    std::sync::Arc::new(config.scrubber())
}

/// A future that resolves on SIGINT or SIGTERM; the handlers are installed when this returns.
fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    })
}
