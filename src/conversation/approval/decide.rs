//! Deciding an approval, one step per job: find the request, check who may answer, judge the
//! outcome on the clock, record it atomically (a second press loses, an "always allow" is
//! remembered), tell people, and hand the suspended turn back to resume. The resumed agent
//! reports the outcome as `AgentEvent::ApprovalResolved`, which the audit records.
//! Every outcome is answered on the button (or in chat) and never runs a tool twice.

use switchboard_channel::{ButtonPress, ConversationKey, MessageRef, Place, UserRef};

use super::fence::{fenced, inline_code};
use super::{Approvals, OPERATOR_USER, SYSTEM_USER, Suspended};
use crate::agent::Resolution;
use crate::command::{Action, ApprovalButton};
use crate::conversation::{Outbox, Route};
use crate::ids::ApprovalStatus;
use crate::store::{Approval, Claim};

/// One answer to an approval: who gave it, what they asked for, and where it came from.
pub struct Request<'a> {
    /// The channel it came in on (and the prompt lives on).
    pub channel: &'a Route,
    /// The conversation.
    pub key: &'a ConversationKey,
    /// Who answered ([`SYSTEM_USER`] for expiry).
    pub user: &'a UserRef,
    /// Which approval and what to do.
    pub button: &'a ApprovalButton,
    /// The button press, when it was one (notices go on it instead of into the chat).
    pub press: Option<&'a ButtonPress>,
    /// Where the answer was given: a requester may approve their own request only in a
    /// private chat.
    pub place: &'a Place,
    /// The claim of the turn deciding it: the decision is stored only while that claim and
    /// its conversation lease are current (`None` in unit tests).
    pub fence: Option<Claim>,
}

impl Request<'_> {
    /// Whether the gateway itself sent it (an expiry event), not a person.
    fn sent_by_gateway(&self) -> bool {
        self.user.id == SYSTEM_USER
    }

    /// Whether it asks to expire the request (only the gateway may).
    fn expiring(&self) -> bool {
        self.button.action == Action::Expire
    }
}

/// A decided approval whose turn resumes now.
pub struct Decided {
    /// The suspended turn.
    pub state: Suspended,
    /// How its pending call was decided.
    pub resolution: Resolution,
    /// The request as it was before the decision.
    pub approval: Approval,
}

/// What the answer amounts to.
struct Outcome {
    status: ApprovalStatus,
    resolution: Resolution,
}

impl Approvals {
    /// Decide the approval `request` names. `None` when nothing resumes (unknown, not
    /// allowed, already decided): the person has been told why.
    pub async fn decide(
        &self,
        out: &Outbox,
        request: Request<'_>,
    ) -> anyhow::Result<Option<Decided>> {
        let approval = match self.find(&request).await? {
            Ok(approval) => approval,
            Err(refusal) => {
                refuse(out, &request, &refusal).await;
                return Ok(None);
            }
        };
        let outcome = self.judge(&approval, &request);
        if !self.record(&approval, &outcome, &request).await? {
            let current = self.store.approval(&approval.id).await?;
            if let Some(current) = current {
                tell(out, &request, &format!("Already {}.", current.status)).await;
            }
            return Ok(None);
        }
        // Read only once this answer won: a decided approval's call may be forgotten by now.
        let state: Suspended = serde_json::from_str(&approval.state)?;
        let waited = (self.clock.now_ms() - approval.created_at).max(0) as f64 / 1000.0;
        self.metrics
            .approval_seconds
            .with_label_values(&[] as &[&str])
            .observe(waited);
        self.announce(out, &request, &approval, outcome.status)
            .await;
        Ok(Some(Decided {
            state,
            resolution: outcome.resolution,
            approval,
        }))
    }

    /// The request, if it exists in this conversation and `request.user` may answer it;
    /// otherwise what to tell them.
    async fn find(&self, request: &Request<'_>) -> anyhow::Result<Result<Approval, String>> {
        let found = self.store.approval(&request.button.id).await?;
        let Some(approval) = found.filter(|a| &a.conversation == request.key) else {
            return Ok(Err("Unknown or expired approval.".into()));
        };
        if request.expiring() != request.sent_by_gateway() {
            return Ok(Err(NOT_YOURS.into()));
        }
        if request.sent_by_gateway() {
            return Ok(Ok(approval));
        }
        Ok(self
            .may_answer(request, &approval)
            .await?
            .map(|()| approval))
    }

    /// Approval rights: the operator (on the dashboard) or an approver (`[policy.approvers]` or an approver grant) may answer
    /// anything; the requester may deny their own request anywhere but approve it only in
    /// a private chat on a channel whose access is not open (they asked, and they were let
    /// in; the web chat's operator is let in by its token or loopback). Whoever else
    /// presses is told privately; the buttons stay for the right person.
    async fn may_answer(
        &self,
        request: &Request<'_>,
        approval: &Approval,
    ) -> anyhow::Result<Result<(), String>> {
        let (channel, user) = (&request.key.channel, &request.user.id);
        if user == OPERATOR_USER || self.access.is_approver(channel, user).await? {
            return Ok(Ok(()));
        }
        if *user != approval.requester {
            return Ok(Err(NOT_YOURS.into()));
        }
        let open = self.access.is_open(channel);
        if request.button.action == Action::Deny || (request.place.is_direct() && !open) {
            return Ok(Ok(()));
        }
        Ok(Err(needs_approver(channel, user)))
    }

