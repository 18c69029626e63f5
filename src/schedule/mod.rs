//! Scheduled tasks: reminders and recurring jobs that fire exactly once per due time, even
//! across restarts. A job is stored (`store::ScheduleStore`); when it is due, the
//! [`ticker`] offers the inbox a message event whose id is derived from (job, fire time), so
//! the inbox's duplicate check makes each fire run once, and only then moves the job's
//! `next_fire_at` forward (compare-and-set). The fired event is an ordinary turn: the same
//! access check, drafts, policy gate (approvals still ask), audit and outbound path as a
//! message the person wrote, and its answer arrives as a new message.
//!
//! Layout:
//! - this file: [`Schedules`], the service the tool, the commands and the ticker share
//!   (limits, each conversation's time zone, creating and cancelling jobs).
//! - `job`: a job as plain data (stored by `store::ScheduleStore`).
//! - `when`: instants and cron patterns in a time zone, DST rules documented there.
//! - `ticker`: the loop that waits for the next due job and the step that fires it.
//! - `commands`: `/schedules`, `/unschedule <id>`, `/tz`, and the cancel buttons.
//! - `operator`: the config's `[[schedules]]` synced into the database, and
//!   `switchboard schedules`.

pub mod commands;
pub mod operator;
pub mod ticker;
pub use crate::when;

use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use switchboard_channel::{ChannelEvent, ConversationKey, Place};
use tokio::sync::Notify;

use crate::clock::Clock;
use crate::config::SchedulerConfig;
use crate::ids::SYSTEM_USER;
use crate::store::{JobSource, NewSchedule, Schedule, ScheduleStore, StoreError, Timing};
use when::{Recurrence, WhenError};

/// Why a job was not created; the text is what the model (or the person) reads.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// A time, zone or pattern that does not parse, or runs too often.
    #[error("{0}")]
    When(#[from] WhenError),
    /// Something else the caller can fix (a past time, a missing field, a limit).
    #[error("{0}")]
    Invalid(String),
    /// The database failed; logged, and the caller is told to try again.
    #[error("the schedule could not be saved; try again")]
    Store(#[from] StoreError),
}

/// What a new job asks for.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// What the agent is to do when it fires.
    pub prompt: String,
    /// A one-shot's instant (RFC 3339 with an offset).
    pub at: Option<String>,
    /// A recurring job's cron pattern.
    pub cron: Option<String>,
    /// The pattern's zone (the conversation's zone when absent).
    pub zone: Option<String>,
}

/// Longest prompt a job keeps.
const MAX_PROMPT_CHARS: usize = 2_000;

/// The scheduling service: shared by the `schedule` tool, the chat commands and the ticker.
pub struct Schedules {
    settings: SchedulerConfig,
    store: Arc<dyn ScheduleStore>,
    clock: Clock,
    /// Wakes the ticker when a job is added or cancelled in this process, so it re-reads the
    /// soonest due time at once (a `Notify` keeps one permit, so no wake-up is lost).
    wake: Notify,
    /// Zones set with `/tz`, read synchronously when a turn's tools are built (the tool's
    /// description tells the model the zone and the local time). Filled at start-up and on
    /// every `/tz`; another replica's `/tz` is seen after its next start.
    zones: DashMap<ConversationKey, String>,
}

impl Schedules {
    /// The service over `store`, reading time from `clock`.
    pub fn new(
        settings: SchedulerConfig,
        store: Arc<dyn ScheduleStore>,
        clock: Clock,
    ) -> Arc<Self> {
        Arc::new(Self {
            settings,
            store,
            clock,
            wake: Notify::new(),
            zones: DashMap::new(),
        })
    }

    /// `[scheduler]`.
    pub fn settings(&self) -> &SchedulerConfig {
        &self.settings
    }

    /// Whether the tool and the commands are offered.
    pub fn enabled(&self) -> bool {
        self.settings.enabled
    }

    /// Now, on the gateway's clock.
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// The conversation's time zone (its `/tz`, else the configured default).
    pub fn zone_for(&self, key: &ConversationKey) -> String {
        self.zones
            .get(key)
            .map_or_else(|| self.settings.default_zone.clone(), |z| z.clone())
    }

    /// Read every conversation's zone into the cache (at start-up).
    pub async fn load_zones(&self) -> Result<(), StoreError> {
        for (key, zone) in self.store.zones().await? {
            self.zones.insert(key, zone);
        }
        Ok(())
    }

    /// Re-read the zone of `key` from the store (before a batch of its events, when
    /// replicas share the database: another one may have run its `/tz`). A read failure
    /// keeps the cached zone.
    pub async fn refresh_zone(&self, key: &ConversationKey) {
        match self.store.zone_of(key).await {
            Ok(Some(zone)) => {
                self.zones.insert(key.clone(), zone);
            }
            Ok(None) => {
                self.zones.remove(key);
            }
            Err(err) => tracing::warn!(%key, error = %err, "could not re-read the time zone"),
        }
    }

