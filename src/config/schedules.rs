//! `[scheduler]` (how scheduled tasks behave) and `[[schedules]]` (the operator's own jobs:
//! a cron expression in a zone, run as a prompt in one conversation). Checked at load time
//! with the same parser and time-zone database the scheduler uses, so a job that `check`
//! accepts is a job `run` can schedule.

use serde::Deserialize;

/// `[scheduler]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SchedulerConfig {
    /// Offer the `schedule` tool and the `/schedules` and `/tz` commands.
    pub enabled: bool,
    /// The time zone (IANA name) of a conversation that never set one with `/tz`.
    pub default_zone: String,
    /// A fire missed while the gateway was down still runs at start-up when it is at most
    /// this old; older ones are skipped and the conversation is told.
    pub grace_secs: u64,
    /// Active jobs one conversation may have.
    pub max_per_conversation: usize,
    /// Shortest gap a recurring job may leave between two runs.
    pub min_interval_secs: u64,
    /// How often the database is read again for jobs another process (a replica, the CLI)
    /// added; jobs made in this process wake the scheduler at once.
    pub poll_secs: u64,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            default_zone: "UTC".into(),
            grace_secs: 15 * 60,
            max_per_conversation: 20,
            min_interval_secs: 5 * 60,
            poll_secs: 30,
        }
    }
}

/// One `[[schedules]]` entry: an operator-defined recurring job.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct OperatorJob {
    /// A unique name: it ties the stored job to this entry across restarts and edits.
    pub name: String,
    /// Cron expression (`minute hour day-of-month month day-of-week`).
    pub cron: String,
    /// IANA time zone the expression is read in; `[scheduler] default_zone` when absent.
    #[serde(default)]
    pub zone: Option<String>,
    /// The configured channel instance name.
    pub channel: String,
    /// The chat id on that channel.
    pub chat: String,
    /// A thread or topic inside the chat.
    #[serde(default)]
    pub thread: Option<String>,
    /// What the agent is asked to do each time.
    pub prompt: String,
}

impl OperatorJob {
    /// The zone in effect for this job.
    pub fn zone_or<'a>(&'a self, default: &'a str) -> &'a str {
        self.zone.as_deref().unwrap_or(default)
    }
}

/// Problems with `[scheduler]` and `[[schedules]]`, as `(key, message)`.
pub fn problems(config: &super::Config) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let settings = &config.scheduler;
    if let Err(e) = crate::when::zone(&settings.default_zone) {
        out.push(("scheduler.default_zone".into(), e.to_string()));
    }
    if settings.max_per_conversation == 0 {
        out.push((
            "scheduler.max_per_conversation".into(),
            "must be at least 1".into(),
        ));
    }
    let mut names = std::collections::BTreeSet::new();
    for job in &config.schedules {
        let mut problem =
            |m: String| out.push(("schedules".into(), format!("{:?}: {m}", job.name)));
        if job.name.trim().is_empty() {
            problem("every [[schedules]] entry needs a name".into());
        }
        if !names.insert(job.name.clone()) {
            problem("two [[schedules]] entries share this name".into());
        }
        if !config.channels.contains_key(&job.channel) {
            problem(format!("channel {:?} is not configured", job.channel));
        }
        if job.chat.is_empty() || job.prompt.trim().is_empty() {
            problem("chat and prompt must not be empty".into());
        }
        // The operator's own jobs are not held to `min_interval_secs` (that limit is for chats).
        let zone = job.zone_or(&settings.default_zone);
        let any = std::time::Duration::ZERO;
        if let Err(e) = crate::when::Recurrence::parse(&job.cron, zone, any) {
            problem(e.to_string());
        }
    }
    out
}
