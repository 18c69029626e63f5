//! Running the tool calls of one response: arguments validated against the tool's schema,
//! read-only batches run concurrently (otherwise in order), results scrubbed of credentials
//! before the model, the history or the draft sees them.

use std::time::{Duration, Instant};

use futures::future::join_all;
use serde_json::Value;

use super::{AgentEvent, AgentLoop, Tool, ToolResult};
use crate::provider::ToolCall;

/// Tool output carried in `ToolCompleted` events (the full output goes to the model).
const EVENT_OUTPUT_CHARS: usize = 4000;

impl AgentLoop {
    /// Run `calls`, reporting start and completion of each.
    pub(super) async fn execute_all(
        &self,
        calls: &[ToolCall],
        on_event: &mut impl FnMut(AgentEvent),
    ) -> Vec<ToolResult> {
        for call in calls {
            on_event(AgentEvent::ToolStarted {
                id: call.id.clone(),
                name: call.name.clone(),
                summary: self.scrubber.scrub(&summarize(&call.args)).into_owned(),
                args: scrub_value(&self.scrubber, &call.args),
            });
        }
        let all_read_only = calls
            .iter()
            .all(|c| self.find(&c.name).is_some_and(|t| t.read_only()));
        let results: Vec<(ToolResult, Duration)> = if all_read_only {
            join_all(calls.iter().map(|c| self.execute_one(c))).await
        } else {
            let mut out = Vec::with_capacity(calls.len());
            for call in calls {
                out.push(self.execute_one(call).await);
            }
            out
        };
        calls
            .iter()
            .zip(results)
            .map(|(call, (mut result, duration))| {
                self.scrubber.scrub_string(&mut result.output);
                if let Some(error) = &mut result.error {
                    self.scrubber.scrub_string(error);
                }
                on_event(AgentEvent::ToolCompleted {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    success: result.success,
                    duration,
                    error: result.error.clone(),
                    output: result.output.chars().take(EVENT_OUTPUT_CHARS).collect(),
                });
                result
            })
            .collect()
    }

    async fn execute_one(&self, call: &ToolCall) -> (ToolResult, Duration) {
        let started = Instant::now();
        let result = match self.find(&call.name) {
            None => {
                let known: Vec<&str> = self.tools.iter().map(|t| t.name()).collect();
                ToolResult::err(format!(
                    "unknown tool {:?}; available: {}",
                    call.name,
                    known.join(", ")
                ))
            }
            Some(tool) => match validate(tool.as_ref(), &call.args) {
                Err(problem) => {
                    ToolResult::err(format!("invalid arguments for {}: {problem}", call.name))
                }
                Ok(()) => tool.execute(call.args.clone()).await,
            },
        };
        (result, started.elapsed())
    }
}

/// Check `args` against the tool's JSON Schema; the error names every violation.
fn validate(tool: &dyn Tool, args: &Value) -> Result<(), String> {
    if !args.is_object() {
        return Err("arguments must be a JSON object".into());
    }
    let schema = tool.parameters_schema();
    let validator = jsonschema::validator_for(&schema)
        .map_err(|e| format!("the tool's schema is invalid: {e}"))?;
    let problems: Vec<String> = validator
        .iter_errors(args)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{at}: {e}")
            }
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// `args` with every string scrubbed (for events and the audit log).
fn scrub_value(scrubber: &crate::scrub::Scrubber, args: &Value) -> Value {
    match args {
        Value::String(s) => Value::String(scrubber.scrub(s).into_owned()),
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| scrub_value(scrubber, v)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), scrub_value(scrubber, v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A one-line view of tool arguments for progress lines.
fn summarize(args: &Value) -> String {
    let text = match args.as_object().and_then(|o| o.values().next()) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() > 60 {
        format!("{}…", line.chars().take(60).collect::<String>())
    } else {
        line.to_owned()
    }
}