    /// What the answer amounts to now: past its deadline every answer is an expiry.
    fn judge(&self, approval: &Approval, request: &Request<'_>) -> Outcome {
        let expired = request.expiring() || self.clock.now_ms() > approval.expires_at;
        let by = request.user.id.clone();
        match (expired, request.button.action) {
            (true, _) => Outcome {
                status: ApprovalStatus::Expired,
                resolution: Resolution::Expired,
            },
            (false, Action::Deny) => Outcome {
                status: ApprovalStatus::Denied,
                resolution: Resolution::Denied { by },
            },
            (false, _) => Outcome {
                status: ApprovalStatus::Approved,
                resolution: Resolution::Approved { by },
            },
        }
    }

    /// Move the request out of `pending` (false: someone else did first); an "Always allow"
    /// also stores the conversation's new rule.
    async fn record(
        &self,
        approval: &Approval,
        outcome: &Outcome,
        request: &Request<'_>,
    ) -> anyhow::Result<bool> {
        let (by, now) = (&request.user.id, self.clock.now_ms());
        let decided = self
            .store
            .decide_approval(&approval.id, outcome.status, by, now, request.fence)
            .await?;
        if decided
            && outcome.status == ApprovalStatus::Approved
            && request.button.action == Action::Always
        {
            self.store
                .add_allow_rule(request.key, &approval.rule, by, now)
                .await?;
        }
        Ok(decided)
    }

    /// Tell the person who answered, and turn the prompt into a record of the outcome.
    async fn announce(
        &self,
        out: &Outbox,
        request: &Request<'_>,
        approval: &Approval,
        status: ApprovalStatus,
    ) {
        let text = outcome_text(approval, request, status);
        tell(out, request, &text).await;
        // `""`: posted on a channel that gave no message id, so there is nothing to edit.
        if let Some(prompt) = approval.prompt_ref.as_ref().filter(|p| !p.is_empty()) {
            let shown = format!("{text}\n{}", fenced(&approval.args));
            let prompt = MessageRef::new(prompt.clone());
            if let Err(err) = out
                .edit(request.channel, request.key, &prompt, &shown)
                .await
            {
                tracing::warn!(error = %err, "could not update the approval prompt");
            }
        }
    }
}

/// The refusal for anyone but the requester (or an approver).
const NOT_YOURS: &str = "Not yours to approve.";

/// The refusal for a requester where only approvers may approve, naming the command that
/// makes them one. Kept short: Telegram shows the first 200 characters of a press's answer.
fn needs_approver(channel: &str, user: &str) -> String {
    format!(
        "Not yours to approve here: in a group or an open chat, only an approver can. The \
         operator makes you one with `switchboard access approver {channel} {user}`."
    )
}

/// Tell whoever answered (nobody, for the gateway's own expiry events).
async fn tell(out: &Outbox, request: &Request<'_>, text: &str) {
    if !request.sent_by_gateway() {
        out.notice(request.channel, request.key, request.press, text)
            .await;
    }
}

/// Tell whoever answered why their answer does not count: privately on a press, so the
/// prompt and its buttons stay for the right person; in the chat for a typed `/approve`.
async fn refuse(out: &Outbox, request: &Request<'_>, text: &str) {
    let Some(press) = request.press else {
        return tell(out, request, text).await;
    };
    if let Err(err) = out.answer_privately(request.channel, press, text).await {
        tracing::warn!(key = %request.key, error = %err, "could not answer a refused press");
    }
}

/// Who decided, in words the people in the chat read: "you" for the person who asked,
/// answering in their private chat (the only reader there; on the web chat their id is a
/// session hash nobody knows); otherwise the decider's name, or their id without one.
fn decider(approval: &Approval, request: &Request<'_>) -> String {
    let user = request.user;
    if user.id == approval.requester && request.place.is_direct() {
        return "you".to_owned();
    }
    user.name.clone().unwrap_or_else(|| user.id.clone())
}

/// The line shown on the button and in place of the prompt.
fn outcome_text(approval: &Approval, request: &Request<'_>, status: ApprovalStatus) -> String {
    let who = decider(approval, request);
    match status {
        ApprovalStatus::Approved if request.button.action == Action::Always => format!(
            "✅ Always allowed by {who} in this conversation: {}",
            inline_code(&approval.rule)
        ),
        ApprovalStatus::Approved => {
            format!("✅ Approved by {who}: {}", inline_code(&approval.tool))
        }
        ApprovalStatus::Denied => format!("🚫 Denied by {who}: {}", inline_code(&approval.tool)),
        ApprovalStatus::Expired | ApprovalStatus::Pending => format!(
            "⌛ Expired — nobody approved {} in time.",
            inline_code(&approval.tool)
        ),
    }
}
