//! Intermediate draft updates: when the next edit is due, and sending it through the
//! platform's native draft, an edit in place, or a first post.

use std::time::Duration;

use switchboard_channel::{ChannelError, Outbound, fit_tail};
use tokio::time::Instant;

use super::Draft;

impl Draft {
    /// The longer of our own pacing and the channel's minimum edit interval.
    fn interval(&self) -> Duration {
        self.settings
            .min_interval
            .max(self.limits.min_edit_interval)
    }

    /// When the pending update may go out, or `None` when nothing is waiting to be shown.
    pub(super) fn flush_deadline(&self) -> Option<Instant> {
        if !self.edits() {
            // Pieces go out as events arrive (`flush_if_due`), never on a timer.
            return None;
        }
        if self.edits_left == Some(0) && !self.out.messages.is_empty() {
            // The message's edits are spent but for the final one: the rest waits for it.
            return None;
        }
        let visible = self.visible();
        if visible.trim().is_empty() || visible == self.shown {
            return None;
        }
        if self.out.messages.is_empty() && self.last_edit.is_none() {
            let first = self.first_send_at(&visible);
            return Some(self.paused_until.map_or(first, |p| p.max(first)));
        }
        let grown = visible
            .chars()
            .count()
            .saturating_sub(self.shown.chars().count());
        let progress_changed = !self.progress.is_empty()
            && !self
                .shown
                .starts_with(&self.under_plan(&self.progress_text()));
        let plan_changed = !self.shown.starts_with(&self.top_text());
        if grown < self.settings.chunk_min_chars && !progress_changed && !plan_changed {
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

    /// When the first update may go out: at once for progress or plan lines, or once the
    /// answer reaches the chunk threshold; otherwise when the hold after its first text ends.
    fn first_send_at(&self, visible: &str) -> Instant {
        let now = Instant::now();
        if !self.progress.is_empty() || self.plan.is_some() {
            return now;
        }
        if visible.chars().count() >= self.settings.chunk_min_chars {
            return now;
        }
        self.first_text_at
            .map_or(now, |t| t + self.settings.first_send_hold)
    }

    /// Send the pending update if its time has come and the chat's budget has room;
    /// otherwise count it as coalesced into a later edit.
    pub(super) async fn flush_if_due(&mut self) {
        if !self.edits() {
            self.flush_chunk().await;
            return;
        }
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
        // The plan stays on top; the streamed body gives up its oldest part to make room.
        let plan = self.plan_text();
        let room = self.limits.max_message_len - plan.encode_utf16().count();
        let body = fit_tail(
            &self.body(),
            room.saturating_sub(2),
            self.limits.length_unit,
        );
        let text = self.under_plan(&body);
        if self.try_native_draft(&text).await {
            self.shown = visible;
            return;
        }
        let result = self.post_or_edit(text).await;
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

    /// Show `text` as the platform's own ephemeral draft while nothing is posted yet and the
    /// channel accepts drafts; `false` means "post or edit a real message instead".
    async fn try_native_draft(&mut self, text: &str) -> bool {
        let Some(id) = self.draft_id.filter(|_| self.out.messages.is_empty()) else {
            return false;
        };
        match self
            .channel
            .draft(&self.key, id, &Outbound::text(text.to_owned()))
            .await
        {
            Ok(true) => {
                self.out.edits += 1;
                self.last_edit = Some(Instant::now());
                return true;
            }
            Ok(false) => {}
            Err(err) => {
                tracing::debug!(key = %self.key, error = %err, "draft refused; editing a message instead");
            }
        }
        self.draft_id = None;
        false
    }

    /// Edit the draft message in place, or post it when there is none yet.
    async fn post_or_edit(&mut self, text: String) -> Result<(), ChannelError> {
        match self.out.messages.first().cloned() {
            Some(existing) => self
                .channel
                .edit(&self.key, &existing, &Outbound::text(text))
                .await
                .map(|()| {
                    self.out.edits += 1;
                    self.edits_left = self.edits_left.map(|n| n.saturating_sub(1));
                }),
            None => {
                let posted = self.channel.send(&self.key, &Outbound::text(text)).await?;
                self.out.sends += 1;
                self.out.messages.push(posted);
                self.report_posted().await;
                Ok(())
            }
        }
    }

    /// Tell the caller which messages hold the answer so far (kept for a restart).
    pub(super) async fn report_posted(&self) {
        if let Some(hook) = &self.on_posted {
            hook(self.out.messages.clone()).await;
        }
    }
}
