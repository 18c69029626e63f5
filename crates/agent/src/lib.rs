//! The agent loop, usable on its own with no platform in sight: send history + tool specs to
//! a provider, stream the answer out as `AgentEvent`s, run requested tools, feed results
//! back, repeat until the model answers without tool calls (or a cap is hit).

mod call;
pub mod delegate;
mod exec;
mod guard;
mod offload;
mod parse;
pub mod plan;
pub mod provider;
mod run;
pub mod schema;
mod tool;
pub mod workspace;

use std::sync::Arc;
use std::time::Duration;

pub use delegate::{
    Child, ChildAgent, ChildState, Children, DELEGATE_TOOL, DelegateTool, Delegation,
    DelegationLimits, Progress, Spawner,
};
pub use guard::DraftGuard;
pub use offload::{DEFAULT_OFFLOAD_BYTES, OUTPUT_DIR, Offload};
pub use parse::{MALFORMED_CALL, Parsed, parse_tool_calls};
pub use run::{Resolution, Suspension};
pub use switchboard_gate::{Decider, Decision, Matched, RuleList, Verdict};
pub use switchboard_scrub as scrub;
pub use tool::{BeforeChange, ContextProvider, Gate, Tool, ToolResult, ToolScope};

use crate::provider::{ChatMessage, ProviderError, Usage};
use switchboard_scrub::Scrubber;

/// Images from tools kept in a turn's requests (for a model that reads them): older ones
/// are dropped, their results' text stays.
pub const MAX_TOOL_IMAGES: usize = 4;

/// The same failing call this many times ends the turn instead of looping.
pub(crate) const MAX_IDENTICAL_FAILURES: usize = 3;

/// What the loop reports while it runs; the draft renderer turns these into edits.
#[derive(Clone, Debug, PartialEq)]
pub enum AgentEvent {
    /// Answer text as it streams.
    TextChunk(String),
    /// A `todo` call (below) proposes this checklist; it is the plan once that call completes
    /// successfully. Sent just before the call's `ToolStarted`, from its scrubbed arguments.
    PlanProposed {
        /// The call's id.
        id: String,
        /// The proposed checklist.
        plan: plan::Plan,
    },
    /// A tool call began.
    ToolStarted {
        /// The call's id.
        id: String,
        /// Tool name.
        name: String,
        /// Short human summary of the arguments (scrubbed).
        summary: String,
        /// The arguments (scrubbed).
        args: serde_json::Value,
        /// The gate's decision that let it run (or refused it), with who made it.
        decision: Decision,
    },
    /// A tool call ended.
    ToolCompleted {
        /// The call's id.
        id: String,
        /// Tool name.
        name: String,
        /// Whether it succeeded.
        success: bool,
        /// How long it ran.
        duration: Duration,
        /// Its error, if any.
        error: Option<String>,
        /// The start of its output (scrubbed).
        output: String,
    },
    /// A call needs a person's decision: the turn suspends after this event.
    ApprovalRequested {
        /// The call's id.
        id: String,
        /// Tool name.
        name: String,
        /// The gate's `Ask` decision (rule and reason the approver sees).
        decision: Decision,
    },
    /// A suspended call was decided; the resumed turn continues after this event (with the
    /// call's `ToolStarted`/`ToolCompleted` when it was approved).
    ApprovalResolved {
        /// The call's id.
        id: String,
        /// Tool name.
        name: String,
        /// The arguments (scrubbed).
        args: serde_json::Value,
        /// Approved, denied or expired.
        resolution: Resolution,
        /// The final decision: the ask, decided by the person who answered or the system.
        decision: Decision,
    },
    /// Tokens one LLM round-trip used (the provider's figures; estimated at about four
    /// characters a token when it reported none), for budgets and metrics.
    Usage(Usage),
    /// Progress lines should be removed before the final answer.
    ClearProgress,
    /// The turn paused (see [`AgentError::paused`]): the final answer gets a Continue button
    /// where the channel has buttons. Sent by the conversation layer before its `Final`.
    OfferContinue,
    /// The complete final answer.
    Final(String),
    /// A sub-task of a `delegate` call changed state (the draft shows a line per sub-task).
    SubTask {
        /// The `delegate` call's id.
        call: String,
        /// The sub-task's index in the call (from 0).
        index: usize,
        /// Its task's first line.
        task: String,
        /// Where it stands now.
        state: Progress,
    },
    /// Something a child loop of a `delegate` call reported (its usage, tool calls and
    /// approvals; never its text): counted, audited and measured as the turn's own.
    FromChild {
        /// The `delegate` call's id.
        call: String,
        /// The sub-task's index in the call (from 0).
        index: usize,
        /// What the child reported.
        event: Box<AgentEvent>,
    },
}

