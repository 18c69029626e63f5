//! The seams the agent loop calls out through: tools the model may run, and context
//! providers that add a system message before each turn (memory recall uses one).

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Decision;
use crate::provider::{ChatMessage, ImagePart, ToolCall, ToolSpec};

/// What a tool run produced; an error is a result the model reads, not an aborted turn.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    /// Whether the tool did what was asked.
    pub success: bool,
    /// Output for the model.
    pub output: String,
    /// What went wrong, when `success` is false.
    pub error: Option<String>,
    /// Images the model sees with the output (a browser screenshot), when the loop's model
    /// reads images ([`crate::AgentLoopBuilder::vision`]); otherwise dropped. Never stored.
    #[serde(skip)]
    pub images: Vec<ImagePart>,
}

impl ToolResult {
    /// A successful result.
    pub fn ok(output: impl Into<String>) -> Self {
        Self {
            success: true,
            output: output.into(),
            error: None,
            images: Vec::new(),
        }
    }

    /// A failed result with the output the tool still produced.
    pub fn failed(output: impl Into<String>, error: impl Into<String>) -> Self {
        Self {
            output: output.into(),
            ..Self::err(error)
        }
    }

    /// This result with `image` for the model to see.
    pub fn with_image(mut self, image: ImagePart) -> Self {
        self.images.push(image);
        self
    }

    /// A failed result the model can read and correct.
    pub fn err(error: impl Into<String>) -> Self {
        Self {
            success: false,
            output: String::new(),
            error: Some(error.into()),
            images: Vec::new(),
        }
    }

    /// The text sent back to the model as the tool message.
    pub fn to_model_text(&self) -> String {
        match (&self.error, self.output.is_empty()) {
            (Some(e), true) => format!("error: {e}"),
            (Some(e), false) => format!("error: {e}\n{}", self.output),
            (None, _) => self.output.clone(),
        }
    }
}

/// Something the model can call.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Name the model calls it by.
    fn name(&self) -> &str;

    /// What it does, for the model.
    fn description(&self) -> &str;

    /// JSON Schema of the arguments object.
    fn parameters_schema(&self) -> Value;

    /// Whether it only reads (read-only calls may run concurrently).
    fn read_only(&self) -> bool {
        false
    }

    /// Run it. Failures are returned as `ToolResult::err`, never panics.
    async fn execute(&self, args: Value) -> ToolResult;

    /// The schema as one shared value, for the spec sent with every request. A tool whose
    /// schema never changes returns a clone of one `Arc` kept for the process, so a thousand
    /// waiting turns do not hold a thousand copies (default: built from
    /// [`Tool::parameters_schema`]).
    fn shared_schema(&self) -> Arc<Value> {
        Arc::new(self.parameters_schema())
    }

    /// The spec sent to the provider.
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name().to_owned(),
            description: self.description().to_owned(),
            parameters: self.shared_schema(),
        }
    }
}

/// Adds context before each turn; its text (when not empty) becomes a system message.
#[async_trait]
pub trait ContextProvider: Send + Sync {
    /// Text to inject for a turn over `messages`.
    async fn context(&self, messages: &[ChatMessage]) -> anyhow::Result<String>;
}

/// Decides, before each tool call, whether it may run (the policy gate plugs in here). The
/// [`Decision`] it returns travels with the call's events, so the audit and the metrics see
/// the verdict, the matching rule and the decider as data.
#[async_trait]
pub trait Gate: Send + Sync {
    /// Decide one call; `read_only` is the tool's own declaration.
    async fn check(&self, call: &ToolCall, read_only: bool) -> Decision;

    /// A suspended turn goes on in a new loop (perhaps after a restart): `turn` holds what
    /// it added before it waited, `approved` the call a person just approved, if one was. A
    /// gate that remembers within a turn learns it again here (default: nothing).
    fn resumed(&self, _turn: &[ChatMessage], _approved: Option<&ToolCall>) {}
}

/// Runs before a tool call that may change the workspace, after the gate let it through and
/// its arguments were checked (workspace checkpoints plug in here).
#[async_trait]
pub trait BeforeChange: Send + Sync {
    /// Called before `call` runs; `read_only` is the tool's own declaration.
    async fn before(&self, call: &ToolCall, read_only: bool);
}

/// Narrows which tools a turn may call (skills' `allowed-tools` plug in here). A call it
/// refuses is denied without asking the gate, with the refusal as the reason.
pub trait ToolScope: Send + Sync {
    /// Why `call` may not run after `turn`'s messages, or `None` when it may.
    fn refusal(&self, turn: &[ChatMessage], call: &ToolCall) -> Option<String>;
}
