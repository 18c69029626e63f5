//! `switchboard config migrate`: rewrites the config file's deprecated keys into their current
//! form (`config::deprecated::migrate`, comments and order kept), shows the unified diff
//! first, then writes only when told to: `--yes`, or "y" at the prompt on a terminal.
//! Without a terminal and without `--yes` it shows the diff, writes nothing, says how to
//! apply it and exits 0, so a script never rewrites a file by accident.
//!
//! The file is replaced whole, through a temporary file beside it renamed over it, with the
//! old file's mode and owner: a reader never sees half a config, and a config kept 0600
//! stays 0600.

use std::io::{BufRead, IsTerminal, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};

use crate::config::{ConfigArgs, deprecated};

/// `switchboard config` options.
#[derive(Debug, Args)]
pub struct ConfigCommandArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: ConfigAction,
}

/// `switchboard config` actions.
#[derive(Debug, Subcommand)]
pub enum ConfigAction {
    /// Rewrite deprecated keys into their current form, keeping comments and order: shows
    /// the diff, then asks on a terminal (or writes with --yes); otherwise writes nothing.
    Migrate(MigrateArgs),
}

/// `switchboard config migrate` options.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// Write the rewritten file without asking.
    #[arg(long, short)]
    pub yes: bool,
}

/// `switchboard config …` on the file `config` names.
pub fn run(config: &ConfigArgs, args: ConfigCommandArgs) -> anyhow::Result<ExitCode> {
    match args.action {
        ConfigAction::Migrate(args) => migrate(config, &args),
    }
}

fn migrate(config: &ConfigArgs, args: &MigrateArgs) -> anyhow::Result<ExitCode> {
    let (path, missing) = config.path();
    if let Some(missing) = missing {
        anyhow::bail!(
            "{} does not exist: nothing to migrate (the fallback {} is not rewritten)",
            missing.display(),
            path.display()
        );
    }
    let name = path.display().to_string();
    let text = std::fs::read_to_string(&path).with_context(|| name.clone())?;
    let migrated = deprecated::migrate(&text, &name)?;
    if migrated.applied.is_empty() {
        println!("{name}: no deprecated keys; nothing to migrate");
        return Ok(ExitCode::SUCCESS);
    }
    let diff = similar::TextDiff::from_lines(&text, &migrated.text);
    print!("{}", diff.unified_diff().header(&name, &name));
    let write = if args.yes {
        true
    } else if std::io::stdin().is_terminal() && std::io::stdout().is_terminal() {
        confirm(&name)?
    } else {
        println!(
            "not written (no terminal to ask on): run `switchboard config migrate --config {name} \
             --yes` to apply it"
        );
        return Ok(ExitCode::SUCCESS);
    };
    if !write {
        println!("{name}: left as it was");
        return Ok(ExitCode::SUCCESS);
    }
    replace(&path, &migrated.text).with_context(|| format!("rewriting {name}"))?;
    println!(
        "{name}: rewritten ({} key(s) in their current form)",
        migrated.applied.len()
    );
    Ok(ExitCode::SUCCESS)
}

/// Asks on the terminal; only "y" or "yes" writes.
fn confirm(name: &str) -> anyhow::Result<bool> {
    print!("Write these changes to {name}? [y/N] ");
    std::io::stdout().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}

/// Replaces the file `path` resolves to (through a symbolic link, to the file it names) with
/// `text`, keeping its mode and owner.
fn replace(path: &Path, text: &str) -> anyhow::Result<()> {
    let target = std::fs::canonicalize(path)?;
    let old = std::fs::metadata(&target)?;
    let dir = target.parent().context("the file has no directory")?;
    let mut staged = tempfile::Builder::new()
        .prefix(".switchboard-migrate-")
        .tempfile_in(dir)
        .with_context(|| format!("making a temporary file in {}", dir.display()))?;
    staged.write_all(text.as_bytes())?;
    let file = staged.as_file();
    let made = file.metadata()?;
    if (made.uid(), made.gid()) != (old.uid(), old.gid()) {
        std::os::unix::fs::fchown(file, Some(old.uid()), Some(old.gid()))
            .context("keeping the file's owner")?;
    }
    file.set_permissions(old.permissions())?;
    file.sync_all()?;
    staged.persist(&target).map_err(|e| e.error)?;
    // The rename is durable once the directory is.
    std::fs::File::open(dir)?.sync_all()?;
    Ok(())
}
