//! The draft renderer: turns a turn's `AgentEvent`s into one live message that grows as the
//! answer streams (throttled, coalesced), then into the final answer, split to the
//! platform's limit. Channel-agnostic: it only sees `Channel` and its `Limits`.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use switchboard_channel::{
    Button, Channel, ChannelError, ConversationKey, Limits, MessageRef, Outbound, fit_tail,
    split_message,
};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::agent::AgentEvent;
use crate::governor::Governor;
use crate::scrub::Scrubber;

/// Generic patterns only, for drafts built without the config's secrets.
static DEFAULT_SCRUBBER: std::sync::LazyLock<Arc<Scrubber>> =
    std::sync::LazyLock::new(|| Arc::new(Scrubber::default()));

/// Text that clears progress lines when it appears in the stream; never shown to users.
pub const CLEAR_SENTINEL: &str = "\x00CLEAR\x00";

/// Attempts at delivering one part of the final answer before giving up.
const FINAL_ATTEMPTS: u32 = 10;
/// Longest single wait for a platform's `retry_after` during the final delivery.
const MAX_FINAL_WAIT: Duration = Duration::from_secs(60);

/// Called with every message posted so far, so a restart edits them instead of reposting.
pub type PostedHook = Box<dyn Fn(Vec<MessageRef>) -> BoxFuture<'static, ()> + Send + Sync>;

/// How eagerly drafts are edited.
#[derive(Clone, Copy, Debug)]
pub struct DraftSettings {
    /// New characters needed before an intermediate edit.
    pub chunk_min_chars: usize,
    /// Minimum time between two edits (the channel's own minimum applies too).
    pub min_interval: Duration,
}

/// What the renderer did, for logs, metrics and tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DraftOutcome {
    /// Messages holding the final answer, in order.
    pub messages: Vec<MessageRef>,
    /// New messages posted.
    pub sends: u32,
    /// Edits made.
    pub edits: u32,
    /// Updates folded into a later edit instead of being sent.
    pub coalesced: u32,
    /// Platform 429s met.
    pub rate_limited: u32,
}

/// One live answer in one conversation.
pub struct Draft {
    channel: Arc<dyn Channel>,
    key: ConversationKey,
    limits: Limits,
    settings: DraftSettings,
    on_posted: Option<PostedHook>,
    answer: String,
    /// Progress lines by tool call id.
    progress: Vec<(String, String)>,
    shown: String,
    last_edit: Option<Instant>,
    paused_until: Option<Instant>,
    out: DraftOutcome,
    /// Nothing reaches the chat unscrubbed.
    scrubber: Arc<Scrubber>,
    /// Buttons for the last message of the final answer.
    buttons: Vec<Button>,
    /// The chat's shared send/edit budget.
    governor: Option<Arc<Governor>>,
    /// Id of this answer's ephemeral draft while the channel accepts drafts; `None` once it
    /// said no (or failed), and the draft is a real message edited in place.
    draft_id: Option<u64>,
}

impl Draft {
    /// A draft for `key`; `resume` holds messages an earlier attempt at this answer posted.
    pub fn new(
        channel: Arc<dyn Channel>,
        key: ConversationKey,
        settings: DraftSettings,
        resume: Vec<MessageRef>,
        on_posted: Option<PostedHook>,
    ) -> Self {
        let limits = channel.limits_for(&key);
        Self {
            channel,
            key,
            limits,
            settings,
            on_posted,
            answer: String::new(),
            progress: Vec::new(),
            shown: String::new(),
            last_edit: None,
            paused_until: None,
            out: DraftOutcome {
                messages: resume,
                ..DraftOutcome::default()
            },
            scrubber: Arc::clone(&DEFAULT_SCRUBBER),
            buttons: Vec::new(),
            governor: None,
            // Small enough for any JSON integer parser on the platform side.
            draft_id: Some(u64::from(rand::random::<u32>() | 1)),
        }
    }

    /// Spend from the chat's shared budget: intermediate edits only when it has room,
    /// final parts waiting for it.
    pub fn governed(mut self, governor: Arc<Governor>) -> Self {
        self.governor = Some(governor);
        self
    }

    /// Attach `buttons` to the last message of the final answer.
    pub fn with_buttons(mut self, buttons: Vec<Button>) -> Self {
        self.buttons = buttons;
        self
    }

    /// Scrub with `scrubber` (which knows the configured secrets) instead of the default.
    pub fn scrubbed(mut self, scrubber: Arc<Scrubber>) -> Self {
        self.scrubber = scrubber;
        self
    }

