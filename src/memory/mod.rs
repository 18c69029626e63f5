//! Memory: what the agent keeps across turns and restarts. Recall runs as a context provider
//! before each turn, user messages are autosaved after it, the model has memory tools, and
//! long histories are compacted into a summary so the context never overflows.
//!
//! Files: `hybrid.rs` (recall: full text, and vectors fused with it when configured),
//! `semantic.rs` (the embedder's health, the background embedding of saved memories),
//! `embeddings.rs` (the OpenAI-compatible `/embeddings` client), `bound.rs` (`[memory]
//! max_per_scope`), `cli.rs` (`switchboard memory reindex` and `stats`), `tools.rs`,
//! `compaction.rs`.

mod bound;
pub mod cli;
mod compaction;
mod embeddings;
mod hybrid;
mod semantic;
mod tools;

use async_trait::async_trait;
use switchboard_channel::ConversationKey;

pub use bound::enforce_bound;
pub use compaction::{Compaction, compact_if_needed};
pub use embeddings::{EmbedError, Embedder};
pub use hybrid::{Recaller, fuse};
pub use semantic::{Semantic, Step};
pub use tools::memory_tools;

use crate::agent::ContextProvider;
use crate::clock::Clock;
use crate::config::{MemoryConfig, MemoryScopeMode};
use crate::ids::MemoryScope;
use crate::provider::{ChatMessage, Role};
use crate::store::{Memory, Store, StoreError};

/// Starts the system message recall injects; text containing it is never saved again.
pub const RECALL_HEADER: &str = "Relevant memory:";
/// Starts the summary compaction leaves in place of older messages.
pub const SUMMARY_HEADER: &str = "Summary of the earlier conversation:";

/// The memory scope of a message from `user_id` in `key`.
pub fn scope_for(config: &MemoryConfig, key: &ConversationKey, user_id: &str) -> MemoryScope {
    match config.scope {
        MemoryScopeMode::Conversation => MemoryScope::Conversation(key.clone()),
        MemoryScopeMode::User => MemoryScope::user(&key.channel, user_id),
    }
}

/// Recall for one turn: the best matches for the newest user message, in its scope only.
pub struct Recall {
    /// How memories are found.
    pub recaller: Recaller,
    /// The turn's scope.
    pub scope: MemoryScope,
    /// How many to inject.
    pub limit: usize,
    /// Size cap of the injected message.
    pub max_chars: usize,
}

#[async_trait]
impl ContextProvider for Recall {
    async fn context(&self, messages: &[ChatMessage]) -> anyhow::Result<String> {
        let Some(last) = messages.iter().rev().find(|m| m.role == Role::User) else {
            return Ok(String::new());
        };
        let found = self
            .recaller
            .recall(&self.scope, &last.content, self.limit)
            .await?;
        let mut text = String::from(RECALL_HEADER);
        for m in found.iter().filter(|m| m.content != last.content) {
            let line = format!("\n- {}", m.content.replace('\n', " "));
            if text.chars().count() + line.chars().count() > self.max_chars {
                break;
            }
            text.push_str(&line);
        }
        Ok(if text == RECALL_HEADER {
            String::new()
        } else {
            text
        })
    }
}

/// Where a memory is saved from: its conversation, and recall by meaning to tell.
pub struct SavedIn<'a> {
    /// The conversation (the audit names it when the scope's bound forgets memories).
    pub key: &'a ConversationKey,
    /// Told that a memory waits for its vector.
    pub semantic: Option<&'a Semantic>,
}

/// Save a user message as a memory when it is long enough and is the user's own words
/// (not a command — anything starting with `/` — nor text the gateway injected). Exact
/// duplicates are saved once. A new memory wakes the embedder and keeps the scope within
/// `max_per_scope`.
pub async fn autosave(
    store: &dyn Store,
    config: &MemoryConfig,
    scope: &MemoryScope,
    text: &str,
    clock: &Clock,
    saved_in: SavedIn<'_>,
) -> Result<bool, StoreError> {
    let text = text.trim();
    let injected = text.contains(RECALL_HEADER) || text.contains(SUMMARY_HEADER);
    if !config.enabled
        || injected
        || text.chars().count() < config.autosave_min_chars
        || text.starts_with('/')
    {
        return Ok(false);
    }
    let memory = Memory {
        scope: scope.clone(),
        key: format!("auto:{:016x}", fnv1a(text)),
        content: text.to_owned(),
        category: "conversation".into(),
        updated_at: clock.now_ms(),
    };
    let new = store.remember(&memory, true).await?;
    if new {
        if let Some(semantic) = saved_in.semantic {
            semantic.wake();
        }
        enforce_bound(store, scope, config.max_per_scope, saved_in.key, clock).await;
    }
    Ok(new)
}

/// FNV-1a: a stable hash for autosave keys (std's hasher may change between releases).
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_separate_conversations_or_users() {
        let mut config = MemoryConfig::default();
        let key = ConversationKey::new("slack", "C1").in_thread("9");
        assert_eq!(
            scope_for(&config, &key, "U1").to_string(),
            "conv:slack:C1:9"
        );
        config.scope = MemoryScopeMode::User;
        assert_eq!(scope_for(&config, &key, "U1").to_string(), "user:slack:U1");
    }

    #[test]
    fn autosave_keys_are_stable() {
        assert_eq!(fnv1a("hello"), 0xa430d84680aabd0b);
    }
}
