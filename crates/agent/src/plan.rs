//! The live plan: a `todo` tool the model calls with its whole checklist (pending, in
//! progress, done) each time it changes. The tool only checks the list; the loop announces
//! each list as a typed [`crate::AgentEvent::PlanProposed`] before the call runs, and the
//! draft renderer shows the latest accepted list at the top of the streaming answer, and the history keeps
//! every call, so the plan stays with the conversation. The model learns about it from the
//! tool description alone — the system prompt does not grow.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::{Tool, ToolResult};

/// The tool's name (the loop recognises its calls by it and announces their plans).
pub const TODO_TOOL: &str = "todo";
/// Most items a plan may have.
const MAX_ITEMS: usize = 12;
/// Longest item text.
const MAX_ITEM_CHARS: usize = 120;

/// Where one step of the plan stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Not started.
    Pending,
    /// Being worked on now.
    InProgress,
    /// Finished.
    Done,
}

/// One step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanItem {
    /// What the step is.
    pub text: String,
    /// Where it stands.
    pub status: Status,
}

/// A checklist as the model last sent it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// The steps, in order.
    pub items: Vec<PlanItem>,
}

impl Plan {
    /// The plan in a `todo` call's arguments, or what is wrong with them.
    pub fn from_args(args: &Value) -> Result<Self, String> {
        let plan: Self = serde_json::from_value(args.clone()).map_err(|e| e.to_string())?;
        if plan.items.len() > MAX_ITEMS {
            return Err(format!("at most {MAX_ITEMS} items; merge some steps"));
        }
        if let Some(item) = plan.items.iter().find(|i| i.text.trim().is_empty()) {
            return Err(format!("an item has no text: {item:?}"));
        }
        Ok(plan)
    }

    /// How many steps are done.
    pub fn done(&self) -> usize {
        self.items
            .iter()
            .filter(|i| i.status == Status::Done)
            .count()
    }

    /// The checklist as markdown lines for the top of a draft, at most `max_chars` long
    /// (items that do not fit are counted instead of shown).
    pub fn render(&self, max_chars: usize) -> String {
        let mut out = format!("📋 Plan ({}/{} done)", self.done(), self.items.len());
        for (n, item) in self.items.iter().enumerate() {
            let mark = match item.status {
                Status::Done => "✅",
                Status::InProgress => "🔄",
                Status::Pending => "⬜",
            };
            let text: String = item.text.chars().take(MAX_ITEM_CHARS).collect();
            let line = format!("\n{mark} {}", text.replace('\n', " "));
            let more = format!("\n… {} more", self.items.len() - n);
            if out.chars().count() + line.chars().count() + more.chars().count() > max_chars {
                out.push_str(&more);
                break;
            }
            out.push_str(&line);
        }
        out
    }
}

/// The `todo` tool.
pub struct TodoTool;

#[async_trait]
impl Tool for TodoTool {
    fn name(&self) -> &str {
        TODO_TOOL
    }

    fn description(&self) -> &str {
        "Show the user your plan for a task of several steps as a live checklist at the top of your reply. Send the whole list every time it changes (at most 12 short items), each with a status: pending, in_progress or done. Mark a step in_progress when you start it and done when it is finished. Skip it for simple one-step requests."
    }

    fn parameters_schema(&self) -> Value {
        json!({"type": "object", "properties": {"items": {"type": "array", "maxItems": MAX_ITEMS, "items": {"type": "object", "properties": {"text": {"type": "string", "minLength": 1, "maxLength": MAX_ITEM_CHARS}, "status": {"type": "string", "enum": ["pending", "in_progress", "done"]}}, "required": ["text", "status"], "additionalProperties": false}}}, "required": ["items"], "additionalProperties": false})
    }

    /// It changes nothing outside the conversation's own display.
    fn read_only(&self) -> bool {
        true
    }

    async fn execute(&self, args: Value) -> ToolResult {
        match Plan::from_args(&args) {
            Ok(plan) => ToolResult::ok(format!(
                "plan shown to the user ({}/{} done)",
                plan.done(),
                plan.items.len()
            )),
            Err(e) => ToolResult::err(format!("invalid plan: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_plan_is_checked_and_rendered_within_its_limit() {
        let args = json!({"items": [
            {"text": "Read the logs", "status": "done"},
            {"text": "Find the bug", "status": "in_progress"},
            {"text": "Fix it", "status": "pending"},
        ]});
        let ok = TodoTool.execute(args.clone()).await;
        assert_eq!(ok.output, "plan shown to the user (1/3 done)");
        let plan = Plan::from_args(&args).unwrap();
        assert_eq!(
            plan.render(1000),
            "📋 Plan (1/3 done)\n✅ Read the logs\n🔄 Find the bug\n⬜ Fix it"
        );
        let short = plan.render(40);
        assert!(
            short.chars().count() <= 40 && short.contains("more"),
            "{short}"
        );
        let bad = TodoTool
            .execute(json!({"items": [{"text": "x", "status": "maybe"}]}))
            .await;
        assert!(!bad.success && bad.error.unwrap().contains("invalid plan"));
    }
}
