//! Running the tool calls of one response: each passes the gate first; arguments are
//! validated against the tool's schema; read-only batches run concurrently (otherwise in
//! order); results are scrubbed of credentials before the model, history or draft sees them.
//! A call the gate suspends stops the batch there. Once the turn has loaded a skill that
//! declares `allowed-tools`, a call outside them is refused before the gate sees it.

use std::time::{Duration, Instant};

use futures::future::join_all;
use serde_json::Value;

use super::delegate::Children;
use super::{AgentEvent, AgentLoop, Resolution, Tool, ToolResult};
use crate::plan::{Plan, TODO_TOOL};
use crate::provider::{ChatMessage, ToolCall};
use crate::{Decision, Verdict};

/// Tool output carried in `ToolCompleted` events (the full output goes to the model).
const EVENT_OUTPUT_CHARS: usize = 4000;

/// What a batch produced: results for the calls before any suspension, in order.
pub(super) struct Batch {
    pub results: Vec<ToolResult>,
    /// Index of the call waiting for approval, and the gate's `Ask` decision about it (or,
    /// for a `delegate` call whose sub-task waits, its own decision).
    pub suspended: Option<(usize, Decision)>,
    /// The sub-tasks of a suspended `delegate` call.
    pub children: Option<Children>,
}

impl AgentLoop {
    /// Gate and run `calls`, the turn so far being `turn`.
    pub(super) async fn execute_batch(
        &self,
        calls: &[ToolCall],
        turn: &[ChatMessage],
        on_event: &mut impl FnMut(AgentEvent),
    ) -> Batch {
        let mut decisions = self.gate_all(calls, turn).await;
        // The reason quotes the call; it is shown, audited and stored, so it is scrubbed once
        // here (the resolved decision of a suspended call comes from the stored approval).
        for decision in &mut decisions {
            self.scrubber.scrub_string(&mut decision.reason);
        }
        let concurrent = calls.len() > 1
            && calls
                .iter()
                .all(|c| self.find(&c.name).is_some_and(|t| t.read_only()) && !self.delegates(c))
            && decisions.iter().all(|d| d.verdict == Verdict::Allow);
        if concurrent {
            for (call, decision) in calls.iter().zip(decisions) {
                self.started(call, decision, on_event);
            }
            let results = join_all(calls.iter().map(|c| self.execute_one(c))).await;
            let results = calls
                .iter()
                .zip(results)
                .map(|(c, r)| self.completed(c, r, on_event))
                .collect();
            return Batch {
                results,
                suspended: None,
                children: None,
            };
        }
        self.execute_in_order(calls, decisions, on_event).await
    }

    /// Run `calls` one after another as `decisions` say, stopping at the first that waits
    /// for a person (or whose sub-task does).
    async fn execute_in_order(
        &self,
        calls: &[ToolCall],
        decisions: Vec<Decision>,
        on_event: &mut impl FnMut(AgentEvent),
    ) -> Batch {
        let mut results = Vec::new();
        for (index, (call, decision)) in calls.iter().zip(decisions).enumerate() {
            match decision.verdict {
                Verdict::Ask => {
                    on_event(AgentEvent::ApprovalRequested {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        decision: decision.clone(),
                    });
                    return Batch {
                        results,
                        suspended: Some((index, decision)),
                        children: None,
                    };
                }
                Verdict::Deny => {
                    let refused =
                        ToolResult::err(format!("refused by policy: {}", decision.reason));
                    self.started(call, decision, on_event);
                    results.push(self.completed(call, (refused, Duration::ZERO), on_event));
                }
                Verdict::Allow if self.delegates(call) => {
                    let started = Instant::now();
                    self.started(call, decision.clone(), on_event);
                    match self.delegate(call, on_event).await {
                        Ok(result) => {
                            let took = started.elapsed();
                            results.push(self.completed(call, (result, took), on_event));
                        }
                        Err(children) => {
                            return Batch {
                                results,
                                suspended: Some((index, decision)),
                                children: Some(children),
                            };
                        }
                    }
                }
                Verdict::Allow => results.push(self.run_unchecked(call, decision, on_event).await),
            }
        }
        Batch {
            results,
            suspended: None,
            children: None,
        }
    }

