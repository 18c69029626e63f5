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

    /// Store a suspended turn and post its prompt. Returns the approval id. With a `fence`
    /// (the claim of the turn) the request is stored and the turn's inbox row marked done in
    /// one fenced transaction, before anything is shown: a replica dying after it leaves a
    /// request whose prompt the next holder of the conversation posts ([`Self::post_unseen`]),
    /// never a second run of the message.
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
    ) -> anyhow::Result<ApprovalId> {
        let approval = self.request(key, requester, &state, out)?;
        match fence {
            Some(claim) => {
                let now = self.clock.now_ms();
                self.store.suspend_turn(claim, &approval, now).await?;
            }
            None => self.store.create_approval(&approval).await?,
        }
        let _ = self.expiry.send(approval.clone());
        self.post_prompt(out, channel, &approval, durable).await?;
        Ok(approval.id)
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

    /// The pending request for `state`'s call.
    fn request(
        &self,
        key: &ConversationKey,
        requester: &str,
        state: &Suspended,
        out: &Outbox,
    ) -> anyhow::Result<Approval> {
        let call = &state.suspension.pending;
        let now = self.clock.now_ms();
        // Everything but `state` is shown or kept: only `state` holds the raw call.
        let scrubbed = |text: &str| out.scrubber().scrub(text).into_owned();
        Ok(Approval {
            id: ApprovalId::random(),
            conversation: key.clone(),
            tool: call.name.clone(),
            args: scrubbed(&shown_args(call)),
            rule: scrubbed(&narrowest_rule(&call.name, &call.args)),
            reason: scrubbed(&state.suspension.decision.reason),
            requester: requester.to_owned(),
            status: ApprovalStatus::Pending,
            decided_by: None,
            prompt_ref: None,
            state: serde_json::to_string(state)?,
            created_at: now,
            expires_at: now + self.timeout.as_millis() as i64,
        })
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
