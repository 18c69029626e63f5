//! The final answer: scrubbed, split to the platform's limit, every part delivered (rate
//! limits waited out, transient failures retried, a deleted draft reposted).

use std::collections::VecDeque;
use std::time::Duration;

use switchboard_channel::{Button, ChannelError, Outbound, split_message};
use tokio::time::Instant;

use super::{CLEAR_SENTINEL, Draft, DraftOutcome};

/// Attempts at delivering one part of the final answer before giving up.
const FINAL_ATTEMPTS: u32 = 10;
/// Longest single wait for a platform's `retry_after` during the final delivery.
const MAX_FINAL_WAIT: Duration = Duration::from_secs(60);

impl Draft {
    /// Deliver the final answer: edit the draft into the first part, post the rest, and
    /// delete leftovers of an earlier, longer attempt.
    pub async fn finish(mut self, answer: &str) -> Result<DraftOutcome, ChannelError> {
        if !self.edits() {
            return self.finish_pieces(answer).await;
        }
        let answer = self
            .scrubber
            .scrub(&answer.replace(CLEAR_SENTINEL, ""))
            .into_owned();
        let answer = if answer.trim().is_empty() {
            "_(no answer)_".to_owned()
        } else {
            answer
        };
        // The final answer keeps the plan on top (split like the rest when it is long).
        let answer = self.under_plan(&answer);
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
    pub(super) async fn deliver_part(
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

    /// Sleep until the channel's edit interval and any platform pause have passed.
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
