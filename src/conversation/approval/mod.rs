//! Approvals: a tool call the policy asks about suspends its turn into the `approvals` table
//! and posts a prompt with buttons; the press comes back through the inbox like any event,
//! is checked (who, still pending, not expired), decided atomically, and the turn resumes
//! from the stored state — after a restart too. Nothing waits in memory.
//!
//! - this file: [`Approvals`] and [`Approvals::suspend`] (store the turn, post the prompt).
//! - `decide`: [`Approvals::decide`], one step per job (find, authorise, judge, record,
//!   announce, audit).
//! - `expiry`: the timers that deliver an expiry event when nobody answers.
//! - `gate`: the policy as the agent loop's gate.

mod decide;
mod expiry;
mod fence;
mod gate;

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use switchboard_channel::{Button, ConversationKey};
use tokio::sync::mpsc;

pub(super) use decide::Request;
pub use expiry::Expiries;
pub(super) use gate::PolicyGate;

use super::{Outbox, Route};
use crate::access::Access;
use crate::agent::Suspension;
use crate::clock::Clock;
use crate::command::{Action, ApprovalButton};
use crate::ids::{ApprovalId, ApprovalStatus};
use crate::metrics::Metrics;
use crate::policy::narrowest_rule;
use crate::provider::{ChatMessage, ToolCall};
use crate::store::{Approval, Claim, Durable, Store, StoreError};

pub use crate::ids::{OPERATOR_USER, SYSTEM_USER};

/// The suspended turn as stored in `approvals.state`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Suspended {
    /// The user message that started the turn (stored in history when it completes).
    pub user: ChatMessage,
    /// The agent loop's state, with the gate's `Ask` decision.
    pub suspension: Suspension,
    /// For a sub-task's call: the path to the waiting child in `suspension.delegation`
    /// (empty: the turn's own pending call). Several approvals of one turn may wait at once,
    /// one per waiting sub-task; each keeps the whole turn, brought up to date whenever
    /// another of them is decided.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path: Vec<usize>,
}

/// Approval requests: who may answer them, how long they wait, and when they expire.
pub struct Approvals {
    /// Where requests and their suspended turns live.
    store: Arc<dyn Store>,
    /// How long a request waits for an answer.
    timeout: Duration,
    /// Who may approve: `[policy.approvers]`, approver grants, and each channel's rules.
    access: Arc<Access>,
    /// New requests, to the expiry timers.
    expiry: mpsc::UnboundedSender<Approval>,
    /// Reads "now" for creation, expiry and wait times.
    clock: Clock,
    /// Time-to-decision histogram.
    metrics: Arc<Metrics>,
}

impl Approvals {
    /// Approvals kept in `store`, waiting `timeout`; the returned [`Expiries`] must run (see
    /// [`Expiries::run`]) for unanswered ones to expire.
    pub fn new(
        store: Arc<dyn Store>,
        timeout: Duration,
        access: Arc<Access>,
        clock: Clock,
        metrics: Arc<Metrics>,
    ) -> (Self, Expiries) {
        let (tx, rx) = mpsc::unbounded_channel();
        let expiries = Expiries::new(rx, clock.clone());
        let approvals = Self {
            store,
            timeout,
            access,
            expiry: tx,
            clock,
            metrics,
        };
        (approvals, expiries)
    }

    /// Arm expiry timers for every approval still pending: at start-up (timers live in
    /// memory, requests in the database) and on every sweep, so an approval prompted by a
    /// replica that died still expires (each replica delivers the same expiry event; the
    /// inbox keeps one). Returns the conversations whose pending prompt nobody has seen.
    pub async fn rearm(&self) -> Result<Vec<ConversationKey>, StoreError> {
        let pending = self.store.pending_approvals().await?;
        let mut unseen = Vec::new();
        for approval in pending {
            if approval.prompt_ref.is_none() {
                unseen.push(approval.conversation.clone());
            }
            let _ = self.expiry.send(approval);
        }
        Ok(unseen)
    }

