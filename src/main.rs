//! The `switchboard` binary: parse the command line and hand over to library code.

use std::process::ExitCode;

use clap::Parser;
use switchboard::cli::{Cli, Command};

/// An allocator that hands freed pages back to the operating system by itself, so the
/// gateway's memory falls back after a burst of conversations without manual trimming
/// (glibc's keeps freed small blocks in its arenas).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The sandbox supervisor must stay single-threaded: dispatch it before the runtime starts.
    if let Command::Supervise(args) = &cli.command {
        return switchboard::sandbox::supervise(args);
    }
    run(cli)
}

#[tokio::main]
async fn run(cli: Cli) -> ExitCode {
    let result = match cli.command {
        Command::Run(args) => switchboard::cli::run(args).await,
        Command::Check(args) => switchboard::cli::check(args).await,
        Command::Doctor(args) => switchboard::doctor::run(args).await,
        Command::Migrate(args) => switchboard::cli::migrate(args).await,
        Command::Audit(args) => switchboard::cli::audit(args).await,
        Command::Approvals(args) => switchboard::cli::approvals(args).await,
        Command::Healthcheck(args) => switchboard::cli::healthcheck(args).await,
        Command::Memory(args) => switchboard::cli::memory(args).await,
        Command::Supervise(args) => return switchboard::sandbox::supervise(&args),
        Command::Access(args) => switchboard::access::cli::run(args).await,
        Command::Schedules(args) => switchboard::schedule::operator::cli(args).await,
        #[cfg(feature = "web")]
        Command::WebToken(args) => switchboard::web_token::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
