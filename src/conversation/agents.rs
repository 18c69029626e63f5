//! What a turn's agent is made of: the LLM, the tools, the policy gate, context providers and
//! the turn settings, all taken from the conversation's agent profile ([`crate::profile`]).
//! [`Agents::agent_for`] builds the loop for one conversation, with its profile's tools on
//! its workspace, its memory scope and its "always allow" rules.

use std::sync::Arc;

use switchboard_channel::ConversationKey;

use super::FilePoster;
use super::approval::PolicyGate;
use super::sub_tasks::SubTasks;
use crate::agent::{
    AgentLoop, AgentLoopBuilder, ContextProvider, Delegation, DelegationLimits, Offload, Tool,
};
use crate::checkpoint::{Checkpointer, Checkpoints};
use crate::clock::Clock;
use crate::config::MemoryConfig;
use crate::memory::{Recall, Recaller, Semantic, memory_tools, scope_for};
use crate::profile::{Active, Profiles};
use crate::provider::{ChatMessage, Role};
use crate::scrub::Scrubber;
use crate::skills::SkillTool;
use crate::store::{Store, StoreError, window};
use crate::tools::Toolbox;

/// The memory tools' names (offered when memory is enabled).
const MEMORY_TOOL_NAMES: &[&str] = &["memory_store", "memory_recall", "memory_forget"];

/// Builds each conversation's agent loop.
pub struct Agents {
    /// Every agent profile and which conversation uses which (shared with sub-tasks).
    profiles: Arc<Profiles>,
    /// Built-in tools, made per conversation (each has its own workspace); shared with
    /// sub-tasks, which get workspaces of their own.
    toolbox: Arc<Toolbox>,
    /// `[delegation]`: the limits of a profile that offers `delegate`.
    delegation: DelegationLimits,
    /// Tools added programmatically (`Gateway::tool`), offered in every conversation.
    extra_tools: Vec<Arc<dyn Tool>>,
    /// Context providers run before each turn.
    context: Vec<Arc<dyn ContextProvider>>,
    /// Redacts credentials from tool output before the model or history sees it.
    scrubber: Arc<Scrubber>,
    /// Stamps what the memory tools write.
    clock: Clock,
    /// Workspace checkpoints (`/rewind`), when configured.
    checkpoints: Option<Arc<Checkpoints>>,
    /// MCP servers whose tools every turn offers (`[mcp]`).
    mcp: Option<Arc<crate::mcp::Mcp>>,
    /// Recall by meaning (`[memory.embeddings]`), shared with its background task.
    semantic: Option<Arc<Semantic>>,
}

impl Agents {
    /// The sandbox tool processes start in (its posture is reported by `/readyz`).
    pub fn sandbox(&self) -> &Arc<crate::sandbox::Sandbox> {
        self.toolbox.sandbox()
    }

    /// Close `key`'s browser and delete its profile (cookies, storage): part of `/new`.
    pub async fn forget_browser(&self, key: &ConversationKey) {
        self.toolbox.forget_browser(key).await;
    }

    /// The directory handle of `key`'s workspace (where attachments are saved).
    pub fn workspace_dir(&self, key: &ConversationKey) -> crate::tools::WorkspaceDir {
        self.toolbox.workspace_dir(key)
    }

    /// Agents for `profiles`, with `toolbox` able to make every built-in tool they offer.
    pub fn new(
        profiles: Profiles,
        toolbox: Toolbox,
        scrubber: Arc<Scrubber>,
        clock: Clock,
    ) -> Self {
        Self {
            profiles: Arc::new(profiles),
            toolbox: Arc::new(toolbox),
            delegation: DelegationLimits::default(),
            extra_tools: Vec::new(),
            context: Vec::new(),
            scrubber,
            clock,
            checkpoints: None,
            mcp: None,
            semantic: None,
        }
    }

    /// Let sub-tasks of `delegate` go as far as `limits` (default: `[delegation]`'s defaults).
    pub fn with_delegation(mut self, limits: DelegationLimits) -> Self {
        self.delegation = limits;
        self
    }

    /// Recall by meaning as well as by full text.
    pub fn with_semantic(mut self, semantic: Option<Arc<Semantic>>) -> Self {
        self.semantic = semantic;
        self
    }

    /// Recall by meaning, when configured.
    pub fn semantic(&self) -> Option<&Arc<Semantic>> {
        self.semantic.as_ref()
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
            || name == crate::tools::SCHEDULE_TOOL
            || name == crate::skills::SKILL_TOOL;
        if built_in || self.extra_tools.iter().any(|t| t.name() == name) {
            name
        } else {
            "other"
        }
    }

