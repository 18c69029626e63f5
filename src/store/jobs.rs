//! A scheduled job as plain data: who made it, when it runs, what it asks. The store owns
//! these rows, as it owns every domain's (access grants, approvals, checkpoints); the
//! scheduler (`crate::schedule`) reads and writes them through [`super::ScheduleStore`].

use switchboard_channel::{ConversationKey, Place};

/// Who made a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobSource {
    /// The `schedule` tool, in a conversation.
    Chat,
    /// A `[[schedules]]` entry in the config.
    Config,
}

impl JobSource {
    /// The stored form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Chat => "chat",
            Self::Config => "config",
        }
    }
}

/// When a job runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Timing {
    /// Once, at this instant (Unix ms).
    Once(i64),
    /// Whenever this cron pattern matches, read in the job's zone.
    Cron(String),
}

/// A job to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSchedule {
    /// The owning conversation: where it runs and who may cancel it.
    pub conversation: ConversationKey,
    /// Who made it.
    pub source: JobSource,
    /// A config job's name.
    pub name: Option<String>,
    /// The user id the fired turn runs for.
    pub requester: String,
    /// Where the requester wrote from (access and approval rights are decided on it).
    pub place: Place,
    /// What the agent is asked to do.
    pub prompt: String,
    /// When.
    pub timing: Timing,
    /// IANA zone of a cron pattern (and of times shown for the job).
    pub zone: String,
    /// The first fire.
    pub next_fire_at: i64,
}

/// A stored job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    /// Job id (what `/schedules` shows and cancel takes).
    pub id: i64,
    /// The job as stored.
    pub job: NewSchedule,
    /// The fire waiting; `None` once the job finished or was cancelled.
    pub next_fire_at: Option<i64>,
    /// Whether it still runs.
    pub active: bool,
}
