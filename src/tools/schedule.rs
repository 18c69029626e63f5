//! The `schedule` tool: the model creates, lists and cancels scheduled tasks of the
//! conversation it runs in (one tool per conversation, made with its key, so it can never
//! reach another conversation's jobs). Its description tells the model the conversation's
//! time zone and the current local time, so "tomorrow at 9" resolves to an instant.
//!
//! Declared read-only, like the memory tools: it changes only this conversation's own
//! gateway state. What a task does when it fires passes the policy gate then, with the
//! person there to approve it.

use std::sync::{Arc, LazyLock};

use async_trait::async_trait;
use serde_json::{Value, json};
use switchboard_channel::ConversationKey;

use crate::agent::{Tool, ToolResult};
use crate::schedule::{Refusal, Request, Schedules, when};

/// The schedule tool's name (a known metric label, like the built-in tools).
pub const SCHEDULE_TOOL: &str = "schedule";

/// The tool, bound to one conversation.
pub struct ScheduleTool {
    schedules: Arc<Schedules>,
    key: ConversationKey,
    /// Built when the turn starts: the zone and the local time then.
    description: String,
}

impl ScheduleTool {
    /// The tool for `key`.
    pub fn new(schedules: Arc<Schedules>, key: ConversationKey) -> Self {
        let zone = schedules.zone_for(&key);
        let now = schedules.now_ms();
        let description = format!(
            "Create, list or cancel scheduled tasks of this conversation. action=create with \
             `prompt` (what to do then, written as an instruction to yourself) and either `at` \
             (a one-shot: an RFC 3339 time with offset, e.g. 2026-12-01T09:00:00+01:00; resolve \
             words like 'tomorrow at 9' yourself from the time below) or `cron` (recurring: \
             minute hour day-of-month month day-of-week, read in `zone`, an IANA name, default \
             this conversation's zone). When a task is due you get its prompt and your answer \
             is posted here. action=list shows the tasks; action=cancel with `id` removes one. \
             This conversation's time zone is {zone}; it is now {} ({}).",
            when::local(now, &zone),
            when::rfc3339(now, &zone),
        );
        Self {
            schedules,
            key,
            description,
        }
    }

    async fn create(&self, args: &Value) -> ToolResult {
        let text = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_owned);
        let request = Request {
            prompt: text("prompt").unwrap_or_default(),
            at: text("at"),
            cron: text("cron"),
            zone: text("zone"),
        };
        match self.schedules.create(&self.key, request).await {
            Ok(job) => ToolResult::ok(format!("Scheduled {}", self.schedules.describe(&job))),
            Err(Refusal::Store(err)) => {
                tracing::error!(key = %self.key, error = %err, "saving a schedule failed");
                ToolResult::err(Refusal::Store(err).to_string())
            }
            Err(refusal) => ToolResult::err(refusal.to_string()),
        }
    }

    async fn list(&self) -> ToolResult {
        match self.schedules.list(&self.key).await {
            Ok(jobs) if jobs.is_empty() => ToolResult::ok("No scheduled tasks."),
            Ok(jobs) => {
                let lines: Vec<String> = jobs.iter().map(|j| self.schedules.describe(j)).collect();
                ToolResult::ok(lines.join("\n"))
            }
            Err(err) => {
                tracing::error!(key = %self.key, error = %err, "listing schedules failed");
                ToolResult::err("the scheduled tasks could not be read; try again")
            }
        }
    }

    async fn cancel(&self, args: &Value) -> ToolResult {
        let Some(id) = args.get("id").and_then(Value::as_i64) else {
            return ToolResult::err("cancel needs `id`, a task number from action=list");
        };
        match self.schedules.cancel(&self.key, id).await {
            Ok(true) => ToolResult::ok(format!("Cancelled #{id}.")),
            Ok(false) => ToolResult::err(format!("no active task #{id} in this conversation")),
            Err(err) => {
                tracing::error!(key = %self.key, error = %err, "cancelling a schedule failed");
                ToolResult::err("the task could not be cancelled; try again")
            }
        }
    }
}

#[async_trait]
impl Tool for ScheduleTool {
    fn name(&self) -> &str {
        SCHEDULE_TOOL
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters_schema(&self) -> Value {
        Value::clone(&self.shared_schema())
    }

    /// One value for the process: every turn's request shares it.
    fn shared_schema(&self) -> Arc<Value> {
        static SCHEMA: LazyLock<Arc<Value>> = LazyLock::new(|| {
            Arc::new(json!({
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["create", "list", "cancel"]},
                    "prompt": {"type": "string", "description": "create: what to do when it fires"},
                    "at": {"type": "string", "description": "create, one-shot: RFC 3339 time with offset"},
                    "cron": {"type": "string", "description": "create, recurring: 5-field cron pattern"},
                    "zone": {"type": "string", "description": "create: IANA zone of `cron`"},
                    "id": {"type": "integer", "description": "cancel: the task number"}
                },
                "required": ["action"],
                "additionalProperties": false
            }))
        });
        Arc::clone(&SCHEMA)
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn execute(&self, args: Value) -> ToolResult {
        match args.get("action").and_then(Value::as_str) {
            Some("create") => self.create(&args).await,
            Some("list") => self.list().await,
            Some("cancel") => self.cancel(&args).await,
            _ => ToolResult::err("`action` must be create, list or cancel"),
        }
    }
}