    /// Every profile (resolved per conversation when its actor starts).
    pub fn profiles(&self) -> &Profiles {
        &self.profiles
    }

    /// A fresh turn's context: the profile's system prompt, then the stored history (its
    /// last `history_limit` messages; `read` is the whole history when the turn already
    /// read it), then `user`.
    pub async fn context_for(
        &self,
        active: &Active,
        store: &dyn Store,
        key: &ConversationKey,
        read: Option<Vec<ChatMessage>>,
        user: &ChatMessage,
    ) -> Result<Vec<ChatMessage>, StoreError> {
        let settings = active.settings();
        let limit = settings.history_limit;
        let history = match read {
            Some(all) => window(all, limit),
            None => store.history(key, limit).await?,
        };
        let mut messages = Vec::with_capacity(history.len() + 2);
        messages.push(ChatMessage::new(
            Role::System,
            settings.system_prompt.clone(),
        ));
        messages.extend(history);
        messages.push(user.clone());
        Ok(messages)
    }

    /// The agent loop for one conversation: its profile's tools on its workspace plus the
    /// extra ones, gated by the profile's policy with this conversation's "always allow" rules;
    /// `send_file` (when the profile offers it) posts through `files`.
    pub async fn agent_for(
        &self,
        active: &Active,
        store: &Arc<dyn Store>,
        key: &ConversationKey,
        user_id: &str,
        files: FilePoster,
    ) -> AgentLoop {
        let policy = Arc::clone(&active.profile().policy);
        let gate = PolicyGate::new(policy, Arc::clone(store), key.clone());
        let mut builder = AgentLoop::builder();
        for provider in &self.context {
            builder = builder.context(Arc::clone(provider));
        }
        let settings = active.settings();
        let memory = &settings.memory;
        if memory.enabled {
            builder = self.with_memory(builder, memory, store, key, user_id);
        }
        let offload = Offload {
            dir: self.toolbox.workspace_dir(key),
            threshold: memory.offload_threshold_bytes.max(1024),
        };
        if let Some(checkpointer) = self.checkpointer(store, key) {
            builder = builder.before_change(Arc::new(checkpointer));
        }
        if let Some(mcp) = &self.mcp {
            let workspace = self.toolbox.workspace(key);
            builder = builder.tools(mcp.tools_for(key, &workspace).await);
        }
        let profile = active.profile();
        let skills = &profile.skills;
        let built_in = (self
            .toolbox
            .for_conversation(key, &skills.roots())
            .into_iter())
        .chain(self.toolbox.send_file(key, files))
        .filter(|tool| profile.offers(tool.name()));
        if profile.offers(crate::agent::DELEGATE_TOOL) {
            builder = builder.delegation(self.delegation(active, key));
        }
        if !skills.is_empty() {
            builder = builder
                .tool(Arc::new(SkillTool::new(Arc::clone(skills))))
                .scope(Arc::clone(skills) as Arc<dyn crate::agent::ToolScope>);
        }
        builder
            .offload(offload)
            .tools(built_in)
            .tools(self.extra_tools.iter().cloned())
            .max_iterations(settings.max_iterations)
            .scrubber(Arc::clone(&self.scrubber))
            .native_tools(settings.native_tools)
            .vision(settings.vision)
            .gate(Arc::new(gate))
            .build()
    }

    /// `builder` with this conversation's recall (a context provider) and memory tools.
    fn with_memory(
        &self,
        builder: AgentLoopBuilder,
        memory: &MemoryConfig,
        store: &Arc<dyn Store>,
        key: &ConversationKey,
        user_id: &str,
    ) -> AgentLoopBuilder {
        let scope = scope_for(memory, key, user_id);
        let recaller = Recaller {
            store: store.clone(),
            semantic: self.semantic.clone(),
            clock: self.clock.clone(),
        };
        let tools = memory_tools(store, &recaller, &scope, key, memory.max_per_scope);
        builder
            .context(Arc::new(Recall {
                recaller,
                scope,
                limit: memory.recall_limit,
                max_chars: memory.recall_max_chars,
            }))
            .tools(tools)
    }
}

impl Agents {
    /// What lets `key`'s loop hand sub-tasks to children.
    fn delegation(&self, active: &Active, key: &ConversationKey) -> Delegation {
        let spawner = SubTasks {
            profiles: Arc::clone(&self.profiles),
            toolbox: Arc::clone(&self.toolbox),
            extra_tools: self.extra_tools.clone(),
            parent: active.shared_profile(),
            parent_provider: active.provider(),
            key: key.clone(),
        };
        Delegation {
            spawner: Arc::new(spawner),
            limits: self.delegation,
            depth: 0,
        }
    }
}
