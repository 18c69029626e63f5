//! The `switchboard` binary: parse the command line and hand over to library code.

use std::process::ExitCode;

use clap::Parser;
use switchboard::cli::{Cli, CliCommand};

/// jemalloc. In the gateway its background thread hands freed pages back to the operating
/// system a few seconds after they fall idle, so memory comes back down after a burst of
/// conversations. glibc's allocator keeps what a burst freed in its arenas until a manual
/// trim; mimalloc returns a thread's freed pages only when that thread allocates again.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    // Before anything writes a file: what the gateway creates is its user's alone.
    switchboard::data_dir::private_umask();
    let cli = Cli::parse();
    // The gateway alone: the sandbox supervisor (this binary too) must stay single-threaded.
    // Should it fail, jemalloc still returns pages, only later (as it allocates again).
    if matches!(cli.command, CliCommand::Run) {
        let _ = tikv_jemalloc_ctl::background_thread::write(true);
    }
    // The sandbox supervisor must stay single-threaded: dispatch it before the runtime starts.
    if let CliCommand::Supervise(args) = &cli.command {
        return switchboard::sandbox::supervise(&args.spec);
    }
    run(cli)
}

#[tokio::main]
async fn run(cli: Cli) -> ExitCode {
    let config = &cli.config;
    let result = match cli.command {
        CliCommand::Run => switchboard::cli::run(config).await,
        CliCommand::Check(args) => switchboard::cli::check(config, args).await,
        CliCommand::Config(args) => switchboard::cli::config_migrate::run(config, args),
        CliCommand::Doctor(args) => switchboard::doctor::run(config, args).await,
        CliCommand::Migrate => switchboard::cli::migrate(config).await,
        CliCommand::Audit(args) => switchboard::cli::audit(config, args).await,
        CliCommand::Approvals(args) => switchboard::cli::approvals(config, args).await,
        CliCommand::Healthcheck(args) => switchboard::cli::healthcheck(config, args).await,
        CliCommand::Memory(args) => switchboard::cli::memory(config, args).await,
        CliCommand::Supervise(args) => return switchboard::sandbox::supervise(&args.spec),
        CliCommand::Access(args) => switchboard::access::cli::run(config, args).await,
        CliCommand::Schedules(args) => switchboard::schedule::operator::cli(config, args).await,
        CliCommand::Skills(args) => switchboard::skills::cli::run(config, args).await,
        CliCommand::Backup(args) => switchboard::backup::backup(config, args).await,
        CliCommand::Restore(args) => switchboard::backup::restore(config, args).await,
        CliCommand::AdminToken(args) => switchboard::admin::token::run(config, args),
        #[cfg(feature = "web")]
        CliCommand::WebToken(args) => switchboard::web_token::run(config, args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
