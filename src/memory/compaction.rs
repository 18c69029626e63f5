//! Auto-compaction: when a conversation's history outgrows `max_history_messages` or
//! `max_history_chars` (a few large messages count as much as many small ones), the older
//! part is summarised by the model (or, if that fails, digested deterministically) and
//! replaced by one summary message; the newest messages stay verbatim and an assistant's
//! tool call is never separated from its results. Runs between turns, never mid-turn.

use switchboard_channel::ConversationKey;

use super::SUMMARY_HEADER;
use crate::clock::Clock;
use crate::config::MemoryConfig;
use crate::provider::{ChatMessage, ChatRequest, Provider, Role, StreamEvent};
use crate::store::Store;

/// What compaction did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compaction {
    /// The history was short enough.
    NotNeeded,
    /// Older messages were summarised by the model.
    Summarised {
        /// Messages folded into the summary.
        replaced: usize,
        /// Recent messages kept verbatim.
        kept: usize,
    },
    /// The summariser failed; a digest of first lines replaced them.
    Digested {
        /// Messages folded into the digest.
        replaced: usize,
        /// Recent messages kept verbatim.
        kept: usize,
    },
}

const PROMPT: &str = "Summarise the conversation below for your own future reference. Keep: decisions made, \
open problems, facts about the user (names, preferences, setup), and the current task and its state. \
Be concise; plain sentences or bullets; no preamble.";

/// Messages of history stored with at most this many characters each in the source.
const PER_MESSAGE_CHARS: usize = 600;

/// Compact `key`'s history if it is over the limit. Returns what it did and the history as
/// it now stands (oldest first), which the turn's context is cut from without reading it
/// again.
pub async fn compact_if_needed(
    store: &dyn Store,
    provider: &dyn Provider,
    key: &ConversationKey,
    config: &MemoryConfig,
    clock: &Clock,
) -> anyhow::Result<(Compaction, Vec<ChatMessage>)> {
    let history = store.history(key, usize::MAX >> 1).await?;
    let total = history.iter().filter(|m| m.role != Role::System).count();
    let chars: usize = history.iter().map(size).sum();
    let oversized = chars > config.max_history_chars;
    if total <= config.max_history_messages && !oversized {
        return Ok((Compaction::NotNeeded, history));
    }
    let mut split = history.len().saturating_sub(config.compaction_keep_recent);
    // Never open the kept part on tool results: their call must stay with them.
    while split > 0 && split < history.len() && history[split].role == Role::Tool {
        split -= 1;
    }
    if oversized {
        split = split.max(split_by_size(&history, config.max_history_chars / 2));
    }
    let (older, recent) = history.split_at(split);
    if older.is_empty() {
        return Ok((Compaction::NotNeeded, history));
    }
    let source = source_text(older, config.compaction_source_chars);
    let (summary, summarised) = match summarise(provider, &source).await {
        Ok(text) if !text.trim().is_empty() => (text, true),
        Ok(_) => (digest(older), false),
        Err(err) => {
            tracing::warn!(%key, error = %err, "summarising the history failed; using a digest");
            (digest(older), false)
        }
    };
    let summary = format!(
        "{SUMMARY_HEADER}\n{}",
        cap(summary.trim(), config.summary_max_chars)
    );
    let mut replacement = vec![ChatMessage::new(Role::System, summary)];
    replacement.extend(recent.iter().cloned());
    store
        .replace_history(key, &replacement, clock.now_ms())
        .await?;
    let (replaced, kept) = (older.len(), recent.len());
    tracing::info!(%key, replaced, kept, summarised, "history compacted");
    let done = if summarised {
        Compaction::Summarised { replaced, kept }
    } else {
        Compaction::Digested { replaced, kept }
    };
    Ok((done, replacement))
}

/// Characters a message adds to a request (its text and its calls' arguments).
fn size(m: &ChatMessage) -> usize {
    m.content.len()
        + m.tool_calls
            .iter()
            .map(|c| c.name.len() + c.args.to_string().len())
            .sum::<usize>()
}

/// Where the kept part starts when only the newest messages within `budget` characters stay
/// verbatim (a few large messages are summarised too); it never opens on tool results,
/// so those go with their call into the summary.
fn split_by_size(history: &[ChatMessage], budget: usize) -> usize {
    let (mut at, mut kept) = (history.len(), 0);
    while at > 0 && kept + size(&history[at - 1]) <= budget {
        at -= 1;
        kept += size(&history[at]);
    }
    while at < history.len() && history[at].role == Role::Tool {
        at += 1;
    }
    at
}

/// The older messages as a transcript, each cut to a share, the whole capped at `max` chars
/// (keeping its beginning and its end).
fn source_text(older: &[ChatMessage], max: usize) -> String {
    let text: String = older
        .iter()
        .map(|m| {
            format!(
                "{}: {}\n",
                m.role.as_str(),
                cap(&m.content, PER_MESSAGE_CHARS)
            )
        })
        .collect();
    if text.chars().count() <= max {
        return text;
    }
    let head: String = text.chars().take(max / 3).collect();
    let tail: Vec<char> = text.chars().rev().take(max - max / 3).collect();
    format!(
        "{head}\n[…]\n{}",
        tail.into_iter().rev().collect::<String>()
    )
}

async fn summarise(provider: &dyn Provider, source: &str) -> anyhow::Result<String> {
    let request = ChatRequest {
        messages: vec![
            ChatMessage::new(Role::System, PROMPT),
            ChatMessage::new(Role::User, source),
        ],
        tools: Default::default(),
    };
    let mut stream = provider.stream(&request).await?;
    let mut text = String::new();
    while let Some(event) = stream.next().await {
        match event? {
            StreamEvent::TextDelta(t) => text.push_str(&t),
            StreamEvent::Done { .. } => return Ok(text),
            StreamEvent::ToolCall(_) => {}
        }
    }
    anyhow::bail!("the summary stream ended early")
}

/// The deterministic fallback: the first line of each older message.
fn digest(older: &[ChatMessage]) -> String {
    older
        .iter()
        .filter(|m| !m.content.trim().is_empty())
        .map(|m| {
            format!(
                "- {}: {}",
                m.role.as_str(),
                cap(m.content.lines().next().unwrap_or_default(), 160)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn cap(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}
