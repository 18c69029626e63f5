//! Approvals: a tool call the policy asks about suspends its turn into the `approvals` table
//! and posts a prompt with buttons; the press comes back through the inbox like any event,
//! is checked (who, still pending, not expired), decided atomically, and the turn resumes
//! from the stored state — after a restart too. Nothing waits in memory.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use switchboard_channel::{Button, ButtonPress, Channel, ChannelEvent, ConversationKey, UserRef};

use super::Deps;
use crate::agent::{Gate, GateOutcome, Resolution, Suspension};
use crate::draft::Draft;
use crate::ids::{ApprovalId, ApprovalStatus};
use crate::policy::{Policy, Verdict, narrowest_rule};
use crate::provider::{ChatMessage, ToolCall};
use crate::store::{Approval, AuditEntry, now_ms};

/// The user id expiry events carry; no platform issues ids of this shape.
pub const SYSTEM_USER: &str = "switchboard:system";

/// What a button (or `/approve`, `/deny`) asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Run this call once.
    Once,
    /// Run it and allow the same call in this conversation from now on.
    Always,
    /// Do not run it.
    Deny,
    /// Nobody answered in time (internal).
    Expire,
}

/// A button payload: `ap:<id>:<o|a|d|x>`, at most 64 bytes (Telegram's callback limit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApprovalButton {
    /// Approval id.
    pub id: ApprovalId,
    /// Requested action.
    pub action: Action,
}

impl fmt::Display for ApprovalButton {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let code = match self.action {
            Action::Once => 'o',
            Action::Always => 'a',
            Action::Deny => 'd',
            Action::Expire => 'x',
        };
        write!(f, "ap:{}:{code}", self.id)
    }
}

impl FromStr for ApprovalButton {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, ()> {
        let mut parts = s.split(':');
        let (Some("ap"), Some(id), Some(code), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(());
        };
        let action = match code {
            "o" => Action::Once,
            "a" => Action::Always,
            "d" => Action::Deny,
            "x" => Action::Expire,
            _ => return Err(()),
        };
        Ok(Self {
            id: id.parse().map_err(|_| ())?,
            action,
        })
    }
}

/// The suspended turn as stored in `approvals.state`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Suspended {
    /// The user message that started the turn (stored in history when it completes).
    pub user: ChatMessage,
    /// The agent loop's state.
    pub suspension: Suspension,
}

/// The policy as the agent loop's gate, with this conversation's "always allow" rules.
pub(super) struct PolicyGate {
    pub policy: Arc<Policy>,
    pub extra_allow: Vec<String>,
}

#[async_trait::async_trait]
impl Gate for PolicyGate {
    async fn check(&self, call: &ToolCall, read_only: bool) -> GateOutcome {
        let decision = self
            .policy
            .evaluate(&call.name, &call.args, read_only, &self.extra_allow);
        match decision.verdict {
            Verdict::Allow => GateOutcome::Run(format!("allow: {}", decision.reason)),
            Verdict::Ask => GateOutcome::Suspend(decision.reason),
            Verdict::Deny => GateOutcome::Refuse(decision.reason),
        }
    }
}

/// Store a suspended turn and post its prompt. Returns the approval id.
pub(super) async fn suspend(
    deps: &Deps,
    channel: &Arc<dyn Channel>,
    key: &ConversationKey,
    requester: &str,
    state: Suspended,
) -> anyhow::Result<ApprovalId> {
    let call = &state.suspension.pending;
    let id = ApprovalId::random();
    let args = deps.scrubber.scrub(&shown_args(call)).into_owned();
    let now = now_ms();
    let approval = Approval {
        id: id.clone(),
        conversation: key.clone(),
        tool: call.name.clone(),
        args: args.clone(),
        rule: narrowest_rule(&call.name, &call.args),
        reason: state.suspension.reason.clone(),
        requester: requester.to_owned(),
        status: ApprovalStatus::Pending,
        decided_by: None,
        prompt_ref: None,
        state: serde_json::to_string(&state)?,
        created_at: now,
        expires_at: now + deps.approval_timeout.as_millis() as i64,
    };
    deps.store.create_approval(&approval).await?;
    let minutes = deps.approval_timeout.as_secs().div_ceil(60);
    let mut text = format!(
        "🔐 **Approval needed** for `{}`:\n```\n{}\n```\n{}\nExpires in {minutes} min.",
        call.name, args, approval.reason
    );
    let buttons = if channel.limits_for(key).supports_buttons {
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
    } else {
        text.push_str(&format!("\nReply `/approve {id}` or `/deny {id}`."));
        Vec::new()
    };
    let posted = Draft::new(
        Arc::clone(channel),
        key.clone(),
        deps.draft,
        Vec::new(),
        None,
    )
    .governed(Arc::clone(&deps.governor))
    .with_buttons(buttons)
    .finish(&text)
    .await?;
    if let Some(prompt) = posted.messages.first() {
        deps.store.set_approval_prompt(&id, &prompt.id).await?;
    }
    let _ = deps.expiry.send(approval);
    Ok(id)
}

/// What a shell call will run, or the arguments as JSON.
fn shown_args(call: &ToolCall) -> String {
    match call.args.get("command").and_then(|c| c.as_str()) {
        Some(command) if call.name == "shell" => command.to_owned(),
        _ => serde_json::to_string_pretty(&call.args).unwrap_or_default(),
    }
}

