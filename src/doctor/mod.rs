//! `switchboard doctor`: reviews a deployment rather than validating a config. It reads the
//! config (and the raw file, for secrets written in plain text), the data directory's file
//! modes and the sandbox posture this host gives, and prints findings by severity, each
//! with its fix. Exit 1 when one is critical. It never prints a secret: findings name keys
//! and paths, never values.
//!
//! Layout: this file (arguments, findings, output); `checks` (one function per concern);
//! `data_dir` (the data directory's mode, and whether tools reach it); `operator` (how the web
//! chats, the dashboard and `/metrics` let people in); `matrix`.

mod checks;
mod data_dir;
mod matrix;
mod operator;

use std::process::ExitCode;

use clap::Args;
use serde::Serialize;

use crate::config::ConfigArgs;

/// `switchboard doctor` options.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print the findings as one JSON array, for scripts.
    #[arg(long)]
    pub json: bool,
}

/// How much a finding matters.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Exposes the agent, its tools or a secret: fix before going further.
    Critical,
    /// Risky, or a feature that will not work as configured.
    Warning,
    /// What is exposed and how, for the record.
    Note,
}

/// One thing the doctor found, with what to do about it.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// How much it matters.
    pub severity: Severity,
    /// What was found (keys and paths, never values).
    pub what: String,
    /// What to change.
    pub fix: String,
}

impl Finding {
    fn new(severity: Severity, what: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            severity,
            what: what.into(),
            fix: fix.into(),
        }
    }
}

/// The findings a running gateway can make about itself from its config and this host
/// (the dashboard's health page shows them): everything but the config file's own text and
/// mode, which the gateway does not know.
pub fn config_findings(config: &crate::config::Config) -> Vec<Finding> {
    let mut findings = checks::all(config, std::path::Path::new(""), "");
    findings.sort_by_key(|f| f.severity);
    findings
}

/// `switchboard doctor`.
pub async fn run(file: &ConfigArgs, args: DoctorArgs) -> anyhow::Result<ExitCode> {
    let (path, _) = file.path();
    let config = file.load()?;
    let raw = std::fs::read_to_string(&path).unwrap_or_default();
    let mut findings = checks::all(&config, &path, &raw);
    findings.extend(checks::live(&config).await);
    findings.sort_by_key(|f| f.severity);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&findings)?);
    } else {
        for f in &findings {
            let label = match f.severity {
                Severity::Critical => "CRITICAL",
                Severity::Warning => "warning",
                Severity::Note => "note",
            };
            println!("{label}: {}\n    fix: {}", f.what, f.fix);
        }
    }
    let critical = findings.iter().any(|f| f.severity == Severity::Critical);
    Ok(if critical {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
