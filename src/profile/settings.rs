//! What a turn runs with, from `[agent]`, `[provider]`, `[memory]`, `[budgets]` and
//! `[transcription]` or an agent profile's overrides: how its context is assembled and how long
//! it may run. The profile resolves them; the conversation's turn reads them.

use crate::config::MemoryConfig;

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
    /// When answers are spoken: the profile's `voice`, else `[voice] rule`, else off.
    pub voice: crate::config::VoiceRule,
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
            voice: (config.voice.as_ref()).map_or(crate::config::VoiceRule::Off, |v| v.rule),
            memory: config.memory.clone(),
            budgets: config.budgets,
        }
    }
}
