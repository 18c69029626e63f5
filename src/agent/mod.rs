//! The agent loop, usable on its own with no platform in sight: send history + tool specs to
//! a provider, stream the answer out as `AgentEvent`s, run requested tools, feed results
//! back, repeat until the model answers without tool calls (or a cap is hit).

mod call;
mod exec;
mod guard;
mod parse;
mod tool;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

pub use guard::DraftGuard;
pub use parse::{MALFORMED_CALL, Parsed, parse_tool_calls};
pub use tool::{ContextProvider, Tool, ToolResult};

use crate::provider::{ChatMessage, ChatRequest, Provider, ProviderError, Role, StopReason, Usage};
use crate::scrub::Scrubber;

/// The same failing call this many times ends the turn instead of looping.
const MAX_IDENTICAL_FAILURES: usize = 3;

/// What the loop reports while it runs; the draft renderer turns these into edits.
#[derive(Clone, Debug, PartialEq)]
pub enum AgentEvent {
    /// Answer text as it streams.
    TextChunk(String),
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
    /// Progress lines should be removed before the final answer.
    ClearProgress,
    /// The complete final answer.
    Final(String),
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
}

impl AgentError {
    /// Messages the turn added before it ended.
    pub fn partial(&self) -> &[ChatMessage] {
        match self {
            Self::Llm { partial, .. }
            | Self::MaxIterations { partial, .. }
            | Self::Tool { partial, .. }
            | Self::Cancelled { partial, .. } => partial,
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

    /// Finish.
    pub fn build(self) -> AgentLoop {
        AgentLoop {
            tools: self.tools,
            context: self.context,
            max_iterations: self.max_iterations.unwrap_or(10),
            scrubber: self.scrubber.unwrap_or_default(),
            prompt_guided: self.prompt_guided,
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
}

impl AgentLoop {
    /// Start building a loop.
    pub fn builder() -> AgentLoopBuilder {
        AgentLoopBuilder::default()
    }

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
        mut on_event: impl FnMut(AgentEvent),
    ) -> Result<AgentRun, AgentError> {
        self.inject_context(&mut messages).await;
        let mut specs = self.tools.iter().map(|t| t.spec()).collect::<Vec<_>>();
        if self.prompt_guided && !specs.is_empty() {
            describe_tools(&mut messages, &specs);
            specs.clear();
        }
        let mut run = AgentRun::default();
        let mut failures: HashMap<(String, String), usize> = HashMap::new();
        while run.iterations < self.max_iterations {
            run.iterations += 1;
            let request = ChatRequest {
                messages: messages.clone(),
                tools: specs.clone(),
            };
            let response = match self.call(provider, &request, cancel, &mut on_event).await {
                Ok(r) => r,
                Err(Err(error)) => {
                    return Err(AgentError::Llm {
                        error,
                        partial: run.messages,
                    });
                }
                Err(Ok(text)) => {
                    return Err(AgentError::Cancelled {
                        text,
                        partial: run.messages,
                    });
                }
            };
            run.usage.input_tokens += response.usage.input_tokens;
            run.usage.output_tokens += response.usage.output_tokens;
            if response.calls.is_empty() || response.stop == StopReason::MaxTokens {
                let mut answer = response.text;
                if response.stop == StopReason::MaxTokens {
                    // A call cut off by the token limit has incomplete arguments: never run it.
                    answer.push_str("\n\n_(answer cut off at the token limit)_");
                }
                run.messages
                    .push(ChatMessage::new(Role::Assistant, answer.clone()));
                on_event(AgentEvent::ClearProgress);
                on_event(AgentEvent::Final(answer.clone()));
                run.answer = answer;
                return Ok(run);
            }
            let mut assistant = ChatMessage::new(Role::Assistant, response.text);
            assistant.tool_calls = response.calls.clone();
            messages.push(assistant.clone());
            run.messages.push(assistant);
            let results = tokio::select! {
                r = self.execute_all(&response.calls, &mut on_event) => r,
                () = cancel.cancelled() => {
                    // Every call gets a result, or the stored history would be unusable.
                    for call in &response.calls {
                        run.messages.push(ChatMessage::tool_result(&call.id, "error: cancelled by the user"));
                    }
                    return Err(AgentError::Cancelled { text: String::new(), partial: run.messages });
                }
            };
            let mut looping = None;
            for (call, result) in response.calls.iter().zip(results) {
                run.tool_calls += 1;
                if !result.success {
                    let n = failures
                        .entry((call.name.clone(), call.args.to_string()))
                        .or_default();
                    *n += 1;
                    if *n >= MAX_IDENTICAL_FAILURES {
                        looping = Some(call.name.clone());
                    }
                }
                let message = ChatMessage::tool_result(&call.id, result.to_model_text());
                messages.push(message.clone());
                run.messages.push(message);
            }
            if let Some(tool) = looping {
                return Err(AgentError::Tool {
                    tool,
                    partial: run.messages,
                });
            }
        }
        Err(AgentError::MaxIterations {
            iterations: run.iterations,
            partial: run.messages,
        })
    }

    fn find(&self, name: &str) -> Option<&Arc<dyn Tool>> {
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
