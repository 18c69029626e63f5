//! The operator's `[[schedules]]`: synced into the database at start-up (so they fire through
//! the same exactly-once path as chat reminders) and listed by `switchboard schedules`.
//!
//! Sync keeps an unchanged job's waiting fire, so a restart neither repeats nor skips one; a
//! job whose pattern, zone or conversation changed starts again from now; a job removed from
//! the file is cancelled.

use std::collections::BTreeSet;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use switchboard_channel::{ConversationKey, Place};

use super::Schedules;
use super::when::{self, Recurrence};
use crate::clock::Clock;
use crate::config::ConfigArgs;
use crate::config::OperatorJob;
use crate::ids::SYSTEM_USER;
use crate::store::{self, JobSource, NewSchedule, StoreError, Timing};

/// The conversation an operator job runs in.
pub fn conversation(job: &OperatorJob) -> ConversationKey {
    ConversationKey {
        channel: job.channel.clone(),
        chat: job.chat.clone(),
        thread: job.thread.clone(),
    }
}

/// `job` as a stored schedule whose first fire is the next after `now` (`None` when its
/// pattern does not parse or never runs: the config check reports those).
fn stored_form(job: &OperatorJob, default_zone: &str, now: i64) -> Option<NewSchedule> {
    let zone = job.zone_or(default_zone);
    let next = Recurrence::parse(&job.cron, zone, Duration::ZERO)
        .ok()?
        .next_after(now)?;
    Some(NewSchedule {
        conversation: conversation(job),
        source: JobSource::Config,
        name: Some(job.name.clone()),
        requester: SYSTEM_USER.to_owned(),
        place: Place::default(),
        prompt: job.prompt.clone(),
        timing: Timing::Cron(job.cron.trim().to_owned()),
        zone: zone.trim().to_owned(),
        next_fire_at: next,
    })
}

impl Schedules {
    /// Make the stored operator jobs match `jobs`.
    pub async fn sync_operator_jobs(&self, jobs: &[OperatorJob]) -> Result<(), StoreError> {
        let now = self.now_ms();
        let default_zone = &self.settings.default_zone;
        for job in jobs {
            let Some(mut wanted) = stored_form(job, default_zone, now) else {
                tracing::error!(job = %job.name, "[[schedules]] entry never runs; not scheduled");
                continue;
            };
            if let Some(old) = self.store.config_schedule(&job.name).await? {
                let same = old.job.conversation == wanted.conversation
                    && old.job.timing == wanted.timing
                    && old.job.zone == wanted.zone;
                match old.next_fire_at {
                    Some(next) if old.active && same => {
                        if old.job.prompt == wanted.prompt {
                            continue;
                        }
                        wanted.next_fire_at = next;
                    }
                    _ => {}
                }
            }
            self.store.put_config_schedule(&wanted, now).await?;
        }
        let names: BTreeSet<&str> = jobs.iter().map(|j| j.name.as_str()).collect();
        for old in self.store.active_schedules(None).await? {
            let gone = old.job.source == JobSource::Config
                && !old.job.name.as_deref().is_some_and(|n| names.contains(n));
            if gone {
                tracing::info!(job = ?old.job.name, "[[schedules]] entry removed; cancelling it");
                self.store.cancel_schedule(old.id, None, now).await?;
            }
        }
        self.wake.notify_one();
        Ok(())
    }
}

/// `switchboard schedules` options.
#[derive(Debug, Args)]
pub struct SchedulesArgs {
    /// Also list the reminders and tasks made in conversations (read from the database).
    #[arg(long)]
    pub all: bool,
}

/// `switchboard schedules`: the operator's jobs as configured (the config's
/// `[[schedules]]`), each with its next run.
pub async fn cli(config: &ConfigArgs, args: SchedulesArgs) -> anyhow::Result<ExitCode> {
    let config = config.load()?;
    let now = Clock::wall().now_ms();
    let default_zone = &config.scheduler.default_zone;
    if config.schedules.is_empty() {
        println!("no [[schedules]] in the config");
    }
    for job in &config.schedules {
        let zone = job.zone_or(default_zone);
        let next = stored_form(job, default_zone, now).map_or_else(
            || "never".to_owned(),
            |s| {
                format!(
                    "{} ({})",
                    when::local(s.next_fire_at, zone),
                    when::rfc3339(s.next_fire_at, zone)
                )
            },
        );
        println!(
            "{}  `{}` {}  in {}  next {}\n    prompt: {}",
            job.name,
            job.cron,
            zone,
            conversation(job),
            next,
            job.prompt.lines().next().unwrap_or_default(),
        );
    }
    if args.all {
        let store = store::connect(&config.gateway.database_url).await?;
        let chat: Vec<_> = store
            .active_schedules(None)
            .await?
            .into_iter()
            .filter(|s| s.job.source == JobSource::Chat)
            .collect();
        println!("\n{} active in conversations", chat.len());
        let describe = Schedules::new(config.scheduler.clone(), store, Clock::wall());
        for s in &chat {
            println!("{}  {}", s.job.conversation, describe.describe(s));
        }
    }
    Ok(ExitCode::SUCCESS)
}
