//! What a turn's agent is made of: the LLM, the tools, the policy gate, context providers and
//! the turn settings from `[agent]`, `[provider]` and `[memory]`. [`Agents::agent_for`]
//! builds the loop for one conversation, with its workspace's tools, its memory scope and
//! its "always allow" rules.

use std::sync::Arc;

use switchboard_channel::ConversationKey;

use super::FilePoster;
use super::approval::PolicyGate;
use crate::agent::{AgentLoop, ContextProvider, Offload, Tool};
use crate::checkpoint::{Checkpointer, Checkpoints};
use crate::clock::Clock;
use crate::config::MemoryConfig;
use crate::memory::{Recall, memory_tools, scope_for};
use crate::policy::Policy;
use crate::provider::{ChatMessage, Provider, Role};
use crate::scrub::Scrubber;
use crate::store::{Store, StoreError};
use crate::tools::Toolbox;

/// The per-turn settings: how a turn's context is assembled and how long it may run.
#[derive(Debug, Clone)]
pub struct TurnSettings {
    /// First message of every conversation.
    pub system_prompt: String,
    /// Stored messages loaded per turn.
    pub history_limit: usize,
    /// LLM round-trips per turn.
    pub max_iterations: usize,
    /// Native tool calling, or tools described in the prompt.
    pub native_tools: bool,
    /// `[provider] vision`: images people send go to the model as image parts.
    pub vision: bool,
    /// `[transcription]`: voice notes become text the turn answers.
    pub transcription: Option<crate::config::TranscriptionConfig>,
    /// `[memory]`: recall, autosave, compaction.
    pub memory: MemoryConfig,
    /// `[budgets]`: daily limits per conversation and per user.
    pub budgets: crate::config::budgets::BudgetsConfig,
}

impl TurnSettings {
    /// The settings `[agent]`, `[provider]`, `[memory]`, `[budgets]` and `[transcription]`
    /// give.
    pub fn from_config(config: &crate::config::Config) -> Self {
        Self {
            system_prompt: config.agent.system_prompt.clone(),
            history_limit: config.agent.history_limit,
            max_iterations: config.agent.max_tool_iterations,
            native_tools: config.provider.native_tools,
            vision: config.provider.vision,
            transcription: config.transcription.clone(),
            memory: config.memory.clone(),
            budgets: config.budgets,
        }
    }
}

/// The memory tools' names (offered when memory is enabled).
const MEMORY_TOOL_NAMES: &[&str] = &["memory_store", "memory_recall", "memory_forget"];

/// Builds each conversation's agent loop.
pub struct Agents {
    /// The LLM.
    provider: Arc<dyn Provider>,
    /// Built-in tools, made per conversation (each has its own workspace).
    toolbox: Toolbox,
    /// Tools added programmatically (`Gateway::tool`), offered in every conversation.
    extra_tools: Vec<Arc<dyn Tool>>,
    /// Context providers run before each turn.
    context: Vec<Arc<dyn ContextProvider>>,
    /// The gate every tool call passes.
    policy: Arc<Policy>,
    /// Redacts credentials from tool output before the model or history sees it.
    scrubber: Arc<Scrubber>,
    /// How turns are assembled.
    settings: TurnSettings,
    /// Stamps what the memory tools write.
    clock: Clock,
    /// Workspace checkpoints (`/rewind`), when configured.
    checkpoints: Option<Arc<Checkpoints>>,
    /// MCP servers whose tools every turn offers (`[mcp]`).
    mcp: Option<Arc<crate::mcp::Mcp>>,
}

impl Agents {
    /// The sandbox tool processes start in (its posture is reported by `/readyz`).
    pub fn sandbox(&self) -> &Arc<crate::sandbox::Sandbox> {
        self.toolbox.sandbox()
    }

    /// The directory handle of `key`'s workspace (where attachments are saved).
    pub fn workspace_dir(&self, key: &ConversationKey) -> crate::tools::WorkspaceDir {
        self.toolbox.workspace_dir(key)
    }

    /// Agents over `provider` and `toolbox`, gated by `policy`.
    pub fn new(
        provider: Arc<dyn Provider>,
        toolbox: Toolbox,
        policy: Arc<Policy>,
        scrubber: Arc<Scrubber>,
        settings: TurnSettings,
        clock: Clock,
    ) -> Self {
        Self {
            provider,
            toolbox,
            extra_tools: Vec::new(),
            context: Vec::new(),
            policy,
            scrubber,
            settings,
            clock,
            checkpoints: None,
            mcp: None,
        }
    }

    /// Also offer the tools of `mcp`'s servers in every conversation.
    pub fn with_mcp(mut self, mcp: Arc<crate::mcp::Mcp>) -> Self {
        self.mcp = Some(mcp).filter(|m| !m.is_empty());
        self
    }

