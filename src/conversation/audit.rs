//! Turns a turn's tool events into audit log rows as they happen, so a crash mid-turn still
//! leaves a record of every tool that ran.

use std::collections::HashMap;
use std::sync::Arc;

use switchboard_channel::ConversationKey;

use crate::agent::AgentEvent;
use crate::store::{AuditEntry, Store, now_ms};

/// Output kept per audit row.
const AUDIT_OUTPUT_CHARS: usize = 2000;

/// Watches one turn's events.
pub(super) struct AuditRecorder {
    store: Arc<dyn Store>,
    key: ConversationKey,
    inbox_id: i64,
    /// Arguments and decision of calls that started, by call id.
    started: HashMap<String, (String, String)>,
}

impl AuditRecorder {
    pub(super) fn new(store: Arc<dyn Store>, key: ConversationKey, inbox_id: i64) -> Self {
        Self {
            store,
            key,
            inbox_id,
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
                let mut text: String = output.chars().take(AUDIT_OUTPUT_CHARS).collect();
                if let Some(error) = error {
                    text = format!("error: {error}\n{text}");
                }
                let (args, decision) = self
                    .started
                    .remove(id)
                    .unwrap_or_else(|| ("{}".into(), "unknown".into()));
                let decided_by = decision.split_once(" by ").map(|(_, who)| who.to_owned());
                let status = match (*success, decision.starts_with("deny")) {
                    (_, true) => "denied",
                    (true, false) => "ok",
                    (false, false) => "error",
                };
                let entry = AuditEntry {
                    conversation: self.key.clone(),
                    inbox_id: Some(self.inbox_id),
                    tool: name.clone(),
                    call_id: id.clone(),
                    args,
                    decision,
                    decided_by,
                    status: status.into(),
                    duration_ms: duration.as_millis() as i64,
                    output: text,
                    created_at: now_ms(),
                };
                let store = Arc::clone(&self.store);
                tokio::spawn(async move {
                    if let Err(err) = store.record_audit(&entry).await {
                        tracing::error!(error = %err, tool = %entry.tool, "audit write failed");
                    }
                });
            }
            _ => {}
        }
    }
}
