//! What a `delegate` call's sub-tasks are made of on the gateway's side: the agent loop asks a
//! [`SubTasks`] spawner for each child's parts — the model, prompt and tools of the agent
//! profile it names (or the conversation's), its tools bound to a workspace of its own. That
//! workspace is a sibling of the conversation's (`<chat>~sub<n>`), like a thread's, never
//! inside it: a sub-task may run the shell, and a sibling keeps a child's writes out of the
//! conversation's files while the sandbox confines it as it confines any conversation. The
//! loop keeps only the tools the parent has, and passes every call through the parent's gate.

use std::sync::Arc;

use switchboard_channel::ConversationKey;

use crate::agent::{ChildAgent, Offload, Spawner, Tool};
use crate::profile::{Profile, Profiles};
use crate::provider::Provider;
use crate::tools::Toolbox;

/// Builds the children of one conversation's turn.
pub(super) struct SubTasks {
    pub(super) profiles: Arc<Profiles>,
    pub(super) toolbox: Arc<Toolbox>,
    /// Tools added in code, offered to a child whose profile offers them.
    pub(super) extra_tools: Vec<Arc<dyn Tool>>,
    /// The conversation's profile (a child naming none runs under it) and its model now.
    pub(super) parent: Arc<Profile>,
    pub(super) parent_provider: Arc<dyn Provider>,
    pub(super) key: ConversationKey,
}

impl Spawner for SubTasks {
    fn child(&self, profile: Option<&str>, index: usize) -> Result<ChildAgent, String> {
        let (profile, provider) = match profile {
            None => (Arc::clone(&self.parent), Arc::clone(&self.parent_provider)),
            Some(name) => {
                let Some(profile) = self.profiles.by_name(name) else {
                    let known = self.profiles.names().join(", ");
                    return Err(format!("no agent profile {name:?}; known: {known}"));
                };
                let model = profile.models().first().cloned().unwrap_or_default();
                let provider = profile.provider(&model);
                (profile, provider)
            }
        };
        let (built_in, dir) = self
            .toolbox
            .for_sub_task(&self.key, index, &profile.skills.roots());
        let tools = built_in
            .into_iter()
            .chain(self.extra_tools.iter().cloned())
            .filter(|tool| profile.offers(tool.name()))
            .collect();
        let threshold = profile.settings.memory.offload_threshold_bytes.max(1024);
        Ok(ChildAgent {
            provider,
            system_prompt: profile.settings.system_prompt.clone(),
            tools,
            offload: Some(Offload { dir, threshold }),
        })
    }
}
