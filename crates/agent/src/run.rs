//! The loop itself: round-trips until the model answers without tool calls, a cap is hit,
//! the turn is cancelled, or a call needs approval — then the turn is suspended as plain
//! data (`Suspension`) that `resume` continues from, after any restart.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::delegate::Children;
use super::exec::Batch;
use super::{
    AgentError, AgentEvent, AgentLoop, AgentRun, MAX_IDENTICAL_FAILURES, MAX_TOOL_IMAGES, Tool,
    ToolResult,
};
use crate::provider::{ChatMessage, ChatRequest, Provider, Role, StopReason, ToolCall, ToolSpec};
use crate::{Decider, Decision, Verdict};

/// A turn waiting for a person: everything needed to continue it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Suspension {
    /// The whole context so far (system, history, user message, this turn's messages).
    pub messages: Vec<ChatMessage>,
    /// Messages this turn added so far.
    pub turn: Vec<ChatMessage>,
    /// The call waiting for a decision.
    pub pending: ToolCall,
    /// The gate's `Ask` decision about the pending call (rule and reason shown to approvers).
    /// Approvals stored before decisions were typed carry only a `reason` string; they are
    /// read as the policy's `Ask` so a pending approval survives the upgrade.
    #[serde(alias = "reason", deserialize_with = "stored_decision")]
    pub decision: Decision,
    /// Calls of the same response after the pending one, not yet considered.
    pub remaining: Vec<ToolCall>,
    /// Round-trips made so far.
    pub iterations: usize,
    /// Calls run so far.
    pub tool_calls: usize,
    /// When `pending` is a `delegate` call: its sub-tasks, one or more of them waiting for
    /// an approval (the `decision` is then the gate's about the `delegate` call itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delegation: Option<Children>,
}

/// A suspension's decision as stored: typed, or the bare reason of older rows.
fn stored_decision<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Decision, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Stored {
        Typed(Decision),
        Reason(String),
    }
    Ok(match Stored::deserialize(d)? {
        Stored::Typed(decision) => decision,
        Stored::Reason(reason) => Decision::asked(reason),
    })
}

/// How a person (or the clock) decided a suspended call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Run it.
    Approved {
        /// Who approved.
        by: String,
    },
    /// Do not run it.
    Denied {
        /// Who denied.
        by: String,
    },
    /// Nobody answered in time.
    Expired,
}

/// Loop state carried between round-trips.
struct LoopState {
    messages: Vec<ChatMessage>,
    run: AgentRun,
    failures: HashMap<(String, String), usize>,
}

impl Resolution {
    /// The decision this resolution makes of the gate's `asked` one: who decided, and
    /// whether the call runs.
    pub fn decide(&self, asked: Decision) -> Decision {
        match self {
            Self::Approved { by } => asked.decided(Verdict::Allow, Decider::User(by.clone())),
            Self::Denied { by } => asked.decided(Verdict::Deny, Decider::User(by.clone())),
            Self::Expired => asked.decided(Verdict::Deny, Decider::System),
        }
    }
}

impl AgentLoop {
    /// Run one turn over `messages` (system prompt and history first, the new user message
    /// last), reporting progress through `on_event`.
    pub async fn run(
        &self,
        provider: &dyn Provider,
        messages: Vec<ChatMessage>,
        on_event: impl FnMut(AgentEvent),
    ) -> Result<AgentRun, AgentError> {
        self.run_until(provider, messages, &CancellationToken::new(), on_event)
            .await
    }

    /// [`AgentLoop::run`], stopping early when `cancel` fires.
    pub async fn run_until(
        &self,
        provider: &dyn Provider,
        mut messages: Vec<ChatMessage>,
        cancel: &CancellationToken,
        on_event: impl FnMut(AgentEvent),
    ) -> Result<AgentRun, AgentError> {
        self.inject_context(&mut messages).await;
        if self.prompt_guided && !self.tools.is_empty() {
            describe_tools(&mut messages, &self.specs());
        }
        let state = LoopState {
            messages,
            run: AgentRun::default(),
            failures: HashMap::new(),
        };
        self.drive(provider, state, cancel, on_event).await
    }