    /// Set the zone of `key`; returns the name as stored.
    pub async fn set_zone(&self, key: &ConversationKey, name: &str) -> Result<String, Refusal> {
        let name = name.trim();
        when::zone(name)?;
        self.store.set_zone(key, name, self.now_ms()).await?;
        self.zones.insert(key.clone(), name.to_owned());
        Ok(name.to_owned())
    }

    /// Create a job owned by `key`. The fired turn runs for whoever's turn made it (the event
    /// being processed in `key`), from where they wrote.
    pub async fn create(&self, key: &ConversationKey, req: Request) -> Result<Schedule, Refusal> {
        let prompt = req.prompt.trim();
        if prompt.is_empty() {
            return Err(Refusal::Invalid(
                "a prompt is required: what should happen then".into(),
            ));
        }
        if prompt.chars().count() > MAX_PROMPT_CHARS {
            return Err(Refusal::Invalid(format!(
                "the prompt is longer than {MAX_PROMPT_CHARS} characters"
            )));
        }
        let max = self.settings.max_per_conversation;
        if self.store.active_schedules(Some(key)).await?.len() >= max {
            return Err(Refusal::Invalid(format!(
                "this conversation already has {max} scheduled tasks, the most allowed; cancel one first"
            )));
        }
        let zone = req.zone.clone().unwrap_or_else(|| self.zone_for(key));
        let now = self.now_ms();
        let (timing, next) = self.timing(&req, &zone, now)?;
        let (requester, place) = self.requester(key).await?;
        let job = NewSchedule {
            conversation: key.clone(),
            source: JobSource::Chat,
            name: None,
            requester,
            place,
            prompt: prompt.to_owned(),
            timing,
            zone: zone.trim().to_owned(),
            next_fire_at: next,
        };
        let id = self.store.add_schedule(&job, now).await?;
        self.wake.notify_one();
        Ok(Schedule {
            id,
            job,
            next_fire_at: Some(next),
            active: true,
        })
    }

    /// The timing of `req` and its first fire.
    fn timing(&self, req: &Request, zone: &str, now: i64) -> Result<(Timing, i64), Refusal> {
        match (req.at.as_deref(), req.cron.as_deref()) {
            (Some(at), None) => {
                when::zone(zone)?;
                let at = when::parse_instant(at)?;
                if at <= now {
                    let now = when::rfc3339(now, zone);
                    return Err(Refusal::Invalid(format!(
                        "that time has passed (it is now {now})"
                    )));
                }
                Ok((Timing::Once(at), at))
            }
            (None, Some(expr)) => {
                let min = Duration::from_secs(self.settings.min_interval_secs);
                let recurrence = Recurrence::parse(expr, zone, min)?;
                let next = recurrence
                    .next_after(now)
                    .ok_or_else(|| WhenError::Never(expr.to_owned()))?;
                Ok((Timing::Cron(expr.trim().to_owned()), next))
            }
            _ => Err(Refusal::Invalid(
                "give exactly one of `at` (a one-shot time) or `cron` (a recurring pattern)".into(),
            )),
        }
    }

    /// Who the fired turn runs for: the author of the event being processed in `key`.
    async fn requester(&self, key: &ConversationKey) -> Result<(String, Place), StoreError> {
        Ok(match self.store.processing_event(key).await? {
            Some(ChannelEvent::Message(m)) => (m.user.id, m.place),
            Some(ChannelEvent::Button(b)) => (b.user.id, b.place),
            None => (SYSTEM_USER.to_owned(), Place::default()),
        })
    }

    /// The active jobs of `key`.
    pub async fn list(&self, key: &ConversationKey) -> Result<Vec<Schedule>, StoreError> {
        self.store.active_schedules(Some(key)).await
    }

    /// Cancel job `id` if `key` owns it and it is active.
    pub async fn cancel(&self, key: &ConversationKey, id: i64) -> Result<bool, StoreError> {
        let cancelled = self
            .store
            .cancel_schedule(id, Some(key), self.now_ms())
            .await?;
        self.wake.notify_one();
        Ok(cancelled)
    }

    /// One line about a job, in `zone`: `#12 once at 2026-12-01 09:00 CET — call the bank`.
    pub fn describe(&self, s: &Schedule) -> String {
        let when = match (&s.job.timing, s.next_fire_at) {
            (Timing::Once(at), _) => format!("once at {}", when::local(*at, &s.job.zone)),
            (Timing::Cron(expr), Some(next)) => format!(
                "`{expr}` ({}), next {}",
                s.job.zone,
                when::local(next, &s.job.zone)
            ),
            (Timing::Cron(expr), None) => format!("`{expr}` ({})", s.job.zone),
        };
        format!("#{} {when} — {}", s.id, short(&s.job.prompt, 80))
    }
}

/// `text` cut to `max` characters (with an ellipsis), on one line.
fn short(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    let mut out: String = line.chars().take(max).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}
