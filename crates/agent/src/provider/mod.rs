//! LLM providers: one streaming chat call with tool specs in, a stream of text deltas, tool
//! calls and a final `Done` out. Two wire protocols (OpenAI-compatible and Anthropic) behind
//! one trait; retries happen here, and only before the first streamed token.

mod anthropic;
mod config;
mod error;
pub mod fallback;
mod key;
mod limit;
mod openai;
mod retry;
mod sse;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

pub use anthropic::AnthropicProvider;
pub use error::{ConnectKind, ProviderError};
pub use fallback::{Fallback, Link};
pub use key::{key_warning, missing_hosted_key};
pub use limit::{InFlight, Limited};
pub use openai::OpenAiProvider;

pub use config::{ProviderConfig, ProviderKind};

/// Idle connections to the LLM host kept for reuse: enough for a steady load's calls in
/// flight; after a burst the rest are closed as their calls end.
const IDLE_CONNECTIONS: usize = 16;

/// Who wrote a message in a conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions and injected context.
    System,
    /// The person chatting.
    User,
    /// The model.
    Assistant,
    /// A tool's result, answering one of the assistant's tool calls.
    Tool,
}

impl Role {
    /// The lowercase name stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::System => "system",
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::Tool => "tool",
        }
    }

    /// Parse a stored role name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "system" => Self::System,
            "user" => Self::User,
            "assistant" => Self::Assistant,
            "tool" => Self::Tool,
            _ => return None,
        })
    }
}

/// A tool call the model asked for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Provider-assigned id; the result must carry it back.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments as the model wrote them (a JSON object when it is well-formed).
    pub args: serde_json::Value,
}

/// One message of a conversation, in the provider-neutral shape the store keeps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Author.
    pub role: Role,
    /// Text content (for tool messages: the tool's output).
    pub content: String,
    /// Calls requested by an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For tool messages: which call this answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Images sent with a user message to a vision-capable model. Never stored: history
    /// keeps the message's text, which names each file's workspace path.
    #[serde(skip)]
    pub images: Vec<ImagePart>,
}

/// One image for a vision-capable model, base64-encoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImagePart {
    /// `image/jpeg`, `image/png` or `image/webp`.
    pub mime: String,
    /// The image bytes, base64 (standard alphabet, padded).
    pub data: String,
}

impl ChatMessage {
    /// A message with text only.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            images: Vec::new(),
        }
    }

    /// A tool result answering `call_id`.
    pub fn tool_result(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            role: Role::Tool,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.into()),
            images: Vec::new(),
        }
    }
}

/// A tool as the model sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    /// Name the model calls it by.
    pub name: String,
    /// What it does and when to use it.
    pub description: String,
    /// JSON Schema of its arguments object, shared: a schema that never changes is one value
    /// for every conversation ([`crate::Tool::shared_schema`]).
    pub parameters: Arc<serde_json::Value>,
}

/// One chat request.
#[derive(Clone, Debug, Default)]
pub struct ChatRequest {
    /// The conversation so far, system messages first.
    pub messages: Vec<ChatMessage>,
    /// Tools the model may call (sent natively when the provider supports it); built once
    /// per turn and shared by its requests (a turn waiting for its call holds one copy).
    pub tools: Arc<[ToolSpec]>,
}

/// Why the model stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// It finished its answer.
    EndTurn,
    /// It wants tool results.
    ToolUse,
    /// It hit `max_tokens`; a tool call in flight is incomplete.
    MaxTokens,
    /// Anything else the API reported.
    Other(String),
}

/// Token counts the API reported.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
}

/// One item of a streamed response.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamEvent {
    /// Visible text.
    TextDelta(String),
    /// A complete tool call (arguments fully accumulated).
    ToolCall(ToolCall),
    /// The response is complete.
    Done {
        /// Why it ended.
        stop_reason: StopReason,
        /// Token counts.
        usage: Usage,
    },
}