    /// Continue a suspended turn once its pending call is decided.
    pub async fn resume(
        &self,
        provider: &dyn Provider,
        suspension: Suspension,
        resolution: Resolution,
        cancel: &CancellationToken,
        on_event: impl FnMut(AgentEvent),
    ) -> Result<AgentRun, AgentError> {
        self.resume_at(provider, suspension, &[], resolution, cancel, on_event)
            .await
    }

    /// [`AgentLoop::resume`] for the call waiting at `path`: empty for the turn's own
    /// pending call, else the sub-task indexes down to the child whose call was decided
    /// (see [`Children::waiting`]). While another sub-task still waits, the turn stays
    /// suspended (`AgentError::Suspended` with the children's new state).
    pub async fn resume_at(
        &self,
        provider: &dyn Provider,
        suspension: Suspension,
        path: &[usize],
        resolution: Resolution,
        cancel: &CancellationToken,
        mut on_event: impl FnMut(AgentEvent),
    ) -> Result<AgentRun, AgentError> {
        let mut s = suspension;
        let delegated = if s.delegation.is_some() && !path.is_empty() {
            // The `delegate` call goes on: one sub-task resumes, and while another still
            // waits the turn stays suspended.
            let started = std::time::Instant::now();
            let resumed = tokio::select! {
                r = self.resume_child(&mut s, path, resolution.clone(), &mut on_event) => Some(r),
                () = cancel.cancelled() => None,
            };
            let Some(result) = resumed else {
                return Err(cancelled_resume(s));
            };
            let result = result?;
            self.started(&s.pending, s.decision.clone(), &mut on_event);
            Some(self.completed(&s.pending, (result, started.elapsed()), &mut on_event))
        } else {
            None
        };
        let mut state = LoopState {
            messages: s.messages,
            run: AgentRun {
                messages: s.turn,
                iterations: s.iterations,
                tool_calls: s.tool_calls,
                ..AgentRun::default()
            },
            failures: HashMap::new(),
        };
        if let Some(gate) = &self.gate {
            let approved = matches!(resolution, Resolution::Approved { .. }) && delegated.is_none();
            gate.resumed(&state.run.messages, approved.then_some(&s.pending));
        }
        let result = match delegated {
            Some(result) => result,
            None => {
                let asked = s.decision.clone();
                self.decided(&s.pending, asked, resolution, &mut on_event)
                    .await
            }
        };
        record(&mut state, &s.pending, result, self.vision);
        if !s.remaining.is_empty() {
            let batch = tokio::select! {
                b = self.execute_batch(&s.remaining, &state.run.messages, &mut on_event) => b,
                () = cancel.cancelled() => return Err(cancelled(state, &s.remaining)),
            };
            if let Some(suspended) = self.absorb(&mut state, &s.remaining, batch)? {
                return Err(suspended);
            }
        }
        self.drive(provider, state, cancel, on_event).await
    }

    /// The pending call's result once a person (or the clock) decided it.
    async fn decided(
        &self,
        pending: &ToolCall,
        asked: Decision,
        resolution: Resolution,
        on_event: &mut impl FnMut(AgentEvent),
    ) -> ToolResult {
        let decision = resolution.decide(asked);
        self.resolved(pending, &resolution, &decision, on_event);
        match &resolution {
            Resolution::Approved { .. } => self.run_unchecked(pending, decision, on_event).await,
            Resolution::Denied { by } => ToolResult::err(format!(
                "the user ({by}) denied this action; do not retry it"
            )),
            Resolution::Expired => ToolResult::err(
                "not approved: nobody answered the approval request in time (it was not denied); ask the user before trying again",
            ),
        }
    }

