//! The agent loop, usable on its own with no platform in sight: send history + tool specs to
//! a provider, stream the answer out as `AgentEvent`s, run requested tools, feed results
//! back, repeat until the model answers without tool calls (or a cap is hit).

mod tool;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use tokio_util::sync::CancellationToken;

pub use tool::{ContextProvider, Tool, ToolResult};

use crate::provider::{
    ChatMessage, ChatRequest, Provider, ProviderError, Role, StopReason, StreamEvent, ToolCall,
    Usage,
};

/// The same failing call this many times ends the turn instead of looping.
const MAX_IDENTICAL_FAILURES: usize = 3;

/// What the loop reports while it runs; the draft renderer turns these into edits.
#[derive(Clone, Debug, PartialEq)]
pub enum AgentEvent {
    /// Answer text as it streams.
    TextChunk(String),
    /// A tool call began.
    ToolStarted {
        /// Tool name.
        name: String,
        /// Short human summary of the arguments.
        summary: String,
    },
    /// A tool call ended.
    ToolCompleted {
        /// Tool name.
        name: String,
        /// Whether it succeeded.
        success: bool,
        /// How long it ran.
        duration: Duration,
        /// Its error, if any.
        error: Option<String>,
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

    /// Finish.
    pub fn build(self) -> AgentLoop {
        AgentLoop {
            tools: self.tools,
            context: self.context,
            max_iterations: self.max_iterations.unwrap_or(10),
        }
    }
}

/// The ReAct loop.
pub struct AgentLoop {
    tools: Vec<Arc<dyn Tool>>,
    context: Vec<Arc<dyn ContextProvider>>,
    max_iterations: usize,
}

/// What one LLM round-trip produced.
struct Response {
    text: String,
    calls: Vec<ToolCall>,
    stop: StopReason,
    usage: Usage,
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
        let specs = self.tools.iter().map(|t| t.spec()).collect::<Vec<_>>();
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
                    return Err(AgentError::Cancelled { text: String::new(), partial: run.messages });
                }
            };
            for (call, result) in response.calls.iter().zip(results) {
                run.tool_calls += 1;
                if !result.success {
                    let n = failures
                        .entry((call.name.clone(), call.args.to_string()))
                        .or_default();
                    *n += 1;
                    if *n >= MAX_IDENTICAL_FAILURES {
                        run.messages
                            .push(ChatMessage::tool_result(&call.id, result.to_model_text()));
                        return Err(AgentError::Tool {
                            tool: call.name.clone(),
                            partial: run.messages,
                        });
                    }
                }
                let message = ChatMessage::tool_result(&call.id, result.to_model_text());
                messages.push(message.clone());
                run.messages.push(message);
            }
        }
        Err(AgentError::MaxIterations {
            iterations: run.iterations,
            partial: run.messages,
        })
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

    /// One streamed round-trip. `Err(Ok(text))` means cancelled after streaming `text`.
    async fn call(
        &self,
        provider: &dyn Provider,
        request: &ChatRequest,
        cancel: &CancellationToken,
        on_event: &mut impl FnMut(AgentEvent),
    ) -> Result<Response, Result<String, ProviderError>> {
        let mut stream = tokio::select! {
            s = provider.stream(request) => s.map_err(Err)?,
            () = cancel.cancelled() => return Err(Ok(String::new())),
        };
        let mut response = Response {
            text: String::new(),
            calls: Vec::new(),
            stop: StopReason::EndTurn,
            usage: Usage::default(),
        };
        loop {
            let event = tokio::select! {
                e = stream.next() => e,
                () = cancel.cancelled() => return Err(Ok(response.text)),
            };
            match event {
                Some(Ok(StreamEvent::TextDelta(text))) => {
                    response.text.push_str(&text);
                    on_event(AgentEvent::TextChunk(text));
                }
                Some(Ok(StreamEvent::ToolCall(call))) => response.calls.push(call),
                Some(Ok(StreamEvent::Done { stop_reason, usage })) => {
                    response.stop = stop_reason;
                    response.usage = usage;
                    return Ok(response);
                }
                Some(Err(err)) => return Err(Err(err)),
                None => {
                    return Err(Err(ProviderError::Stream(
                        "the stream ended without a finish".into(),
                    )));
                }
            }
        }
    }

    /// Run calls concurrently when every one is read-only, otherwise in order.
    async fn execute_all(
        &self,
        calls: &[ToolCall],
        on_event: &mut impl FnMut(AgentEvent),
    ) -> Vec<ToolResult> {
        for call in calls {
            on_event(AgentEvent::ToolStarted {
                name: call.name.clone(),
                summary: summarize(&call.args),
            });
        }
        let all_read_only = calls
            .iter()
            .all(|c| self.find(&c.name).is_some_and(|t| t.read_only()));
        let timed = |call: &ToolCall| {
            let tool = self.find(&call.name).cloned();
            let call = call.clone();
            async move {
                let started = Instant::now();
                let result = match tool {
                    Some(tool) if call.args.is_object() => tool.execute(call.args).await,
                    Some(_) => ToolResult::err("arguments must be a JSON object"),
                    None => ToolResult::err(format!("unknown tool {:?}", call.name)),
                };
                (result, started.elapsed())
            }
        };
        let results: Vec<(ToolResult, Duration)> = if all_read_only {
            join_all(calls.iter().map(timed)).await
        } else {
            let mut out = Vec::with_capacity(calls.len());
            for call in calls {
                out.push(timed(call).await);
            }
            out
        };
        calls
            .iter()
            .zip(results)
            .map(|(call, (result, duration))| {
                on_event(AgentEvent::ToolCompleted {
                    name: call.name.clone(),
                    success: result.success,
                    duration,
                    error: result.error.clone(),
                });
                result
            })
            .collect()
    }

    fn find(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name)
    }
}

/// A one-line view of tool arguments for progress lines.
fn summarize(args: &serde_json::Value) -> String {
    let text = match args.as_object().and_then(|o| o.values().next()) {
        Some(serde_json::Value::String(s)) => s.clone(),
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
