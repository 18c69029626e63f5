//! `[checkpoints]`: how much of a conversation's workspace history `/rewind` keeps. A
//! checkpoint is taken before every tool call that may change the workspace; only files
//! changed since the previous one are stored, and the oldest are dropped past the caps.

use serde::Deserialize;

/// `[checkpoints]`.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct CheckpointsConfig {
    /// Take checkpoints (and offer `/rewind`).
    pub enabled: bool,
    /// Checkpoints kept per conversation; the oldest are dropped first.
    pub max_count: usize,
    /// Bytes of stored file contents kept per conversation (each content counted once).
    pub max_bytes: u64,
    /// Files larger than this are not stored; a restore says which were skipped.
    pub max_file_bytes: u64,
}

impl Default for CheckpointsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_count: 20,
            max_bytes: 256 * 1024 * 1024,
            max_file_bytes: 16 * 1024 * 1024,
        }
    }
}
