//! Turns a turn's tool events into audit log rows as they happen, so a crash mid-turn still
//! leaves a record of every tool that ran. The decision each row records is the gate's typed
//! [`Decision`] carried on the events: the verdict picks the status and `decided_by` is the
//! decider, so nothing in a command line or a reason can change either.

use std::collections::HashMap;
use std::sync::Arc;

use switchboard_channel::ConversationKey;

use crate::agent::AgentEvent;
use crate::clock::Clock;
use crate::ids::ApprovalStatus;
use crate::policy::{Decision, Verdict};
use crate::store::{Approval, AuditEntry, Store};

/// Output kept per audit row.
const AUDIT_OUTPUT_CHARS: usize = 2000;

/// Watches one turn's events.
pub(super) struct AuditRecorder {
    store: Arc<dyn Store>,
    key: ConversationKey,
    inbox_id: i64,
    clock: Clock,
    /// Arguments and decision of calls that started, by call id.
    started: HashMap<String, (String, Decision)>,
}

impl AuditRecorder {
    pub(super) fn new(
        store: Arc<dyn Store>,
        key: ConversationKey,
        inbox_id: i64,
        clock: Clock,
    ) -> Self {
        Self {
            store,
            key,
            inbox_id,
            clock,
            started: HashMap::new(),
        }
    }

    /// Record a completed call (arguments and output already scrubbed by the agent loop).
    pub(super) fn observe(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::ToolStarted {
                id, args, decision, ..
            } => {
                self.started
                    .insert(id.clone(), (args.to_string(), decision.clone()));
            }
            AgentEvent::ToolCompleted {
                id,
                name,
                success,
                duration,
                error,
                output,
            } => {
                let Some((args, decision)) = self.started.remove(id) else {
                    tracing::error!(call = %id, "a tool completed that never started; not audited");
                    return;
                };
                let mut text: String = output.chars().take(AUDIT_OUTPUT_CHARS).collect();
                if let Some(error) = error {
                    text = format!("error: {error}\n{text}");
                }
                let status = match (decision.verdict, *success) {
                    (Verdict::Deny, _) => "denied",
                    (_, true) => "ok",
                    (_, false) => "error",
                };
                let entry = AuditEntry {
                    conversation: self.key.clone(),
                    inbox_id: Some(self.inbox_id),
                    tool: name.clone(),
                    call_id: id.clone(),
                    args,
                    decision: decision.to_string(),
                    decided_by: decision.decided_by.user().map(str::to_owned),
                    status: status.into(),
                    duration_ms: duration.as_millis() as i64,
                    output: text,
                    created_at: self.clock.now_ms(),
                };
                write(Arc::clone(&self.store), entry);
            }
            _ => {}
        }
    }
}

/// The row for a call that never ran because its approval was denied or expired.
pub(super) fn refusal_entry(
    approval: &Approval,
    decision: &Decision,
    status: ApprovalStatus,
    now_ms: i64,
) -> AuditEntry {
    AuditEntry {
        conversation: approval.conversation.clone(),
        inbox_id: None,
        tool: approval.tool.clone(),
        call_id: approval.id.to_string(),
        args: approval.args.clone(),
        decision: decision.to_string(),
        decided_by: decision.decided_by.user().map(str::to_owned),
        status: status.to_string(),
        duration_ms: 0,
        output: String::new(),
        created_at: now_ms,
    }
}

/// Write in the background: the turn never waits for its audit row.
fn write(store: Arc<dyn Store>, entry: AuditEntry) {
    tokio::spawn(async move {
        if let Err(err) = store.record_audit(&entry).await {
            tracing::error!(error = %err, tool = %entry.tool, "audit write failed");
        }
    });
}