    /// Store a suspended turn and post its prompt (one per waiting sub-task of a delegation,
    /// each naming its sub-task). Returns the new approvals' ids. With a `fence` (the claim
    /// of the turn) the requests are stored and the turn's inbox row marked done in one
    /// fenced transaction, before anything is shown: a replica dying after it leaves a
    /// request whose prompt the next holder of the conversation posts ([`Self::post_unseen`]),
    /// never a second run of the message. When one sub-task of a delegation was decided and
    /// others still wait, their pending approvals keep their prompts and get the turn's new
    /// state.
    #[allow(
        clippy::too_many_arguments,
        reason = "each is a different part of one suspension (where to post, whose, what, fenced on which claim); a struct would only rename them"
    )]
    pub async fn suspend(
        &self,
        out: &Outbox,
        channel: &Route,
        key: &ConversationKey,
        requester: &str,
        state: Suspended,
        durable: &Durable,
        fence: Option<Claim>,
    ) -> anyhow::Result<Vec<ApprovalId>> {
        let waiting = self.still_waiting(key, &state).await?;
        let mut approvals = Vec::new();
        for (path, asked) in asking(&state) {
            if !waiting.iter().any(|(p, _)| *p == path) {
                approvals.push(self.request(key, requester, &state, &path, asked, out)?);
            }
        }
        match fence {
            Some(claim) => {
                let now = self.clock.now_ms();
                self.store.suspend_turn(claim, &approvals, now).await?;
            }
            None => {
                for approval in &approvals {
                    self.store.create_approval(approval).await?;
                }
            }
        }
        // The sub-tasks still waiting keep their prompts; their stored turn is this one now.
        for (path, id) in waiting {
            let mine = Suspended {
                path,
                ..state.clone()
            };
            let json = serde_json::to_string(&mine)?;
            let update = || self.store.update_approval_state(&id, &json);
            durable.write("sub-task approval state", update).await?;
        }
        for approval in &approvals {
            let _ = self.expiry.send(approval.clone());
            self.post_prompt(out, channel, approval, durable).await?;
        }
        Ok(approvals.into_iter().map(|a| a.id).collect())
    }

    /// The approvals of `state`'s delegation still pending from before (a sub-task of the
    /// same `delegate` call), by path, when one of its sub-tasks was just decided.
    async fn still_waiting(
        &self,
        key: &ConversationKey,
        state: &Suspended,
    ) -> anyhow::Result<Vec<(Vec<usize>, ApprovalId)>> {
        if state.suspension.delegation.is_none() {
            return Ok(Vec::new());
        }
        let mut found = Vec::new();
        for approval in self.store.pending_approvals().await? {
            if &approval.conversation != key {
                continue;
            }
            let Ok(theirs) = serde_json::from_str::<Suspended>(&approval.state) else {
                continue;
            };
            if !theirs.path.is_empty()
                && theirs.suspension.pending.id == state.suspension.pending.id
            {
                found.push((theirs.path, approval.id));
            }
        }
        Ok(found)
    }

    /// Post the prompt of `approval` if nobody has seen it: the replica that suspended the
    /// turn died (or lost its lease) between storing the request and recording its prompt.
    /// Called only by the conversation's current lease holder, so one replica posts it.
    pub async fn post_unseen(
        &self,
        out: &Outbox,
        channel: &Route,
        approval: &Approval,
        durable: &Durable,
    ) -> anyhow::Result<()> {
        if approval.prompt_ref.is_some() || approval.status != ApprovalStatus::Pending {
            return Ok(());
        }
        tracing::info!(approval = %approval.id, key = %approval.conversation, "posting an approval prompt nobody has seen");
        self.post_prompt(out, channel, approval, durable).await
    }

    /// Post `approval`'s prompt and record that it was posted (its message id, or `""` for
    /// a channel that gives none).
    async fn post_prompt(
        &self,
        out: &Outbox,
        channel: &Route,
        approval: &Approval,
        durable: &Durable,
    ) -> anyhow::Result<()> {
        let key = &approval.conversation;
        let buttons = channel.limits_for(key).supports_buttons;
        let text = prompt_text(approval, self.timeout, buttons);
        let buttons = if buttons {
            prompt_buttons(&approval.id)
        } else {
            Vec::new()
        };
        let posted = out.post(channel, key, &text, buttons).await?;
        let prompt = posted.messages.first().map_or("", |m| m.id.as_str());
        // The prompt is visible now: that is recorded through database errors, or another
        // replica would post a second prompt.
        let record = || self.store.set_approval_prompt(&approval.id, prompt);
        durable.write("approval prompt id", record).await?;
        Ok(())
    }

    /// The pending request for the call `asked` waits on (the turn's own, or the sub-task's
    /// at `path`).
    fn request(
        &self,
        key: &ConversationKey,
        requester: &str,
        state: &Suspended,
        path: &[usize],
        asked: &Suspension,
        out: &Outbox,
    ) -> anyhow::Result<Approval> {
        let call = &asked.pending;
        let now = self.clock.now_ms();
        // Everything but `state` is shown or kept: only `state` holds the raw call.
        let scrubbed = |text: &str| out.scrubber().scrub(text).into_owned();
        let mut reason = asked.decision.reason.clone();
        if let Some(task) = state
            .suspension
            .delegation
            .as_ref()
            .and_then(|d| d.task_at(path))
        {
            let n = path[0] + 1;
            reason = format!(
                "🧩 Asked by sub-task {n} ({}). {reason}",
                fence::inline_code(task)
            );
        }
        let mine = Suspended {
            path: path.to_vec(),
            ..state.clone()
        };
        Ok(Approval {
            id: ApprovalId::random(),
            conversation: key.clone(),
            tool: call.name.clone(),
            args: scrubbed(&shown_args(call)),
            rule: scrubbed(&narrowest_rule(&call.name, &call.args)),
            reason: scrubbed(&reason),
            requester: requester.to_owned(),
            status: ApprovalStatus::Pending,
            decided_by: None,
            prompt_ref: None,
            state: serde_json::to_string(&mine)?,
            created_at: now,
            expires_at: now + self.timeout.as_millis() as i64,
        })
    }
}

