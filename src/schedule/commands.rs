//! The chat side of scheduling: `/schedules` (the conversation's jobs, each with a cancel
//! button, and its id for channels without buttons), `/unschedule <id>` (or the button),
//! and `/tz [zone]`. Each answer is plain text plus buttons; the turn posts it through the
//! outbound path like any command reply.

use switchboard_channel::{Button, ConversationKey};

use super::{Schedules, when};
use crate::command::{Command, cancel_schedule_payload};

/// A command's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reply {
    /// Markdown text.
    pub text: String,
    /// Cancel buttons (`/schedules` only).
    pub buttons: Vec<Button>,
}

impl Reply {
    fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            buttons: Vec::new(),
        }
    }
}

/// What a person sees when the database failed (the detail is logged).
const TRY_AGAIN: &str = "I could not read the scheduled tasks just now; try again in a moment.";

impl Schedules {
    /// Answer a scheduling command in `key`; other commands get an empty reply.
    pub async fn answer(&self, key: &ConversationKey, command: &Command) -> Reply {
        if !self.enabled() {
            return Reply::text("Scheduled tasks are turned off on this gateway.");
        }
        match command {
            Command::Schedules => self.listing(key).await,
            Command::Unschedule(id) => match self.cancel(key, *id).await {
                Ok(true) => Reply::text(format!("🗑 Cancelled scheduled task #{id}.")),
                Ok(false) => Reply::text(format!(
                    "There is no active scheduled task #{id} in this conversation."
                )),
                Err(err) => {
                    tracing::error!(%key, error = %err, "cancelling a schedule failed");
                    Reply::text(TRY_AGAIN)
                }
            },
            Command::Tz(None) => {
                let zone = self.zone_for(key);
                let now = when::local(self.now_ms(), &zone);
                Reply::text(format!(
                    "🕒 This conversation's time zone is {zone} (it is {now}). \
                     Change it with `/tz <zone>`, e.g. `/tz Europe/Paris`."
                ))
            }
            Command::Tz(Some(name)) => match self.set_zone(key, name).await {
                Ok(zone) => {
                    let now = when::local(self.now_ms(), &zone);
                    Reply::text(format!("🕒 Time zone set to {zone}; it is {now} there."))
                }
                Err(super::Refusal::Store(err)) => {
                    tracing::error!(%key, error = %err, "saving a time zone failed");
                    Reply::text(TRY_AGAIN)
                }
                Err(refusal) => Reply::text(format!("{refusal}.")),
            },
            _ => Reply::default(),
        }
    }

    async fn listing(&self, key: &ConversationKey) -> Reply {
        let jobs = match self.list(key).await {
            Ok(jobs) => jobs,
            Err(err) => {
                tracing::error!(%key, error = %err, "listing schedules failed");
                return Reply::text(TRY_AGAIN);
            }
        };
        if jobs.is_empty() {
            return Reply::text(
                "No scheduled tasks here. Ask me to remind you of something, or to do \
                 something regularly.",
            );
        }
        let mut text = String::from("⏰ Scheduled tasks in this conversation:\n");
        for job in &jobs {
            text.push_str(&format!("• {}\n", self.describe(job)));
        }
        text.push_str("\nCancel one with its button or `/unschedule <id>`.");
        let buttons = jobs
            .iter()
            .map(|job| Button {
                label: format!("Cancel #{}", job.id),
                payload: cancel_schedule_payload(job.id),
            })
            .collect();
        Reply { text, buttons }
    }
}
