//! Workspace checkpoints and `/rewind`. Before a tool call that may change the workspace (a
//! file write or edit, a shell command the policy does not judge read-only) the agent loop
//! asks the conversation's [`Checkpointer`] to take one: the files changed since the
//! previous checkpoint are stored once each by content (`blobs`, cloned copy-on-write where
//! the filesystem allows), the rest is a manifest of path → size, times, hash
//! (`snapshot`), kept in the database with the call that followed. `/rewind N` puts the
//! files back (`restore`) and cuts the history before that call; it is audited.
//!
//! Checkpoints of one conversation live in `data_dir/checkpoints/<hash of its key>/`, so two
//! conversations never share one; the oldest are dropped past `[checkpoints] max_count` and
//! `max_bytes`. Every access to the workspace goes through its directory handle (`walk`).

mod blobs;
mod reply;
mod restore;
mod snapshot;
mod walk;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use sha2::{Digest, Sha256};
use switchboard_channel::ConversationKey;

pub use reply::{Asker, DISABLED, Reply};

use crate::agent::BeforeChange;
use crate::clock::Clock;
use crate::config::checkpoints::CheckpointsConfig;
use crate::policy::{Mode, Policy, PolicyConfig, Verdict};
use crate::provider::ToolCall;
use crate::scrub::Scrubber;
use crate::store::{Checkpoint, NewCheckpoint, Store};
use blobs::Blobs;
use snapshot::Manifest;

/// The tools that write files in the workspace (besides a shell command that is not
/// read-only).
const FILE_WRITERS: &[&str] = &["file_write", "file_edit"];

/// Longest argument summary kept with a checkpoint.
const SUMMARY_CHARS: usize = 60;

/// The gateway's checkpoint settings and storage root, shared by every conversation.
pub struct Checkpoints {
    config: CheckpointsConfig,
    /// `data_dir/checkpoints`.
    root: PathBuf,
    clock: Clock,
    /// The `read_only` policy mode with no rules: a shell command it allows only looks.
    read_only: Option<Policy>,
}

impl Checkpoints {
    /// Checkpoints as `[checkpoints]` says, stored under `data_dir`.
    pub fn new(config: CheckpointsConfig, data_dir: &std::path::Path, clock: Clock) -> Self {
        let judge = PolicyConfig {
            mode: Mode::ReadOnly,
            ..PolicyConfig::default()
        };
        Self {
            config,
            root: data_dir.join("checkpoints"),
            clock,
            read_only: Policy::new(&judge).ok(),
        }
    }

    /// The checkpoints of `key`, whose workspace is at `workspace` (files made on restore
    /// get `owner`); `None` when checkpoints are turned off.
    pub fn for_conversation(
        self: &Arc<Self>,
        store: Arc<dyn Store>,
        key: &ConversationKey,
        workspace: PathBuf,
        owner: Option<(u32, u32)>,
        scrubber: Arc<Scrubber>,
    ) -> Option<Checkpointer> {
        if !self.config.enabled {
            return None;
        }
        let digest = Sha256::digest(key.to_string().as_bytes());
        let dir = self.root.join(&format!("{digest:x}")[..32]);
        Some(Checkpointer {
            service: Arc::clone(self),
            store,
            key: key.clone(),
            workspace,
            owner,
            blobs: Blobs::new(dir.join("blobs")),
            scrubber,
        })
    }

    /// Whether `call` may change the workspace: a file write or edit, or a shell command
    /// the policy does not judge read-only. `read_only` is the tool's own declaration.
    pub fn changes_workspace(&self, call: &ToolCall, read_only: bool) -> bool {
        if read_only {
            return false;
        }
        if call.name == "shell" {
            return self.read_only.as_ref().is_none_or(|policy| {
                policy.evaluate("shell", &call.args, false, &[]).verdict != Verdict::Allow
            });
        }
        FILE_WRITERS.contains(&call.name.as_str())
    }
}

/// One conversation's checkpoints.
pub struct Checkpointer {
    service: Arc<Checkpoints>,
    store: Arc<dyn Store>,
    key: ConversationKey,
    /// The conversation's workspace directory.
    workspace: PathBuf,
    /// uid/gid of files made on restore (the sandbox user, when the gateway is root).
    owner: Option<(u32, u32)>,
    blobs: Blobs,
    /// The argument summary is stored and shown: scrubbed like the progress lines.
    scrubber: Arc<Scrubber>,
}

