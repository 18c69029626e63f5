//! The ticker: waits on the gateway's clock for the soonest due job, then fires what is due.
//!
//! One step ([`Schedules::tick`]) is a plain function of `now`, so tests drive it with any
//! time they like; the loop ([`run`]) only waits. For each due job the step:
//! 1. lists the fires between the stored `next_fire_at` and `now` (one, unless the gateway
//!    was down);
//! 2. offers the inbox the newest of them when it is at most `grace_secs` old, as a message
//!    event with id `schedule:<job>:<fire ms>`: a second offer of the same fire (a restart
//!    between offering and step 3, another replica) is a duplicate the inbox drops;
//! 3. moves `next_fire_at` past `now` by compare-and-set, and only the process that moved it
//!    reports the fires it skipped (older than the grace window), so the conversation is
//!    told once.
//!
//! An inbox that refuses (database down) leaves the job as it was, to be offered again.

use std::sync::Arc;
use std::time::Duration;

use switchboard_channel::{ChannelEvent, ConversationKey, EventSink, Inbound, UserRef};
use tokio_util::sync::CancellationToken;

use super::Schedules;
use super::when::{self, Recurrence};
use crate::store::{JobSource, Schedule, StoreError, Timing};

/// Jobs handled per step (the rest are due still, and the next step takes them).
const BATCH: usize = 100;
/// Fires of one job counted while catching up after downtime.
const MAX_CATCH_UP: usize = 10_000;
/// Skipped fires looked up in the inbox (one of them may have run before a crash).
const MAX_LOOKUPS: usize = 50;
/// Wait before offering a fire again when the inbox refused it.
const RETRY: Duration = Duration::from_secs(5);

/// What the conversation is told about fires that were skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// The conversation that owns the job.
    pub key: ConversationKey,
    /// The message.
    pub text: String,
}

/// What one step did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tick {
    /// Fire events the inbox took (new or duplicate).
    pub fired: usize,
    /// Messages for conversations whose fires were skipped.
    pub notices: Vec<Notice>,
    /// Whether a fire could not be offered (retry soon).
    pub retry: bool,
}

/// The fires of one job due at `now`.
struct Plan {
    /// The fire to run, if one is within the grace window.
    run: Option<i64>,
    /// Fires skipped (older than the grace window, or older than the one run).
    skipped: Vec<i64>,
    /// The next fire after `now` (`None`: the job is finished).
    next: Option<i64>,
}

/// The inbox event id of job `id`'s fire at `at`.
pub fn event_id(id: i64, at: i64) -> String {
    format!("schedule:{id}:{at}")
}

impl Schedules {
    /// Fire every job due at `now` into `sink`.
    pub async fn tick(&self, sink: &dyn EventSink, now: i64) -> Result<Tick, StoreError> {
        let mut tick = Tick::default();
        for job in self.store.due_schedules(now, BATCH).await? {
            self.settle(sink, &job, now, &mut tick).await?;
        }
        Ok(tick)
    }

    async fn settle(
        &self,
        sink: &dyn EventSink,
        job: &Schedule,
        now: i64,
        tick: &mut Tick,
    ) -> Result<(), StoreError> {
        let Some(from) = job.next_fire_at else {
            return Ok(());
        };
        let Some(plan) = self.plan(job, from, now) else {
            tracing::error!(
                job = job.id,
                "stored schedule no longer parses; cancelling it"
            );
            self.store.cancel_schedule(job.id, None, now).await?;
            return Ok(());
        };
        if let Some(at) = plan.run {
            if let Err(err) = sink.deliver(fire_event(job, at)).await {
                tracing::warn!(job = job.id, error = %err, "the inbox refused a scheduled fire; retrying");
                tick.retry = true;
                return Ok(());
            }
            tick.fired += 1;
        }
        let skipped = self.not_run(job, &plan.skipped).await?;
        let moved = self
            .store
            .advance_schedule(job.id, from, plan.next, now)
            .await?;
        if moved && skipped > 0 {
            let last = plan.skipped.last().copied().unwrap_or(from);
            tick.notices.push(Notice {
                key: job.job.conversation.clone(),
                text: missed_text(job, skipped, last, plan.next),
            });
        }
        Ok(())
    }

    /// Which fires of `job` from `from` to `now` run and which are skipped.
    fn plan(&self, job: &Schedule, from: i64, now: i64) -> Option<Plan> {
        let grace = self.settings.grace_secs.saturating_mul(1000) as i64;
        let (mut fires, next) = match &job.job.timing {
            Timing::Once(_) => (vec![from], None),
            Timing::Cron(expr) => {
                let r = Recurrence::parse(expr, &job.job.zone, Duration::ZERO).ok()?;
                let mut fires = vec![from];
                while let Some(n) = r.next_after(*fires.last()?) {
                    if n > now || fires.len() >= MAX_CATCH_UP {
                        break;
                    }
                    fires.push(n);
                }
                (fires, r.next_after(now))
            }
        };
        let newest = *fires.last()?;
        let run = (now - newest <= grace).then(|| fires.pop()).flatten();
        Some(Plan {
            run,
            skipped: fires,
            next,
        })
    }