    /// Consume events until `Final` (or until the sender is dropped, which finishes with the
    /// text so far), then deliver the final answer.
    pub async fn drive(
        mut self,
        mut events: mpsc::UnboundedReceiver<AgentEvent>,
    ) -> Result<DraftOutcome, ChannelError> {
        loop {
            let deadline = self.flush_deadline();
            tokio::select! {
                event = events.recv() => match event {
                    Some(AgentEvent::Final(answer)) => return self.finish(&answer).await,
                    Some(event) => {
                        self.apply(event);
                        self.flush_if_due().await;
                    }
                    None => {
                        let answer = std::mem::take(&mut self.answer);
                        return self.finish(&answer).await;
                    }
                },
                () = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                    self.flush_if_due().await;
                }
            }
        }
    }

    fn apply(&mut self, event: AgentEvent) {
        match event {
            AgentEvent::TextChunk(text) => {
                if text.contains(CLEAR_SENTINEL) {
                    self.progress.clear();
                }
                self.answer.push_str(&text.replace(CLEAR_SENTINEL, ""));
            }
            AgentEvent::ToolStarted {
                id, name, summary, ..
            } => {
                self.progress.push((id, format!("⏳ {name}: {summary}")));
            }
            AgentEvent::ToolCompleted {
                id,
                name,
                success,
                duration,
                error,
                ..
            } => {
                let secs = duration.as_secs_f64();
                let line = match (success, error) {
                    (true, _) => format!("✅ {name} ({secs:.1} s)"),
                    (false, e) => format!("❌ {name} ({secs:.1} s): {}", e.unwrap_or_default()),
                };
                match self.progress.iter_mut().find(|(pid, _)| *pid == id) {
                    Some(slot) => slot.1 = line,
                    None => self.progress.push((id, line)),
                }
            }
            AgentEvent::ClearProgress => self.progress.clear(),
            AgentEvent::Final(_)
            | AgentEvent::ApprovalRequested { .. }
            | AgentEvent::ApprovalResolved { .. } => {}
        }
    }

    fn progress_text(&self) -> String {
        let lines: Vec<&str> = self.progress.iter().map(|(_, l)| l.as_str()).collect();
        lines.join("\n")
    }

    fn visible(&self) -> String {
        let text = match (self.progress.is_empty(), self.answer.trim().is_empty()) {
            (true, _) => self.answer.clone(),
            (false, true) => self.progress_text(),
            (false, false) => format!("{}\n\n{}", self.progress_text(), self.answer),
        };
        self.scrubber.scrub(&text).into_owned()
    }

    fn interval(&self) -> Duration {
        self.settings
            .min_interval
            .max(self.limits.min_edit_interval)
    }

    /// When the pending update may go out, or `None` when nothing is waiting to be shown.
    fn flush_deadline(&self) -> Option<Instant> {
        let visible = self.visible();
        if visible.trim().is_empty() || visible == self.shown {
            return None;
        }
        if self.out.messages.is_empty() && self.last_edit.is_none() {
            return Some(self.paused_until.unwrap_or_else(Instant::now));
        }
        let grown = visible
            .chars()
            .count()
            .saturating_sub(self.shown.chars().count());
        let progress_changed =
            !self.progress.is_empty() && !self.shown.starts_with(&self.progress_text());
        if grown < self.settings.chunk_min_chars && !progress_changed {
            return None;
        }
        let after_interval = self
            .last_edit
            .map_or_else(Instant::now, |t| t + self.interval());
        Some(
            self.paused_until
                .map_or(after_interval, |p| p.max(after_interval)),
        )
    }

    async fn flush_if_due(&mut self) {
        match self.flush_deadline() {
            Some(at) if at <= Instant::now() => {}
            Some(_) => {
                self.out.coalesced += 1;
                return;
            }
            None => return,
        }
        if let Some(g) = &self.governor
            && !g.try_intermediate(&self.key, &self.limits)
        {
            // No room in the chat's budget: fold this update into a later edit.
            self.out.coalesced += 1;
            self.paused_until = Some(Instant::now() + g.intermediate_wait(&self.key, &self.limits));
            return;
        }
        let visible = self.visible();
        let text = fit_tail(
            &visible,
            self.limits.max_message_len,
            self.limits.length_unit,
        );
        if let Some(id) = self.draft_id.filter(|_| self.out.messages.is_empty()) {
            match self
                .channel
                .draft(&self.key, id, &Outbound::text(text.clone()))
                .await
            {
                Ok(true) => {
                    self.out.edits += 1;
                    self.last_edit = Some(Instant::now());
                    self.shown = visible;
                    return;
                }
                Ok(false) => self.draft_id = None,
                Err(err) => {
                    tracing::debug!(key = %self.key, error = %err, "draft refused; editing a message instead");
                    self.draft_id = None;
                }
            }
        }
        let result = match self.out.messages.first().cloned() {
            Some(existing) => self
                .channel
                .edit(&self.key, &existing, &Outbound::text(text))
                .await
                .map(|()| self.out.edits += 1),
            None => match self.channel.send(&self.key, &Outbound::text(text)).await {
                Ok(posted) => {
                    self.out.sends += 1;
                    self.out.messages.push(posted);
                    self.report_posted().await;
                    Ok(())
                }
                Err(e) => Err(e),
            },
        };
        self.last_edit = Some(Instant::now());
        match result {
            Ok(()) => self.shown = visible,
            Err(ChannelError::RateLimited { retry_after }) => {
                self.out.rate_limited += 1;
                self.paused_until = Some(Instant::now() + retry_after);
                if let Some(g) = &self.governor {
                    g.pause(&self.key, &self.limits, retry_after);
                }
            }
            Err(ChannelError::NotFound(_)) => self.out.messages.clear(),
            Err(err) => tracing::warn!(key = %self.key, error = %err, "draft update failed"),
        }
    }

    async fn report_posted(&self) {
        if let Some(hook) = &self.on_posted {
            hook(self.out.messages.clone()).await;
        }
    }

    /// Deliver the final answer: edit the draft into the first part, post the rest, and
    /// delete leftovers of an earlier, longer attempt.
    pub async fn finish(mut self, answer: &str) -> Result<DraftOutcome, ChannelError> {
        let answer = self
            .scrubber
            .scrub(&answer.replace(CLEAR_SENTINEL, ""))
            .into_owned();
        let answer = if answer.trim().is_empty() {
            "_(no answer)_".to_owned()
        } else {
            answer
        };
        let max = self.limits.max_message_len;
        let mut parts: VecDeque<String> =
            split_message(&answer, max, self.limits.length_unit).into();
        let mut index = 0;
        while let Some(part) = parts.pop_front() {
            let buttons = if parts.is_empty() {
                self.buttons.clone()
            } else {
                Vec::new()
            };
            match self.deliver_part(index, &part, buttons).await {
                Err(ChannelError::TooLong) if part.chars().count() > 1 => {
                    // The platform measured differently than we did: halve and go on.
                    let smaller =
                        split_message(&part, part.chars().count() / 2 + 1, self.limits.length_unit);
                    for p in smaller.into_iter().rev() {
                        parts.push_front(p);
                    }
                    continue;
                }
                other => other?,
            }
            index += 1;
        }
        for stale in self.out.messages.split_off(index) {
            let _ = self.channel.delete(&self.key, &stale).await;
        }
        Ok(self.out)
    }

    /// Put `text` into message `index` (editing one posted earlier, or posting it),
    /// waiting out rate limits and retrying transient failures.
    async fn deliver_part(
        &mut self,
        index: usize,
        text: &str,
        buttons: Vec<Button>,
    ) -> Result<(), ChannelError> {
        let has_buttons = !buttons.is_empty();
        let msg = Outbound {
            text: text.to_owned(),
            buttons,
        };
        let mut attempt = 0;
        loop {
            self.wait_for_budget().await;
            if let Some(g) = &self.governor {
                g.take(&self.key, &self.limits).await;
            }
            let existing = self.out.messages.get(index).cloned();
            let result = match &existing {
                Some(existing) if index > 0 || self.shown != text || has_buttons => self
                    .channel
                    .edit(&self.key, existing, &msg)
                    .await
                    .map(|()| self.out.edits += 1),
                Some(_) => Ok(()),
                None => self.channel.send(&self.key, &msg).await.map(|posted| {
                    self.out.sends += 1;
                    self.out.messages.push(posted);
                }),
            };
            self.last_edit = Some(Instant::now());
            attempt += 1;
            match result {
                Ok(()) => {
                    if existing.is_none() {
                        self.report_posted().await;
                    }
                    return Ok(());
                }
                Err(ChannelError::RateLimited { retry_after }) if attempt < FINAL_ATTEMPTS => {
                    self.out.rate_limited += 1;
                    if let Some(g) = &self.governor {
                        g.pause(&self.key, &self.limits, retry_after);
                    }
                    self.paused_until = Some(Instant::now() + retry_after.min(MAX_FINAL_WAIT));
                }
                Err(ChannelError::Transient(e)) if attempt < FINAL_ATTEMPTS => {
                    tracing::warn!(key = %self.key, error = %e, attempt, "final answer delivery failed, retrying");
                    self.paused_until =
                        Some(Instant::now() + Duration::from_millis(250 << attempt.min(6)));
                }
                Err(ChannelError::NotFound(_)) if existing.is_some() => {
                    // The draft was deleted under us: post this part as a new message.
                    self.out.messages.truncate(index);
                }
                Err(err) => return Err(err),
            }
        }
    }

    async fn wait_for_budget(&self) {
        let interval_end = self.last_edit.map(|t| t + self.limits.min_edit_interval);
        let until = match (interval_end, self.paused_until) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        if let Some(until) = until {
            tokio::time::sleep_until(until).await;
        }
    }
}