#[async_trait::async_trait]
impl BeforeChange for Checkpointer {
    /// Called before every tool call: takes a checkpoint when the call may change the
    /// workspace. A failure is logged and the call still runs (losing a checkpoint must not
    /// stop the work).
    async fn before(&self, call: &ToolCall, read_only: bool) {
        if !self.service.changes_workspace(call, read_only) {
            return;
        }
        match self.take(call).await {
            Ok(number) => {
                tracing::debug!(key = %self.key, number, tool = %call.name, "checkpoint taken")
            }
            Err(err) => {
                tracing::warn!(key = %self.key, error = %err, "could not take a checkpoint; the call runs anyway")
            }
        }
    }
}

impl Checkpointer {
    /// Snapshot the workspace and record it; returns its number.
    async fn take(&self, call: &ToolCall) -> anyhow::Result<i64> {
        let all = self.store.checkpoints(&self.key).await?;
        let previous = all
            .last()
            .and_then(|c| serde_json::from_str::<Manifest>(&c.new.manifest).ok());
        let after_message = self.store.history_position(&self.key).await?;
        let (workspace, blobs) = (self.workspace.clone(), self.blobs.clone());
        let max_file = self.service.config.max_file_bytes;
        let (manifest, taken) = tokio::task::spawn_blocking(move || {
            snapshot::snapshot(&workspace, &blobs, previous.as_ref(), max_file)
        })
        .await??;
        tracing::debug!(
            copied = taken.copied,
            files = manifest.files.len(),
            "workspace snapshot"
        );
        let new = NewCheckpoint {
            created_at: self.service.clock.now_ms(),
            tool: call.name.clone(),
            summary: self.scrubber.scrub(&summarize(&call.args)).into_owned(),
            call_id: call.id.clone(),
            after_message,
            manifest: serde_json::to_string(&manifest)?,
        };
        let number = self.store.add_checkpoint(&self.key, &new).await?;
        self.prune().await?;
        Ok(number)
    }

    /// Drop the oldest checkpoints past the caps (never the newest), then the contents no
    /// kept checkpoint refers to.
    async fn prune(&self) -> anyhow::Result<()> {
        let config = self.service.config;
        let all = self.store.checkpoints(&self.key).await?;
        let manifests: Vec<Manifest> = all
            .iter()
            .map(|c| serde_json::from_str(&c.new.manifest).unwrap_or_default())
            .collect();
        let mut first = 0;
        while all.len() - first > 1
            && (all.len() - first > config.max_count.max(1)
                || stored_bytes(&manifests[first..]) > config.max_bytes)
        {
            first += 1;
        }
        let dropped: Vec<i64> = all[..first].iter().map(|c| c.number).collect();
        if !dropped.is_empty() {
            self.store.drop_checkpoints(&self.key, &dropped).await?;
            tracing::info!(key = %self.key, dropped = ?dropped, "oldest checkpoints dropped");
        }
        let keep: HashSet<String> = manifests[first..]
            .iter()
            .flat_map(|m| m.hashes().map(|(h, _)| h.to_owned()))
            .collect();
        let blobs = self.blobs.clone();
        tokio::task::spawn_blocking(move || {
            let keep: HashSet<&str> = keep.iter().map(String::as_str).collect();
            blobs.retain(&keep)
        })
        .await??;
        Ok(())
    }

    /// The checkpoints `/rewind` can go back to, oldest first.
    pub async fn list(&self) -> Result<Vec<Checkpoint>, crate::store::StoreError> {
        let all = self.store.checkpoints(&self.key).await?;
        Ok(all.into_iter().filter(|c| !c.reopened()).collect())
    }
}

/// Bytes of the distinct contents `manifests` refer to.
fn stored_bytes(manifests: &[Manifest]) -> u64 {
    let mut seen = HashSet::new();
    manifests
        .iter()
        .flat_map(Manifest::hashes)
        .filter(|(hash, _)| seen.insert(*hash))
        .map(|(_, size)| size)
        .sum()
}

/// A one-line view of a call's arguments: the path or command (else the first argument),
/// its first line, cut short.
fn summarize(args: &Value) -> String {
    let named = ["path", "command"].iter().find_map(|k| args.get(*k));
    let first = args.as_object().and_then(|o| o.values().next());
    let text = match named.or(first) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() > SUMMARY_CHARS {
        format!("{}…", line.chars().take(SUMMARY_CHARS).collect::<String>())
    } else {
        line.to_owned()
    }
}

#[cfg(test)]
mod tests;