impl AgentEvent {
    /// The event as its own loop reported it, however many children deep, with the chain of
    /// calls that led to it (`"<delegate call>/<sub-task from 1>/"` per level; empty for
    /// the turn's own events), so a child's call ids stay unique within the turn.
    pub fn innermost(&self) -> (String, &AgentEvent) {
        let mut chain = String::new();
        let mut event = self;
        while let Self::FromChild {
            call,
            index,
            event: inner,
        } = event
        {
            chain.push_str(&format!("{call}/{}/", index + 1));
            event = inner;
        }
        (chain, event)
    }
}

/// A finished turn.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AgentRun {
    /// The final answer text.
    pub answer: String,
    /// Tool calls executed.
    pub tool_calls: usize,
    /// LLM round-trips made.
    pub iterations: usize,
    /// Messages this turn added (assistant messages, tool results), to be stored.
    pub messages: Vec<ChatMessage>,
    /// Tokens used across all round-trips.
    pub usage: Usage,
}

/// Why a turn ended without a final answer. Each carries the messages added so far, so the
/// history keeps the tool calls that did run.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The LLM call failed.
    #[error("{error}")]
    Llm {
        /// What failed.
        error: ProviderError,
        /// Messages added before the failure.
        partial: Vec<ChatMessage>,
    },
    /// `max_iterations` round-trips without a final answer.
    #[error("stopped after {iterations} model calls without a final answer")]
    MaxIterations {
        /// Round-trips made.
        iterations: usize,
        /// Messages added.
        partial: Vec<ChatMessage>,
    },
    /// The same call kept failing.
    #[error("tool {tool} failed {MAX_IDENTICAL_FAILURES} times with the same arguments")]
    Tool {
        /// The tool.
        tool: String,
        /// Messages added.
        partial: Vec<ChatMessage>,
    },
    /// The turn was cancelled (`/stop`, shutdown).
    #[error("cancelled")]
    Cancelled {
        /// Text streamed before the cancel.
        text: String,
        /// Messages added.
        partial: Vec<ChatMessage>,
    },
    /// The turn was stopped from outside for a reason the user reads (a budget reached).
    #[error("{reason}")]
    Stopped {
        /// The one line the user sees.
        reason: String,
        /// Messages added.
        partial: Vec<ChatMessage>,
    },
    /// A call needs a person's approval; everything needed to resume is inside.
    #[error("waiting for approval of {}", .0.pending.name)]
    Suspended(Box<Suspension>),
}

impl AgentError {
    /// For a turn the loop guard stopped (the step cap, or one call failing the same way
    /// again and again): the short summary the user sees, saying what was done and how to
    /// go on. `None` for every other ending.
    pub fn paused(&self) -> Option<String> {
        let why = match self {
            Self::MaxIterations { iterations, .. } => {
                format!("I paused after {iterations} steps without finishing.")
            }
            Self::Tool { tool, .. } => {
                format!("I paused because `{tool}` kept failing the same way.")
            }
            _ => return None,
        };
        let mut runs: Vec<(&str, usize)> = Vec::new();
        for call in self.partial().iter().flat_map(|m| &m.tool_calls) {
            match runs.iter_mut().find(|(name, _)| *name == call.name) {
                Some((_, n)) => *n += 1,
                None => runs.push((&call.name, 1)),
            }
        }
        let done = if runs.is_empty() {
            String::new()
        } else {
            let list: Vec<String> = runs.iter().map(|(t, n)| format!("`{t}` ×{n}")).collect();
            format!(" Done so far: {}.", list.join(", "))
        };
        Some(format!(
            "⏸ {why}{done} Press ▶ Continue (or say \"continue\") and I'll carry on."
        ))
    }

    /// Messages the turn added before it ended.
    pub fn partial(&self) -> &[ChatMessage] {
        match self {
            Self::Llm { partial, .. }
            | Self::MaxIterations { partial, .. }
            | Self::Tool { partial, .. }
            | Self::Cancelled { partial, .. }
            | Self::Stopped { partial, .. } => partial,
            Self::Suspended(s) => &s.turn,
        }
    }
}

