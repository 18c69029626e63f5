//! `/rewind` in chat: the list of checkpoints (with a button each where the channel has
//! buttons), and `/rewind N`: restore the files, cut the history, audit it, and say what
//! was done and what was left as it is.

use std::time::Instant;

use switchboard_channel::Button;

use super::snapshot::Manifest;
use super::{Checkpointer, restore};
use crate::command::RewindButton;
use crate::store::{AuditEntry, Checkpoint};

/// Checkpoints listed by `/rewind`.
const LISTED: usize = 10;
/// Of those, the newest this many get a button.
const BUTTONS: usize = 5;
/// Skipped paths named in a restore's answer.
const NAMED: usize = 5;

/// What a person sees after `/rewind`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reply {
    /// Markdown text.
    pub text: String,
    /// One button per recent checkpoint (listing only).
    pub buttons: Vec<Button>,
}

impl Reply {
    fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            buttons: Vec::new(),
        }
    }
}

/// Answer when checkpoints are turned off.
pub const DISABLED: &str = "Checkpoints are turned off on this gateway.";
/// Answer when the database or the files failed (the detail is logged).
const TRY_AGAIN: &str = "I could not rewind just now; try again in a moment.";

/// Who asked, for the audit log.
pub struct Asker<'a> {
    /// The person's platform id.
    pub user: &'a str,
    /// The inbox event of the command.
    pub inbox_id: i64,
}

impl Checkpointer {
    /// `/rewind` (`None`: the list) or `/rewind N`.
    pub async fn answer(&self, number: Option<i64>, asker: Asker<'_>) -> Reply {
        let outcome = match number {
            None => self.listing().await,
            Some(n) => self.rewind(n, asker).await,
        };
        outcome.unwrap_or_else(|err| {
            tracing::warn!(key = %self.key, error = %err, "/rewind failed");
            Reply::text(TRY_AGAIN)
        })
    }

    async fn listing(&self) -> anyhow::Result<Reply> {
        let all = self.list().await?;
        if all.is_empty() {
            return Ok(Reply::text(
                "No checkpoints yet: I take one before each tool call that changes files here.",
            ));
        }
        let shown = &all[all.len().saturating_sub(LISTED)..];
        let mut text = String::from("⏪ Checkpoints (newest last):\n");
        for c in shown {
            text.push_str(&format!(
                "• `#{}` {} — {}\n",
                c.number,
                when(c.new.created_at),
                followed(c)
            ));
        }
        text.push_str("\n`/rewind N` puts the files back as they were at checkpoint N and forgets the conversation from that call on.");
        let buttons = shown
            .iter()
            .rev()
            .take(BUTTONS)
            .map(|c| Button {
                label: format!("⏪ #{}", c.number),
                payload: RewindButton { number: c.number }.to_string(),
            })
            .collect();
        Ok(Reply { text, buttons })
    }

    async fn rewind(&self, number: i64, asker: Asker<'_>) -> anyhow::Result<Reply> {
        let started = Instant::now();
        let all = self.list().await?;
        let Some(checkpoint) = all.into_iter().find(|c| c.number == number) else {
            return Ok(Reply::text(format!(
                "There is no checkpoint #{number} here; `/rewind` lists them."
            )));
        };
        let manifest: Manifest = serde_json::from_str(&checkpoint.new.manifest)?;
        let (workspace, owner, blobs) = (self.workspace.clone(), self.owner, self.blobs.clone());
        let plan = manifest.clone();
        let restored =
            tokio::task::spawn_blocking(move || restore::restore(&workspace, owner, &plan, &blobs))
                .await??;
        let cut = self.store.rewind_to(&self.key, &checkpoint).await?;
        let mut text = format!(
            "⏪ Restored the files to checkpoint #{number} (before {}): {} written, {} removed.",
            followed(&checkpoint),
            restored.written,
            restored.removed
        );
        text.push_str(match cut {
            Some(_) => " The conversation now ends before that call.",
            None => " That call is no longer in the conversation's history (compacted or cleared), so the history was left as it is.",
        });
        let skipped: Vec<String> = manifest
            .skipped
            .iter()
            .map(|(p, why)| format!("`{p}` ({why})"))
            .collect();
        note(
            &mut text,
            "Left as they are, not in the checkpoint",
            &skipped,
        );
        let failed: Vec<String> = restored
            .failed
            .iter()
            .map(|(p, why)| format!("`{p}` ({why})"))
            .collect();
        note(&mut text, "Could not be put back", &failed);
        self.audit(&checkpoint, &asker, &text, started).await;
        Ok(Reply::text(text))
    }

    /// Record the restore in the audit log (a failure to record is logged).
    async fn audit(
        &self,
        checkpoint: &Checkpoint,
        asker: &Asker<'_>,
        text: &str,
        started: Instant,
    ) {
        let entry = AuditEntry {
            conversation: self.key.clone(),
            inbox_id: Some(asker.inbox_id),
            tool: "rewind".into(),
            call_id: checkpoint.new.call_id.clone(),
            args: serde_json::json!({ "checkpoint": checkpoint.number }).to_string(),
            decision: format!("allow (user {}): /rewind {}", asker.user, checkpoint.number),
            decided_by: Some(asker.user.to_owned()),
            status: "ok".into(),
            duration_ms: started.elapsed().as_millis() as i64,
            output: text.to_owned(),
            created_at: self.service.clock.now_ms(),
        };
        if let Err(err) = self.store.record_audit(&entry).await {
            tracing::warn!(error = %err, "could not audit a rewind");
        }
    }
}

/// "`tool` summary": the call that followed a checkpoint.
fn followed(c: &Checkpoint) -> String {
    if c.new.summary.is_empty() {
        format!("`{}`", c.new.tool)
    } else {
        format!("`{}` {}", c.new.tool, c.new.summary.replace('`', "'"))
    }
}

/// A checkpoint's time, `HH:MM UTC` with its date.
fn when(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.strftime("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_default()
}

/// Append "label: a, b, … and N more." when `items` is not empty.
fn note(text: &mut String, label: &str, items: &[String]) {
    if items.is_empty() {
        return;
    }
    let named = items[..items.len().min(NAMED)].join(", ");
    let more = items.len().saturating_sub(NAMED);
    let rest = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    text.push_str(&format!("\n{label}: {named}{rest}."));
}
