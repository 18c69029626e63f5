//! `[memory]`: long-term memory and history compaction.

use serde::Deserialize;

use super::{EnvString, Secret};

/// Whose memories a conversation sees.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum MemoryScopeMode {
    /// Each conversation has its own memory.
    #[default]
    Conversation,
    /// A user's memories follow them across conversations of one channel.
    User,
}

/// `[memory]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MemoryConfig {
    /// Recall, autosave and the memory tools.
    pub enabled: bool,
    /// Per conversation or per user.
    pub scope: MemoryScopeMode,
    /// User messages at least this long are saved automatically.
    pub autosave_min_chars: usize,
    /// Memories recalled before each turn.
    pub recall_limit: usize,
    /// Size cap of the recalled-memory system message.
    pub recall_max_chars: usize,
    /// Non-system messages kept before older ones are summarised.
    pub max_history_messages: usize,
    /// Recent messages compaction keeps verbatim.
    pub compaction_keep_recent: usize,
    /// Characters of older history sent to the summariser.
    pub compaction_source_chars: usize,
    /// Longest summary kept.
    pub summary_max_chars: usize,
    /// History longer than this many characters (about 4 per token) is compacted too,
    /// however few its messages.
    pub max_history_chars: usize,
    /// A tool output longer than this many bytes is saved to a file in the workspace; the
    /// history keeps its head, tail, size and path.
    pub offload_threshold_bytes: usize,
    /// Memories one scope keeps at most; past it, the least recently recalled (the oldest
    /// among those never recalled) are forgotten, each recorded in the audit log.
    pub max_per_scope: usize,
    /// `[memory.embeddings]`: recall by meaning beside full text. Absent, recall is full
    /// text only.
    pub embeddings: Option<EmbeddingsConfig>,
}

/// `[memory.embeddings]`: an OpenAI-compatible `POST <base_url>/embeddings`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbeddingsConfig {
    /// API base (`https://api.openai.com/v1`, a local server's `/v1`); absent, the
    /// `[provider]`'s.
    #[serde(default)]
    pub base_url: Option<EnvString>,
    /// Model name (`text-embedding-3-small`, a local server's model).
    pub model: EnvString,
    /// API key (`${OPENAI_API_KEY}`); absent, the `[provider]`'s.
    #[serde(default)]
    pub api_key: Option<Secret>,
    /// Length of the vectors: sent to models that can shorten theirs, and checked on every
    /// answer (a vector of another length is refused, never stored).
    pub dimensions: usize,
    /// Seconds one request may take. Recall waits for its query's vector at most this long
    /// before it answers by full text alone.
    #[serde(default = "default_embedding_timeout")]
    pub timeout_secs: u64,
    /// Vector matches less similar than this (cosine) are not recalled: every query has
    /// nearest neighbours, related or not.
    #[serde(default = "default_min_similarity")]
    pub min_similarity: f32,
}

fn default_embedding_timeout() -> u64 {
    3
}

fn default_min_similarity() -> f32 {
    0.25
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            scope: MemoryScopeMode::Conversation,
            autosave_min_chars: 20,
            recall_limit: 5,
            recall_max_chars: 2000,
            max_history_messages: 50,
            compaction_keep_recent: 20,
            compaction_source_chars: 12_000,
            summary_max_chars: 2_000,
            max_history_chars: 120_000,
            offload_threshold_bytes: crate::agent::DEFAULT_OFFLOAD_BYTES,
            max_per_scope: 50_000,
            embeddings: None,
        }
    }
}