/// Builds an [`AgentLoop`].
#[derive(Default)]
pub struct AgentLoopBuilder {
    tools: Vec<Arc<dyn Tool>>,
    context: Vec<Arc<dyn ContextProvider>>,
    max_iterations: Option<usize>,
    scrubber: Option<Arc<Scrubber>>,
    prompt_guided: bool,
    gate: Option<Arc<dyn Gate>>,
    offload: Option<Offload>,
    before_change: Option<Arc<dyn BeforeChange>>,
    scope: Option<Arc<dyn ToolScope>>,
    delegation: Option<Delegation>,
    vision: bool,
}

impl AgentLoopBuilder {
    /// Add a tool.
    pub fn tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// Add several tools.
    pub fn tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Add a context provider (called once per turn, in registration order).
    pub fn context(mut self, provider: Arc<dyn ContextProvider>) -> Self {
        self.context.push(provider);
        self
    }

    /// LLM round-trips per turn (default 10).
    pub fn max_iterations(mut self, n: usize) -> Self {
        self.max_iterations = Some(n.max(1));
        self
    }

    /// Scrub tool output with this scrubber (default: generic patterns only).
    pub fn scrubber(mut self, scrubber: Arc<Scrubber>) -> Self {
        self.scrubber = Some(scrubber);
        self
    }

    /// Describe tools in the system prompt instead of sending them natively (for models
    /// without tool calling); calls are then parsed from the text.
    pub fn native_tools(mut self, native: bool) -> Self {
        self.prompt_guided = !native;
        self
    }

    /// The model reads images: those a tool returns (a browser screenshot) go with its
    /// result, the newest [`MAX_TOOL_IMAGES`] of a turn at most (default: dropped, the
    /// result's text names the saved file).
    pub fn vision(mut self, vision: bool) -> Self {
        self.vision = vision;
        self
    }

    /// Ask `gate` before every tool call (default: every call runs).
    pub fn gate(mut self, gate: Arc<dyn Gate>) -> Self {
        self.gate = Some(gate);
        self
    }

    /// Offload tool outputs over its threshold to files (default: outputs are kept whole).
    pub fn offload(mut self, offload: Offload) -> Self {
        self.offload = Some(offload);
        self
    }

    /// Call `hook` before every call that may change the workspace (workspace checkpoints
    /// plug in here; default: none).
    pub fn before_change(mut self, hook: Arc<dyn BeforeChange>) -> Self {
        self.before_change = Some(hook);
        self
    }

    /// Narrow which tools a turn may call (skills' `allowed-tools` plug in here; default:
    /// every tool).
    pub fn scope(mut self, scope: Arc<dyn ToolScope>) -> Self {
        self.scope = Some(scope);
        self
    }

    /// Offer the `delegate` tool: sub-tasks run as child loops `delegation` builds (default:
    /// no delegation).
    pub fn delegation(mut self, delegation: Delegation) -> Self {
        self.delegation = Some(delegation);
        self
    }

    /// Finish.
    pub fn build(mut self) -> AgentLoop {
        if self.delegation.is_some() && !self.tools.iter().any(|t| t.name() == DELEGATE_TOOL) {
            self.tools.push(Arc::new(DelegateTool));
        }
        AgentLoop {
            tools: self.tools,
            context: self.context,
            max_iterations: self.max_iterations.unwrap_or(10),
            scrubber: self.scrubber.unwrap_or_default(),
            prompt_guided: self.prompt_guided,
            gate: self.gate,
            offload: self.offload,
            before_change: self.before_change,
            scope: self.scope,
            delegation: self.delegation,
            vision: self.vision,
        }
    }
}

/// The ReAct loop.
pub struct AgentLoop {
    tools: Vec<Arc<dyn Tool>>,
    context: Vec<Arc<dyn ContextProvider>>,
    max_iterations: usize,
    scrubber: Arc<Scrubber>,
    prompt_guided: bool,
    gate: Option<Arc<dyn Gate>>,
    offload: Option<Offload>,
    before_change: Option<Arc<dyn BeforeChange>>,
    /// What narrows a turn's tools (the profile's skills, whose `allowed-tools` narrow a turn
    /// that loaded one).
    scope: Option<Arc<dyn ToolScope>>,
    /// Who builds children for `delegate`, within which limits (`None`: no delegation).
    delegation: Option<Delegation>,
    /// Tools' images go to the model with their results.
    vision: bool,
}

impl AgentLoop {
    /// Start building a loop.
    pub fn builder() -> AgentLoopBuilder {
        AgentLoopBuilder::default()
    }
}
