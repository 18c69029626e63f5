//! Answers on platforms that cannot edit a sent message (`AnswerDelivery::Chunks` and
//! `Whole`): no live draft. In chunked mode each run of finished paragraphs goes out as its
//! own message once enough of it waits (never inside a code fence); whatever is left, or the
//! whole answer, goes out when the turn ends.

use switchboard_channel::{AnswerDelivery, Button, ChannelError, split_message};

use super::{CLEAR_SENTINEL, Draft, DraftOutcome};

impl Draft {
    /// Whether this platform edits sent messages (the draft then streams by editing).
    pub(super) fn edits(&self) -> bool {
        matches!(self.limits.delivery, AnswerDelivery::Edits { .. })
    }

    /// Where the finished paragraphs ready to go out end in the raw answer, in chunked mode:
    /// the last paragraph break outside a code fence, once at least `min_chunk` characters
    /// wait before it. The settled part only: a held-back tail may still become a secret.
    fn ready_chunk(&self) -> Option<usize> {
        let AnswerDelivery::Chunks { min_chunk } = self.limits.delivery else {
            return None;
        };
        let settled = self.holdback.settled(&self.scrubber, &self.answer);
        let end = last_break(settled, self.chunked)?;
        (settled[self.chunked..end].trim().chars().count() >= min_chunk).then_some(end)
    }

    /// Send the finished paragraphs waiting, if enough wait, as new messages. A failure keeps
    /// them waiting: the end of the turn sends them with the rest.
    pub(super) async fn flush_chunk(&mut self) {
        let Some(end) = self.ready_chunk() else {
            return;
        };
        let text = self
            .scrubber
            .scrub(self.answer[self.chunked..end].trim())
            .into_owned();
        let text = self.headed_if_first(text);
        match self.deliver_pieces(&text, Vec::new()).await {
            Ok(()) => self.chunked = end,
            Err(err) => {
                tracing::warn!(key = %self.key, error = %err, "answer chunk not delivered; sending it at the end")
            }
        }
    }

    /// The end of the turn without edits: everything not yet sent, as new messages, the
    /// buttons on the last. An answer the stream did not foretell is sent whole.
    pub(super) async fn finish_pieces(
        mut self,
        answer: &str,
    ) -> Result<DraftOutcome, ChannelError> {
        let answer = answer.replace(CLEAR_SENTINEL, "");
        let rest = match answer.strip_prefix(&self.answer[..self.chunked]) {
            Some(rest) => rest,
            None => {
                tracing::warn!(key = %self.key, "final answer differs from the chunks sent; sending it whole");
                self.chunked = 0;
                &answer
            }
        };
        let rest = self.scrubber.scrub(rest.trim()).into_owned();
        if rest.is_empty() && self.chunked > 0 {
            return Ok(self.out);
        }
        let rest = if rest.is_empty() {
            "_(no answer)_".to_owned()
        } else {
            rest
        };
        let text = self.headed_if_first(rest);
        let buttons = std::mem::take(&mut self.buttons);
        self.deliver_pieces(&text, buttons).await?;
        Ok(self.out)
    }

    /// The first message of an answer carries the heading and the plan.
    fn headed_if_first(&self, text: String) -> String {
        if self.chunked == 0 {
            self.under_plan(&text)
        } else {
            text
        }
    }

    /// Post `text` as new messages split to the platform's limit, `buttons` on the last.
    async fn deliver_pieces(
        &mut self,
        text: &str,
        buttons: Vec<Button>,
    ) -> Result<(), ChannelError> {
        let parts = split_message(text, self.limits.max_message_len, self.limits.length_unit);
        let last = parts.len().saturating_sub(1);
        for (i, part) in parts.iter().enumerate() {
            let buttons = if i == last {
                buttons.clone()
            } else {
                Vec::new()
            };
            self.deliver_part(self.out.messages.len(), part, buttons)
                .await?;
        }
        Ok(())
    }
}

/// The end of the last paragraph break (a blank line) in `text` after byte `from` that lies
/// outside a code fence, when there is text before it.
fn last_break(text: &str, from: usize) -> Option<usize> {
    let mut in_fence = false;
    let mut best = None;
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        let start = pos;
        pos += line.len();
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        } else if !in_fence && start > from && line.trim().is_empty() && line.ends_with('\n') {
            best = Some(pos);
        }
    }
    best
}