/// Each call of a suspended turn that waits for a person, with its path: the turn's own
/// pending call, or every waiting sub-task's.
fn asking(state: &Suspended) -> Vec<(Vec<usize>, &Suspension)> {
    match &state.suspension.delegation {
        Some(children) => children.waiting(),
        None => vec![(Vec::new(), &state.suspension)],
    }
}

/// The prompt: what will run, why the policy asked, and how to answer.
fn prompt_text(approval: &Approval, timeout: Duration, buttons: bool) -> String {
    let minutes = timeout.as_secs().div_ceil(60);
    let mut text = format!(
        "🔐 **Approval needed** for {}:\n{}\n{}\nExpires in {minutes} min.",
        fence::inline_code(&approval.tool),
        fence::fenced(&approval.args),
        approval.reason
    );
    if !buttons {
        let id = &approval.id;
        text.push_str(&format!("\nReply `/approve {id}` or `/deny {id}`."));
    }
    text
}

/// "Approve once", "Always allow", "Deny".
fn prompt_buttons(id: &ApprovalId) -> Vec<Button> {
    [
        ("Approve once", Action::Once),
        ("Always allow", Action::Always),
        ("Deny", Action::Deny),
    ]
    .into_iter()
    .map(|(label, action)| Button {
        label: label.into(),
        payload: ApprovalButton {
            id: id.clone(),
            action,
        }
        .to_string(),
    })
    .collect()
}

#[cfg(test)]
mod tests;

/// What a shell call will run, or the arguments as JSON.
fn shown_args(call: &ToolCall) -> String {
    match call.args.get("command").and_then(|c| c.as_str()) {
        Some(command) if call.name == "shell" => command.to_owned(),
        _ => serde_json::to_string_pretty(&call.args).unwrap_or_default(),
    }
}
