//! Expiry of unanswered approvals. Requests arrive as they are created (and every pending
//! one at start-up); when one's deadline passes on the injected clock, an expiry event goes
//! into the inbox like a button press, and the conversation decides it there. An approval
//! answered meanwhile just ignores its expiry event; the event id is derived from the
//! approval id, so re-arming after a restart cannot expire anything twice.
//!
//! The loop ([`Expiries::run`]) only waits; the step ([`Expiries::take_due`]) is a plain
//! function of `now`, so tests drive it with any time they like.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use switchboard_channel::{ButtonPress, ChannelEvent, EventSink, UserRef};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::SYSTEM_USER;
use crate::clock::Clock;
use crate::command::{Action, ApprovalButton};
use crate::ids::ApprovalId;
use crate::store::Approval;

/// How long to wait before offering an expiry event again when the inbox refused it.
const RETRY: Duration = Duration::from_secs(5);

/// The expiry timers of one process: approvals by deadline.
pub struct Expiries {
    /// New approvals, from [`super::Approvals`].
    incoming: mpsc::UnboundedReceiver<Approval>,
    /// Reads "now" and waits for deadlines.
    clock: Clock,
    /// Approvals waiting, ordered by (deadline, id).
    due: BTreeMap<(i64, ApprovalId), Approval>,
}

impl Expiries {
    pub(super) fn new(incoming: mpsc::UnboundedReceiver<Approval>, clock: Clock) -> Self {
        Self {
            incoming,
            clock,
            due: BTreeMap::new(),
        }
    }

    /// Wait for `approval`'s deadline.
    pub fn push(&mut self, approval: Approval) {
        self.due
            .insert((approval.expires_at, approval.id.clone()), approval);
    }

    /// Remove and return every approval whose deadline is at or before `now`, oldest first.
    pub fn take_due(&mut self, now: i64) -> Vec<Approval> {
        let later = self.due.split_off(&(now + 1, ApprovalId::new("")));
        std::mem::replace(&mut self.due, later)
            .into_values()
            .collect()
    }

    /// The earliest deadline waiting, if any.
    fn next_deadline(&self) -> Option<i64> {
        self.due.keys().next().map(|(deadline, _)| *deadline)
    }

    /// Deliver each approval's expiry event into `sink` when its time is up, until `stop`.
    pub async fn run(mut self, sink: Arc<dyn EventSink>, stop: CancellationToken) {
        let mut open = true;
        loop {
            let next = self.next_deadline();
            tokio::select! {
                () = stop.cancelled() => return,
                approval = self.incoming.recv(), if open => match approval {
                    Some(approval) => self.push(approval),
                    None => open = false,
                },
                () = wait(&self.clock, next), if next.is_some() => {
                    let now = self.clock.now_ms();
                    for approval in self.take_due(now) {
                        self.expire(sink.as_ref(), approval, now).await;
                    }
                }
            }
            if !open && self.due.is_empty() {
                return;
            }
        }
    }

    /// Offer one expiry event; if the inbox cannot take it now, try again shortly.
    async fn expire(&mut self, sink: &dyn EventSink, approval: Approval, now: i64) {
        if let Err(err) = sink.deliver(expiry_event(&approval)).await {
            tracing::error!(error = %err, approval = %approval.id, "could not expire an approval; retrying");
            let retry_at = now + RETRY.as_millis() as i64;
            self.due.insert((retry_at, approval.id.clone()), approval);
        }
    }
}

/// Sleep until `deadline` on `clock` (forever without one).
async fn wait(clock: &Clock, deadline: Option<i64>) {
    match deadline {
        Some(deadline) => clock.sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// The inbox event that expires `approval` (deduplicated by its id, so re-arming after a
/// restart cannot expire it twice).
pub fn expiry_event(approval: &Approval) -> ChannelEvent {
    ChannelEvent::Button(ButtonPress {
        key: approval.conversation.clone(),
        event_id: format!("expire:{}", approval.id),
        user: UserRef {
            id: SYSTEM_USER.into(),
            name: Some("Switchboard".into()),
        },
        payload: ApprovalButton {
            id: approval.id.clone(),
            action: Action::Expire,
        }
        .to_string(),
        message: None,
        reply_token: None,
        place: switchboard_channel::Place::default(),
    })
}

#[cfg(test)]
mod tests;