/// A streamed response: receive until `Done` or an error.
pub struct EventStream {
    /// An event already taken off `rx` (the retry logic peeks at the first one).
    first: Option<Result<StreamEvent, ProviderError>>,
    rx: mpsc::Receiver<Result<StreamEvent, ProviderError>>,
    /// Its place among the provider's calls in flight ([`limit`]), given back when the
    /// stream ends or is dropped.
    place: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl EventStream {
    /// A stream fed by a producer task through `rx`.
    pub fn new(rx: mpsc::Receiver<Result<StreamEvent, ProviderError>>) -> Self {
        Self {
            first: None,
            rx,
            place: None,
        }
    }

    /// The next event; `None` once the producer is finished.
    pub async fn next(&mut self) -> Option<Result<StreamEvent, ProviderError>> {
        let event = match self.first.take() {
            Some(first) => Some(first),
            None => self.rx.recv().await,
        };
        if !matches!(
            event,
            Some(Ok(StreamEvent::TextDelta(_) | StreamEvent::ToolCall(_)))
        ) {
            self.place = None;
        }
        event
    }

    /// This stream, holding `place` until it ends.
    fn holding(mut self, place: Option<tokio::sync::OwnedSemaphorePermit>) -> Self {
        self.place = place;
        self
    }

    fn with_first(mut self, first: Result<StreamEvent, ProviderError>) -> Self {
        self.first = Some(first);
        self
    }
}

/// An LLM endpoint.
#[async_trait]
pub trait Provider: Send + Sync {
    /// Short name for logs and metrics.
    fn name(&self) -> &str;

    /// Start one streaming chat call. Implementations retry transient failures that happen
    /// before the first event; after that, errors come through the stream.
    async fn stream(&self, request: &ChatRequest) -> Result<EventStream, ProviderError>;
}

/// Build the provider named by `[provider]`.
pub fn from_config(config: &ProviderConfig) -> anyhow::Result<std::sync::Arc<dyn Provider>> {
    Ok(match config.kind {
        ProviderKind::Openai => std::sync::Arc::new(OpenAiProvider::new(config)?),
        ProviderKind::Anthropic => std::sync::Arc::new(AnthropicProvider::new(config)?),
    })
}

/// Settings shared by both HTTP providers.
#[derive(Clone, Debug)]
pub(crate) struct HttpSettings {
    pub base_url: String,
    pub model: String,
    pub max_tokens: u32,
    pub temperature: Option<f32>,
    pub timeout: Duration,
    pub max_retries: u32,
    /// A hosted API with no key: every call fails at once with `NoKey`, nothing is sent.
    pub missing_key: bool,
    /// What to set to give the provider a key.
    pub key_hint: String,
}

impl HttpSettings {
    fn from_config(config: &ProviderConfig) -> Self {
        Self {
            base_url: config.base_url().to_owned(),
            model: config.model.to_string(),
            max_tokens: config.max_tokens,
            temperature: config.temperature,
            timeout: Duration::from_secs(config.timeout_secs.max(1)),
            max_retries: config.max_retries,
            missing_key: key::missing_hosted_key(config),
            key_hint: key::key_hint(config),
        }
    }

    /// What an error classifier needs to know about a call.
    fn call_info(&self, key_sent: bool) -> error::CallInfo<'_> {
        error::CallInfo {
            model: &self.model,
            key_sent,
            key_hint: self.key_hint.clone(),
        }
    }

    /// The error for a call that cannot be made without a key (checked before sending).
    fn refuse_without_key(&self) -> Result<(), ProviderError> {
        if self.missing_key {
            return Err(ProviderError::NoKey {
                hint: self.key_hint.clone(),
            });
        }
        Ok(())
    }

    fn client(&self) -> anyhow::Result<reqwest::Client> {
        Ok(reqwest::Client::builder()
            .connect_timeout(self.timeout.min(Duration::from_secs(10)))
            .user_agent(concat!("switchboard/", env!("CARGO_PKG_VERSION")))
            // Over HTTP/1.1 every call in flight has a connection of its own; after a burst
            // of turns the pool would keep them all open for its idle timeout.
            .pool_max_idle_per_host(IDLE_CONNECTIONS)
            .build()?)
    }
}
