//! `switchboard skills …`: list the skills `[skills] dirs` holds with their state, and trust
//! one as its files are now (its hash written to the lock file). Works on the files alone,
//! so it runs beside a live gateway; a gateway loads newly trusted skills when it restarts.

use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::{Catalog, report};
use crate::config::ConfigArgs;

/// `switchboard skills` options.
#[derive(Debug, Args)]
pub struct SkillsArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: SkillsAction,
}

/// `switchboard skills` actions.
#[derive(Debug, Clone, Subcommand, PartialEq, Eq)]
pub enum SkillsAction {
    /// Each skill, its state (trusted, untrusted, changed, invalid) and the profiles that may
    /// use it.
    List,
    /// Trust skills as their files are now: record their content hashes in the lock file.
    /// Review a skill's files first: a trusted skill's scripts can run in conversations.
    Trust {
        /// Skill names (their folders' names).
        #[arg(required = true)]
        names: Vec<String>,
    },
}

/// `switchboard skills`: load the config (its `[skills]` and `[agents]`), scan the skill
/// folders, carry out the action.
pub async fn run(config: &ConfigArgs, args: SkillsArgs) -> anyhow::Result<ExitCode> {
    let config = config.load()?;
    let mut catalog = Catalog::scan(&config.skills, &config.gateway.data_dir);
    match args.action {
        SkillsAction::List => {
            print!("{}", report::list(&config, &catalog));
            Ok(ExitCode::SUCCESS)
        }
        SkillsAction::Trust { names } => {
            let mut code = ExitCode::SUCCESS;
            for name in names {
                match catalog.trust(&name) {
                    Ok(hash) => println!(
                        "trusted {name} ({hash}) in {}; restart the gateway to load it",
                        catalog.pins.file.display()
                    ),
                    Err(err) => {
                        eprintln!("{name}: {err}");
                        code = ExitCode::FAILURE;
                    }
                }
            }
            Ok(code)
        }
    }
}