    /// The MCP servers, for `/readyz`.
    pub fn mcp(&self) -> Option<&Arc<crate::mcp::Mcp>> {
        self.mcp.as_ref()
    }

    /// Also offer `tools` in every conversation.
    pub fn with_tools(mut self, tools: Vec<Arc<dyn Tool>>) -> Self {
        self.extra_tools.extend(tools);
        self
    }

    /// Checkpoint workspaces before changing tool calls, and answer `/rewind`.
    pub fn with_checkpoints(mut self, checkpoints: Checkpoints) -> Self {
        self.checkpoints = Some(Arc::new(checkpoints));
        self
    }

    /// `key`'s checkpoints (`None` when they are turned off).
    pub fn checkpointer(
        &self,
        store: &Arc<dyn Store>,
        key: &ConversationKey,
    ) -> Option<Checkpointer> {
        let workspace = self.toolbox.workspace(key);
        let owner = self.toolbox.sandbox().owner();
        let scrubber = Arc::clone(&self.scrubber);
        let service = self.checkpoints.as_ref()?;
        service.for_conversation(Arc::clone(store), key, workspace, owner, scrubber)
    }

    /// Also run `context` providers before every turn.
    pub fn with_context(mut self, context: Vec<Arc<dyn ContextProvider>>) -> Self {
        self.context.extend(context);
        self
    }

    /// `name` as a metric label: a tool the gateway offers keeps its name, anything the
    /// model invented is `other`, so it cannot grow the label set without bound.
    pub fn tool_label<'a>(&self, name: &'a str) -> &'a str {
        let built_in = crate::config::TOOL_NAMES.contains(&name)
            || MEMORY_TOOL_NAMES.contains(&name)
            || name == crate::tools::SCHEDULE_TOOL;
        if built_in || self.extra_tools.iter().any(|t| t.name() == name) {
            name
        } else {
            "other"
        }
    }

    /// The LLM (also used for compaction).
    pub fn provider(&self) -> &dyn Provider {
        self.provider.as_ref()
    }

    /// The turn settings.
    pub fn settings(&self) -> &TurnSettings {
        &self.settings
    }

    /// A fresh turn's context: the system prompt, then the stored history, then `user`.
    pub async fn context_for(
        &self,
        store: &dyn Store,
        key: &ConversationKey,
        user: &ChatMessage,
    ) -> Result<Vec<ChatMessage>, StoreError> {
        let mut messages = vec![ChatMessage::new(
            Role::System,
            self.settings.system_prompt.clone(),
        )];
        messages.extend(store.history(key, self.settings.history_limit).await?);
        messages.push(user.clone());
        Ok(messages)
    }

    /// The agent loop for one conversation: its workspace's tools plus the extra ones, gated
    /// by the policy with this conversation's "always allow" rules; `send_file` (when
    /// enabled) posts through `files`.
    pub async fn agent_for(
        &self,
        store: &Arc<dyn Store>,
        key: &ConversationKey,
        user_id: &str,
        files: FilePoster,
    ) -> Result<AgentLoop, StoreError> {
        let gate = PolicyGate {
            policy: Arc::clone(&self.policy),
            extra_allow: store.allow_rules(key).await?,
        };
        let mut builder = AgentLoop::builder();
        for provider in &self.context {
            builder = builder.context(Arc::clone(provider));
        }
        let memory = &self.settings.memory;
        if memory.enabled {
            let scope = scope_for(memory, key, user_id);
            builder = builder
                .context(Arc::new(Recall {
                    store: Arc::clone(store),
                    scope: scope.clone(),
                    limit: memory.recall_limit,
                    max_chars: memory.recall_max_chars,
                }))
                .tools(memory_tools(store, &scope, &self.clock));
        }
        let offload = Offload {
            dir: self.toolbox.workspace_dir(key),
            threshold: memory.offload_threshold_bytes.max(1024),
        };
        if let Some(checkpointer) = self.checkpointer(store, key) {
            builder = builder.checkpoints(Arc::new(checkpointer));
        }
        if let Some(mcp) = &self.mcp {
            let workspace = self.toolbox.workspace(key);
            builder = builder.tools(mcp.tools_for(key, &workspace).await);
        }
        Ok(builder
            .offload(offload)
            .tools(self.toolbox.for_conversation(key))
            .tools(self.toolbox.send_file(key, files))
            .tools(self.extra_tools.iter().cloned())
            .max_iterations(self.settings.max_iterations)
            .scrubber(Arc::clone(&self.scrubber))
            .native_tools(self.settings.native_tools)
            .gate(Arc::new(gate))
            .build())
    }
}
