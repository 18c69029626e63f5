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

/// The longest vector pgvector's HNSW index takes (`vector` columns); the gateway's index on
/// PostgreSQL is one, so a longer configured length would stop start-up there.
const PGVECTOR_HNSW_MAX_DIMS: usize = 2_000;

impl MemoryConfig {
    /// What is wrong with these values, by key; `database_url` decides what a vector's
    /// length may be.
    pub fn problems(&self, database_url: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut problem = |key: &str, message: String| out.push((format!("memory.{key}"), message));
        if self.max_per_scope == 0 {
            problem("max_per_scope", "must be at least 1".into());
        }
        let Some(embeddings) = &self.embeddings else {
            return out;
        };
        let postgres = database_url.starts_with("postgres");
        match embeddings.dimensions {
            0 => problem(
                "embeddings.dimensions",
                "must be at least 1: the length of the model's vectors (384 for all-MiniLM-L6-v2, 1536 for text-embedding-3-small)".into(),
            ),
            n if postgres && n > PGVECTOR_HNSW_MAX_DIMS => problem(
                "embeddings.dimensions",
                format!("{n} is more than pgvector's index takes ({PGVECTOR_HNSW_MAX_DIMS}); ask the model for {PGVECTOR_HNSW_MAX_DIMS} or fewer (text-embedding-3 models shorten theirs)"),
            ),
            _ => {}
        }
        if embeddings.timeout_secs == 0 {
            problem("embeddings.timeout_secs", "must be at least 1".into());
        }
        if !(-1.0..=1.0).contains(&embeddings.min_similarity) {
            problem(
                "embeddings.min_similarity",
                "must be a cosine similarity, between -1 and 1".into(),
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(embeddings: &str) -> MemoryConfig {
        toml::from_str(&format!("[embeddings]\nmodel = \"m\"\n{embeddings}\n")).unwrap()
    }

    fn keys(found: Vec<(String, String)>) -> Vec<String> {
        found.into_iter().map(|(key, _)| key).collect::<Vec<_>>()
    }

    #[test]
    fn a_vector_of_no_values_is_refused_on_either_database() {
        let memory = with("dimensions = 0");
        for url in ["sqlite://data/s.db", "postgres://db/sb"] {
            assert_eq!(keys(memory.problems(url)), ["memory.embeddings.dimensions"]);
        }
    }

    #[test]
    fn a_length_pgvector_cannot_index_is_refused_only_on_postgresql() {
        let memory = with("dimensions = 3072");
        assert!(memory.problems("sqlite://data/s.db").is_empty());
        let found = memory.problems("postgres://db/sb");
        assert_eq!(found.len(), 1);
        assert!(found[0].1.contains("2000"), "{found:?}");
        assert!(
            with("dimensions = 1536")
                .problems("postgres://db/sb")
                .is_empty()
        );
    }

    #[test]
    fn a_zero_timeout_an_impossible_similarity_and_an_empty_scope_are_named() {
        let mut memory = with("dimensions = 8\ntimeout_secs = 0\nmin_similarity = 1.5");
        memory.max_per_scope = 0;
        assert_eq!(
            keys(memory.problems("sqlite://data/s.db")),
            [
                "memory.max_per_scope",
                "memory.embeddings.timeout_secs",
                "memory.embeddings.min_similarity"
            ]
        );
    }
}