    async fn drive(
        &self,
        provider: &dyn Provider,
        mut state: LoopState,
        cancel: &CancellationToken,
        mut on_event: impl FnMut(AgentEvent),
    ) -> Result<AgentRun, AgentError> {
        let tools: std::sync::Arc<[ToolSpec]> = if self.prompt_guided {
            std::sync::Arc::default()
        } else {
            self.specs().into()
        };
        while state.run.iterations < self.max_iterations {
            state.run.iterations += 1;
            let request = ChatRequest {
                messages: state.messages.clone(),
                tools: std::sync::Arc::clone(&tools),
            };
            let response = match self.call(provider, &request, cancel, &mut on_event).await {
                Ok(r) => r,
                Err(Err(error)) => {
                    return Err(AgentError::Llm {
                        error,
                        partial: state.run.messages,
                    });
                }
                Err(Ok(text)) => {
                    return Err(AgentError::Cancelled {
                        text,
                        partial: state.run.messages,
                    });
                }
            };
            let used = response.used(&request);
            on_event(AgentEvent::Usage(used));
            state.run.usage.input_tokens += used.input_tokens;
            state.run.usage.output_tokens += used.output_tokens;
            if response.calls.is_empty() || response.stop == StopReason::MaxTokens {
                return Ok(answered(state, response, &mut on_event));
            }
            let mut assistant = ChatMessage::new(Role::Assistant, response.text);
            assistant.tool_calls = response.calls.clone();
            state.messages.push(assistant.clone());
            state.run.messages.push(assistant);
            if cancel.is_cancelled() {
                // Stopped while the response streamed in (a budget it used up): none of
                // its calls runs.
                return Err(cancelled(state, &response.calls));
            }
            let batch = tokio::select! {
                b = self.execute_batch(&response.calls, &state.run.messages, &mut on_event) => b,
                () = cancel.cancelled() => return Err(cancelled(state, &response.calls)),
            };
            if let Some(suspended) = self.absorb(&mut state, &response.calls, batch)? {
                return Err(suspended);
            }
        }
        Err(AgentError::MaxIterations {
            iterations: state.run.iterations,
            partial: state.run.messages,
        })
    }
}

/// The model answered without (runnable) calls: the turn's result.
fn answered(
    mut state: LoopState,
    response: super::call::Response,
    on_event: &mut impl FnMut(AgentEvent),
) -> AgentRun {
    let mut answer = response.text;
    if response.stop == StopReason::MaxTokens {
        // A call cut off by the token limit has incomplete arguments: never run it.
        answer.push_str("\n\n_(answer cut off at the token limit)_");
    }
    state
        .run
        .messages
        .push(ChatMessage::new(Role::Assistant, answer.clone()));
    on_event(AgentEvent::ClearProgress);
    on_event(AgentEvent::Final(answer.clone()));
    state.run.answer = answer;
    state.run
}

impl AgentLoop {
    /// Add a batch's results to the state; a suspension or a looping call ends the turn.
    fn absorb(
        &self,
        state: &mut LoopState,
        calls: &[ToolCall],
        batch: Batch,
    ) -> Result<Option<AgentError>, AgentError> {
        let mut looping = None;
        for (call, result) in calls.iter().zip(batch.results) {
            if !result.success {
                let n = state
                    .failures
                    .entry((call.name.clone(), call.args.to_string()))
                    .or_default();
                *n += 1;
                if *n >= MAX_IDENTICAL_FAILURES {
                    looping = Some(call.name.clone());
                }
            }
            record(state, call, result, self.vision);
        }
        if let Some((index, decision)) = batch.suspended {
            return Ok(Some(AgentError::Suspended(Box::new(Suspension {
                messages: state.messages.clone(),
                turn: state.run.messages.clone(),
                pending: calls[index].clone(),
                decision,
                remaining: calls[index + 1..].to_vec(),
                iterations: state.run.iterations,
                tool_calls: state.run.tool_calls,
                delegation: batch.children,
            }))));
        }
        match looping {
            Some(tool) => Err(AgentError::Tool {
                tool,
                partial: std::mem::take(&mut state.run.messages),
            }),
            None => Ok(None),
        }
    }

    fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|t| t.spec()).collect()
    }

    pub(super) fn find(&self, name: &str) -> Option<&std::sync::Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name)
    }

    async fn inject_context(&self, messages: &mut Vec<ChatMessage>) {
        let at = messages
            .iter()
            .take_while(|m| m.role == Role::System)
            .count();
        let mut injected = Vec::new();
        for provider in &self.context {
            match provider.context(messages).await {
                Ok(text) if !text.trim().is_empty() => {
                    injected.push(ChatMessage::new(Role::System, text))
                }
                Ok(_) => {}
                Err(err) => tracing::warn!(error = %err, "context provider failed; skipped"),
            }
        }
        messages.splice(at..at, injected);
    }
}

