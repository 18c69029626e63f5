//! Turns a turn's tool events into audit log rows as they happen, so a crash mid-turn still
//! leaves a record of every tool that ran. The decision each row records is the gate's typed
//! [`Decision`] carried on the events: the verdict picks the status and `decided_by` is the
//! decider, so nothing in a command line or a reason can change either.

use std::collections::HashMap;
use std::sync::Arc;

use switchboard_channel::ConversationKey;

use crate::agent::{AgentEvent, Resolution};
use crate::clock::Clock;
use crate::ids::ApprovalStatus;
use crate::policy::{Decision, Verdict};
use crate::store::{AuditEntry, AuditLog};

/// Output kept per audit row.
const AUDIT_OUTPUT_CHARS: usize = 2000;

/// Watches one turn's events.
pub(super) struct AuditRecorder {
    store: Arc<dyn AuditLog>,
    key: ConversationKey,
    inbox_id: i64,
    clock: Clock,
    /// Arguments and decision of calls that started, by call id.
    started: HashMap<String, (String, Decision)>,
}

impl AuditRecorder {
    pub(super) fn new(
        store: Arc<dyn AuditLog>,
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

    /// Record what `event` says about a call (arguments and output already scrubbed by the
    /// agent loop): a completed run, or a call that never ran because its approval was
    /// denied or expired. `chain` is empty for the turn's own calls; for a sub-task's it
    /// names the `delegate` call and the sub-task (see `AgentEvent::innermost`), and heads
    /// the call id the row keeps, so the audit reads turn → sub-task → call.
    pub(super) fn observe(&mut self, chain: &str, event: &AgentEvent) {
        let chained = |id: &String| format!("{chain}{id}");
        match event {
            AgentEvent::ToolStarted {
                id, args, decision, ..
            } => {
                self.started
                    .insert(chained(id), (args.to_string(), decision.clone()));
            }
            AgentEvent::ApprovalResolved {
                id,
                name,
                args,
                resolution,
                decision,
            } => {
                let status = match resolution {
                    Resolution::Approved { .. } => return, // its run is audited when it ends
                    Resolution::Denied { .. } => ApprovalStatus::Denied,
                    Resolution::Expired => ApprovalStatus::Expired,
                };
                let id = chained(id);
                let row = Row::refused(&id, name, args.to_string(), decision.clone());
                self.write(row, &status.to_string());
            }
            AgentEvent::ToolCompleted {
                id,
                name,
                success,
                duration,
                error,
                output,
            } => {
                let id = &chained(id);
                let Some((args, decision)) = self.started.remove(id) else {
                    tracing::error!(call = %id, "a tool completed that never started; not audited");
                    return;
                };
                let status = match (decision.verdict, *success) {
                    (Verdict::Deny, _) => "denied",
                    (_, true) => "ok",
                    (_, false) => "error",
                };
                let mut text: String = output.chars().take(AUDIT_OUTPUT_CHARS).collect();
                if let Some(error) = error {
                    text = format!("error: {error}\n{text}");
                }
                let row = Row {
                    call_id: id,
                    tool: name,
                    args,
                    decision,
                    duration_ms: duration.as_millis() as i64,
                    output: text,
                };
                self.write(row, status);
            }
            _ => {}
        }
    }

    /// Write one row in the background: the turn never waits for its audit.
    fn write(&self, row: Row<'_>, status: &str) {
        let entry = AuditEntry {
            conversation: self.key.clone(),
            inbox_id: Some(self.inbox_id),
            tool: row.tool.clone(),
            call_id: row.call_id.clone(),
            args: row.args,
            decided_by: row.decision.decided_by.user().map(str::to_owned),
            decision: row.decision.to_string(),
            status: status.to_owned(),
            duration_ms: row.duration_ms,
            output: row.output,
            created_at: self.clock.now_ms(),
        };
        let store = Arc::clone(&self.store);
        tokio::spawn(async move {
            if let Err(err) = store.record_audit(&entry).await {
                tracing::error!(error = %err, tool = %entry.tool, "audit write failed");
            }
        });
    }
}

/// What one audit row says about one call.
struct Row<'a> {
    call_id: &'a String,
    tool: &'a String,
    args: String,
    decision: Decision,
    duration_ms: i64,
    output: String,
}

impl<'a> Row<'a> {
    /// A call that never ran.
    fn refused(call_id: &'a String, tool: &'a String, args: String, decision: Decision) -> Self {
        Self {
            call_id,
            tool,
            args,
            decision,
            duration_ms: 0,
            output: String::new(),
        }
    }
}