/// Decide approval `button.id` for `user`; on success returns the turn to resume.
/// Every outcome is answered on the button (or in chat) and never runs a tool twice.
pub(super) async fn decide(
    deps: &Deps,
    channel: &Arc<dyn Channel>,
    key: &ConversationKey,
    user: &UserRef,
    button: &ApprovalButton,
    press: Option<&ButtonPress>,
) -> anyhow::Result<Option<(Suspended, Resolution, Approval)>> {
    let notice = |text: String| async move {
        match press {
            Some(press) => {
                let _ = channel.answer_button(press, &text).await;
            }
            None => {
                let _ = Draft::new(
                    Arc::clone(channel),
                    key.clone(),
                    deps.draft,
                    Vec::new(),
                    None,
                )
                .governed(Arc::clone(&deps.governor))
                .finish(&text)
                .await;
            }
        }
    };
    let Some(approval) = deps
        .store
        .approval(&button.id)
        .await?
        .filter(|a| &a.conversation == key)
    else {
        notice("Unknown or expired approval.".into()).await;
        return Ok(None);
    };
    let internal = button.action == Action::Expire;
    if internal != (user.id == SYSTEM_USER) {
        notice("Not yours to approve.".into()).await;
        return Ok(None);
    }
    let approvers = deps.approvers.get(&key.channel);
    let allowed = internal
        || user.id == approval.requester
        || approvers.is_some_and(|a| a.contains(&user.id));
    if !allowed {
        notice("Not yours to approve.".into()).await;
        return Ok(None);
    }
    let expired = internal || now_ms() > approval.expires_at;
    let (status, resolution) = match (expired, button.action) {
        (true, _) => (ApprovalStatus::Expired, Resolution::Expired),
        (false, Action::Deny) => (
            ApprovalStatus::Denied,
            Resolution::Denied {
                by: user.id.clone(),
            },
        ),
        (false, _) => (
            ApprovalStatus::Approved,
            Resolution::Approved {
                by: user.id.clone(),
            },
        ),
    };
    if !deps
        .store
        .decide_approval(&approval.id, status, &user.id, now_ms())
        .await?
    {
        let current = deps
            .store
            .approval(&approval.id)
            .await?
            .map_or_else(String::new, |a| a.status.to_string());
        if !internal {
            notice(format!("Already {current}.")).await;
        }
        return Ok(None);
    }
    let waited = (now_ms() - approval.created_at).max(0) as f64 / 1000.0;
    deps.metrics
        .approval_seconds
        .with_label_values(&[] as &[&str])
        .observe(waited);
    if button.action == Action::Always && status == ApprovalStatus::Approved {
        deps.store
            .add_allow_rule(key, &approval.rule, &user.id, now_ms())
            .await?;
    }
    let outcome = match status {
        ApprovalStatus::Approved if button.action == Action::Always => format!(
            "✅ Always allowed by {} in this conversation: `{}`",
            who(user),
            approval.rule
        ),
        ApprovalStatus::Approved => format!("✅ Approved by {}: `{}`", who(user), approval.tool),
        ApprovalStatus::Denied => format!("🚫 Denied by {}: `{}`", who(user), approval.tool),
        _ => format!("⌛ Expired — nobody approved `{}` in time.", approval.tool),
    };
    if !internal {
        notice(outcome.clone()).await;
    }
    if let Some(prompt) = &approval.prompt_ref {
        let msg =
            switchboard_channel::Outbound::text(format!("{outcome}\n```\n{}\n```", approval.args));
        let _ = channel
            .edit(
                key,
                &switchboard_channel::MessageRef::new(prompt.clone()),
                &msg,
            )
            .await;
    }
    if status != ApprovalStatus::Approved {
        record_refusal(deps, &approval, status, &user.id).await;
    }
    let state: Suspended = serde_json::from_str(&approval.state)?;
    Ok(Some((state, resolution, approval)))
}

fn who(user: &UserRef) -> String {
    user.name.clone().unwrap_or_else(|| user.id.clone())
}

async fn record_refusal(deps: &Deps, approval: &Approval, status: ApprovalStatus, by: &str) {
    let entry = AuditEntry {
        conversation: approval.conversation.clone(),
        inbox_id: None,
        tool: approval.tool.clone(),
        call_id: approval.id.to_string(),
        args: approval.args.clone(),
        decision: format!("ask: {}", approval.reason),
        decided_by: (status == ApprovalStatus::Denied).then(|| by.to_owned()),
        status: status.to_string(),
        duration_ms: 0,
        output: String::new(),
        created_at: now_ms(),
    };
    if let Err(err) = deps.store.record_audit(&entry).await {
        tracing::error!(error = %err, "audit write failed");
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
    })
}

/// How long until `approval` expires, from now.
pub fn time_left(approval: &Approval) -> Duration {
    Duration::from_millis(approval.expires_at.saturating_sub(now_ms()).max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn button_payloads_round_trip_and_fit_telegram() {
        for action in [Action::Once, Action::Always, Action::Deny, Action::Expire] {
            let b = ApprovalButton {
                id: ApprovalId::new("a1b2c3d4e5"),
                action,
            };
            let text = b.to_string();
            assert!(text.len() <= 64);
            assert_eq!(text.parse::<ApprovalButton>(), Ok(b));
        }
        for bad in [
            "",
            "ap::o",
            "ap:x:z",
            "ap:abc:o:extra",
            "xx:abc:o",
            "ap:a-b:o",
        ] {
            assert!(bad.parse::<ApprovalButton>().is_err(), "{bad}");
        }
    }
}