/// Add a call's result to the context and the turn; its images go only to the context (a
/// model that reads them sees them, the stored turn never holds them).
fn record(state: &mut LoopState, call: &ToolCall, result: ToolResult, vision: bool) {
    state.run.tool_calls += 1;
    let message = ChatMessage::tool_result(&call.id, result.to_model_text());
    state.run.messages.push(message.clone());
    let with_images = vision && !result.images.is_empty();
    state.messages.push(ChatMessage {
        images: if with_images {
            result.images
        } else {
            Vec::new()
        },
        ..message
    });
    if with_images {
        keep_newest_images(&mut state.messages);
    }
}

/// Drop all but the newest [`MAX_TOOL_IMAGES`] images tools returned in `messages`.
fn keep_newest_images(messages: &mut [ChatMessage]) {
    let mut left = MAX_TOOL_IMAGES;
    for m in messages.iter_mut().rev().filter(|m| m.role == Role::Tool) {
        let keep = m.images.len().min(left);
        m.images.drain(..m.images.len() - keep);
        left -= keep;
    }
}

/// The turn was cancelled while tools ran: every call still gets a result, or the stored
/// history would be unusable for the next request.
fn cancelled(mut state: LoopState, calls: &[ToolCall]) -> AgentError {
    let last_call = state
        .run
        .messages
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .unwrap_or(0);
    let answered: Vec<String> = state.run.messages[last_call..]
        .iter()
        .filter_map(|m| m.tool_call_id.clone())
        .collect();
    for call in calls.iter().filter(|c| !answered.contains(&c.id)) {
        state.run.messages.push(ChatMessage::tool_result(
            &call.id,
            "error: cancelled by the user",
        ));
    }
    AgentError::Cancelled {
        text: String::new(),
        partial: state.run.messages,
    }
}
/// A delegated turn cancelled while a sub-task resumed: the `delegate` call and every call
/// after it get a result, as [`cancelled`] gives them.
fn cancelled_resume(s: Suspension) -> AgentError {
    let mut partial = s.turn;
    for call in std::iter::once(&s.pending).chain(&s.remaining) {
        partial.push(ChatMessage::tool_result(
            &call.id,
            "error: cancelled by the user",
        ));
    }
    AgentError::Cancelled {
        text: String::new(),
        partial,
    }
}

/// Append the tool list and the call format to the first system message (prompt-guided mode).
fn describe_tools(messages: &mut Vec<ChatMessage>, specs: &[crate::provider::ToolSpec]) {
    let mut text = String::from(
        "\n\nYou can use tools. To call one, write exactly:\n<tool_call>{\"name\": \"TOOL\", \"arguments\": {…}}</tool_call>\nand stop; the result comes back in the next message. Tools:\n",
    );
    for spec in specs {
        text.push_str(&format!(
            "- {}: {} Arguments schema: {}\n",
            spec.name, spec.description, spec.parameters
        ));
    }
    match messages.iter_mut().find(|m| m.role == Role::System) {
        Some(system) => system.content.push_str(&text),
        None => messages.insert(
            0,
            ChatMessage::new(Role::System, text.trim_start().to_owned()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_suspension_stored_before_decisions_were_typed_still_resumes_as_asked() {
        let old = r#"{"messages":[],"turn":[],"pending":{"id":"c1","name":"shell","args":{"command":"rm x"}},
            "reason":"mode guarded: `rm x` is not read-only","remaining":[],"iterations":1,"tool_calls":0}"#;
        let s: Suspension = serde_json::from_str(old).unwrap();
        assert_eq!(s.decision.verdict, Verdict::Ask);
        assert_eq!(s.decision.decided_by, Decider::Policy);
        assert_eq!(s.decision.reason, "mode guarded: `rm x` is not read-only");
        let again: Suspension = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(again, s);
    }
}