    /// How many of `skipped` never reached the inbox (a fire offered just before a crash is
    /// there, and ran).
    async fn not_run(&self, job: &Schedule, skipped: &[i64]) -> Result<usize, StoreError> {
        let channel = &job.job.conversation.channel;
        let mut ran = 0;
        for at in skipped.iter().rev().take(MAX_LOOKUPS) {
            if self
                .store
                .inbox_has(channel, &event_id(job.id, *at))
                .await?
            {
                ran += 1;
            }
        }
        Ok(skipped.len() - ran)
    }
}

/// The message event a fire becomes: from the job's requester, where they wrote, so access
/// and approval rights are what they would be if the person had written it now.
pub fn fire_event(job: &Schedule, at: i64) -> ChannelEvent {
    let local = when::local(at, &job.job.zone);
    let what = match (&job.job.source, &job.job.name) {
        (JobSource::Config, Some(name)) => format!("The operator's scheduled job \"{name}\""),
        _ => format!("Scheduled task #{}", job.id),
    };
    // Starts with the clock emoji, so it can never read as a chat command.
    let text = format!(
        "⏰ {what} is due now ({local}). It was set up earlier; nobody just wrote this. \
         Do what it asks and write your answer for the conversation:\n\n{}",
        job.job.prompt
    );
    ChannelEvent::Message(Inbound {
        key: job.job.conversation.clone(),
        event_id: event_id(job.id, at),
        user: UserRef {
            id: job.job.requester.clone(),
            name: None,
        },
        text,
        place: job.job.place.clone(),
        attachments: Vec::new(),
    })
}

fn missed_text(job: &Schedule, skipped: usize, last: i64, next: Option<i64>) -> String {
    let zone = &job.job.zone;
    let runs = if skipped == 1 {
        format!("was due at {}", when::local(last, zone))
    } else {
        format!(
            "missed {skipped} runs, the last at {}",
            when::local(last, zone)
        )
    };
    let then = next.map_or(String::new(), |n| {
        format!(" It runs again at {}.", when::local(n, zone))
    });
    format!(
        "⏰ While I was offline, scheduled task #{} ({}) {runs}; that is too long ago, so I skipped it.{then}",
        job.id,
        super::short(&job.job.prompt, 60),
    )
}

/// Fire due jobs until `stop`: wait for the soonest due time (or a job added here, or the
/// poll interval for jobs other processes added), step, post the notices, repeat.
pub async fn run(
    schedules: Arc<Schedules>,
    notify: Arc<dyn Notify>,
    sink: Arc<dyn EventSink>,
    stop: CancellationToken,
) {
    let poll = schedules.settings.poll_secs.max(1) as i64 * 1000;
    loop {
        let now = schedules.clock.now_ms();
        let deadline = match schedules.tick(sink.as_ref(), now).await {
            Ok(tick) => {
                for notice in &tick.notices {
                    notify.notify(&notice.key, &notice.text).await;
                }
                if tick.retry {
                    now + RETRY.as_millis() as i64
                } else {
                    schedules.next_deadline(now, poll).await
                }
            }
            Err(err) => {
                tracing::warn!(error = %err, "reading due schedules failed");
                now + RETRY.as_millis() as i64
            }
        };
        tokio::select! {
            () = stop.cancelled() => return,
            () = schedules.wake.notified() => {}
            () = schedules.clock.sleep_until(deadline) => {}
        }
    }
}

impl Schedules {
    /// When to step next: the soonest due fire, or the poll interval, whichever is first.
    async fn next_deadline(&self, now: i64, poll: i64) -> i64 {
        match self.store.next_fire().await {
            Ok(Some(next)) => (now + poll).min(next.max(now + 1)),
            Ok(None) => now + poll,
            Err(err) => {
                tracing::warn!(error = %err, "reading the next schedule failed");
                now + RETRY.as_millis() as i64
            }
        }
    }
}

/// Where the ticker tells a conversation about a fire it skipped: the conversation's outbound
/// path (scrubbed and governed like every answer), which sits above this module.
#[async_trait::async_trait]
pub trait Notify: Send + Sync {
    /// Post `text` into `key`; best effort (a failure is logged, not returned).
    async fn notify(&self, key: &ConversationKey, text: &str);
}