    /// The gate's decision for each call, in order (every call runs without a gate); a call
    /// outside the `allowed-tools` of a skill `turn` loaded is refused without asking.
    async fn gate_all(&self, calls: &[ToolCall], turn: &[ChatMessage]) -> Vec<Decision> {
        let mut decisions = Vec::with_capacity(calls.len());
        for call in calls {
            if let Some(refusal) = self.scope.as_ref().and_then(|s| s.refusal(turn, call)) {
                decisions.push(Decision::by_mode(Verdict::Deny, refusal));
                continue;
            }
            let read_only = self.find(&call.name).is_some_and(|t| t.read_only());
            decisions.push(match &self.gate {
                Some(gate) => gate.check(call, read_only).await,
                None => Decision::ungated(),
            });
        }
        decisions
    }

    /// Run one call that is already allowed, with its events.
    pub(super) async fn run_unchecked(
        &self,
        call: &ToolCall,
        decision: Decision,
        on_event: &mut impl FnMut(AgentEvent),
    ) -> ToolResult {
        self.started(call, decision, on_event);
        let result = self.execute_one(call).await;
        self.completed(call, result, on_event)
    }

    pub(super) fn started(
        &self,
        call: &ToolCall,
        decision: Decision,
        on_event: &mut impl FnMut(AgentEvent),
    ) {
        let args = self.scrubber.scrub_json(&call.args);
        if call.name == TODO_TOOL
            && let Ok(plan) = Plan::from_args(&args)
        {
            on_event(AgentEvent::PlanProposed {
                id: call.id.clone(),
                plan,
            });
        }
        on_event(AgentEvent::ToolStarted {
            id: call.id.clone(),
            name: call.name.clone(),
            summary: self.scrubber.scrub(&summarize(&call.args)).into_owned(),
            args,
            decision,
        });
    }

    /// Report how a suspended call was decided.
    pub(super) fn resolved(
        &self,
        call: &ToolCall,
        resolution: &Resolution,
        decision: &Decision,
        on_event: &mut impl FnMut(AgentEvent),
    ) {
        on_event(AgentEvent::ApprovalResolved {
            id: call.id.clone(),
            name: call.name.clone(),
            args: self.scrubber.scrub_json(&call.args),
            resolution: resolution.clone(),
            decision: decision.clone(),
        });
    }

    pub(super) fn completed(
        &self,
        call: &ToolCall,
        (mut result, duration): (ToolResult, Duration),
        on_event: &mut impl FnMut(AgentEvent),
    ) -> ToolResult {
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
                Ok(()) => {
                    if let Some(hook) = &self.before_change {
                        hook.before(call, tool.read_only()).await;
                    }
                    let result = tool.execute(call.args.clone()).await;
                    self.bound(call, result).await
                }
            },
        };
        (result, started.elapsed())
    }

    /// Offload a large output (scrubbed first: the file is as safe to show as the history).
    pub(super) async fn bound(&self, call: &ToolCall, mut result: ToolResult) -> ToolResult {
        let Some(offload) = self.offload.clone() else {
            return result;
        };
        if result.output.len() <= offload.threshold {
            return result;
        }
        self.scrubber.scrub_string(&mut result.output);
        let output = std::mem::take(&mut result.output);
        let name = call.name.clone();
        let job = tokio::task::spawn_blocking(move || offload.apply(&name, output));
        result.output = job
            .await
            .unwrap_or_else(|e| format!("[large output dropped: saving it failed: {e}]"));
        result
    }
}

/// Check `args` against the tool's JSON Schema; the error names every violation.
fn validate(tool: &dyn Tool, args: &Value) -> Result<(), String> {
    if !args.is_object() {
        return Err("arguments must be a JSON object".into());
    }
    super::schema::check(&tool.parameters_schema(), args)
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
