//! The draft renderer: turns a turn's `AgentEvent`s into one live message that grows as the
//! answer streams (throttled, coalesced), then into the final answer, split to the
//! platform's limit. Channel-agnostic: it only sees `Channel` and its `Limits`, whose
//! `delivery` says whether it may edit: `flush.rs` sends intermediate updates, `finish.rs`
//! the final answer, `chunks.rs` the pieces of an answer on a platform without edits.

mod chunks;
mod finish;
mod flush;

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use switchboard_channel::{Button, Channel, ChannelError, ConversationKey, Limits, MessageRef};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::agent::AgentEvent;
use crate::agent::plan::Plan;
use crate::governor::Governor;
use crate::scrub::{Holdback, Scrubber};

/// Generic patterns only, for drafts built without the config's secrets.
static DEFAULT_SCRUBBER: std::sync::LazyLock<Arc<Scrubber>> =
    std::sync::LazyLock::new(|| Arc::new(Scrubber::default()));

/// Text that clears progress lines when it appears in the stream; never shown to users.
pub const CLEAR_SENTINEL: &str = "\x00CLEAR\x00";

/// Called with every message posted so far, so a restart edits them instead of reposting.
pub type PostedHook = Box<dyn Fn(Vec<MessageRef>) -> BoxFuture<'static, ()> + Send + Sync>;

/// How eagerly drafts are edited.
#[derive(Clone, Copy, Debug)]
pub struct DraftSettings {
    /// New characters needed before an intermediate edit.
    pub chunk_min_chars: usize,
    /// Minimum time between two edits (the channel's own minimum applies too).
    pub min_interval: Duration,
    /// The first send of an answer waits this long after its first text unless the text
    /// reaches `chunk_min_chars` sooner, so a short answer goes out whole, in one send.
    pub first_send_hold: Duration,
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
    /// The streamed answer's undecided tail (a credential's possible start) stays out of
    /// every intermediate update; `finish` scrubs the whole answer.
    holdback: Holdback,
    /// Progress lines by tool call id.
    progress: Vec<(String, String)>,
    /// The live plan: the last checklist a `todo` call set, shown above everything else
    /// (in every update and in the final answer).
    plan: Option<Plan>,
    /// `todo` calls started but not yet completed, by call id.
    proposed: Vec<(String, Plan)>,
    shown: String,
    /// When the answer's first text arrived: the first send is held from here.
    first_text_at: Option<Instant>,
    last_edit: Option<Instant>,
    paused_until: Option<Instant>,
    out: DraftOutcome,
    /// Nothing reaches the chat unscrubbed.
    scrubber: Arc<Scrubber>,
    /// A line above everything else (a voice note's transcript), set by [`Draft::headed`].
    heading: Option<String>,
    /// Buttons for the last message of the final answer.
    buttons: Vec<Button>,
    /// The chat's shared send/edit budget.
    governor: Option<Arc<Governor>>,
    /// Id of this answer's ephemeral draft while the channel accepts drafts; `None` once it
    /// said no (or failed), and the draft is a real message edited in place.
    draft_id: Option<u64>,
    /// Bytes of `answer` already sent as finished pieces, on a platform without edits.
    chunked: usize,
    /// Edits the posted draft message took, against `AnswerDelivery::Edits`' cap.
    draft_edits: u32,
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
            holdback: Holdback::default(),
            progress: Vec::new(),
            plan: None,
            proposed: Vec::new(),
            shown: String::new(),
            first_text_at: None,
            last_edit: None,
            paused_until: None,
            out: DraftOutcome {
                messages: resume,
                ..DraftOutcome::default()
            },
            scrubber: Arc::clone(&DEFAULT_SCRUBBER),
            heading: None,
            buttons: Vec::new(),
            governor: None,
            // Small enough for any JSON integer parser on the platform side.
            draft_id: Some(u64::from(rand::random::<u32>() | 1)),
            chunked: 0,
            draft_edits: 0,
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

    /// Head the answer with `line` (a voice note's transcript), in every update and in the
    /// final answer's first message: one message, not a notice before it. Scrubbed like the
    /// answer.
    pub fn headed(mut self, line: &str) -> Self {
        self.heading = Some(self.scrubber.scrub(line).into_owned());
        self
    }

    /// Scrub with `scrubber` (which knows the configured secrets) instead of the default.
    pub fn scrubbed(mut self, scrubber: Arc<Scrubber>) -> Self {
        self.scrubber = scrubber;
        self
    }

    /// Consume events until `Final` (or until the sender is dropped, which finishes with the
    /// text so far), then deliver the final answer. The events come boxed: an unbounded
    /// channel allocates room for 32 of them when it is made, and a live turn then holds 32
    /// pointers instead of 32 events.
    pub async fn drive(
        mut self,
        mut events: mpsc::UnboundedReceiver<Box<AgentEvent>>,
    ) -> Result<DraftOutcome, ChannelError> {
        loop {
            let deadline = self.flush_deadline();
            tokio::select! {
                event = events.recv() => match event.map(|e| *e) {
                    // Boxed: the end's space is needed once, the wait's for the whole turn.
                    Some(AgentEvent::Final(answer)) => return Box::pin(self.finish(&answer)).await,
                    Some(event) => {
                        self.apply(event);
                        self.flush_if_due().await;
                    }
                    None => {
                        // A copy: the pieces already sent are a prefix of it.
                        let answer = self.answer.clone();
                        return Box::pin(self.finish(&answer)).await;
                    }
                },
                () = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                    self.flush_if_due().await;
                }
            }
        }
    }

    /// Whether `id` is a call that proposed a plan not yet settled.
    fn proposes(&self, id: &str) -> bool {
        self.proposed.iter().any(|(pid, _)| pid == id)
    }

    fn apply(&mut self, event: AgentEvent) {
        match event {
            AgentEvent::TextChunk(text) => self.push_text(&text),
            AgentEvent::PlanProposed { id, plan } => self.proposed.push((id, plan)),
            // A plan's own call shows as the plan, not as a progress line.
            AgentEvent::ToolStarted { id, .. } if self.proposes(&id) => {}
            AgentEvent::ToolCompleted { id, success, .. } if self.proposes(&id) => {
                if let Some(at) = self.proposed.iter().position(|(pid, _)| *pid == id) {
                    let (_, plan) = self.proposed.remove(at);
                    if success {
                        // An empty list takes the plan away.
                        self.plan = Some(plan).filter(|p| !p.items.is_empty());
                    }
                }
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
                self.set_progress(id, line);
            }
            AgentEvent::SubTask {
                call,
                index,
                task,
                state,
            } => {
                // One line per sub-task, kept in place as its state changes.
                let line = sub_task_line(index, &task, state);
                self.set_progress(format!("{call}/{}", index + 1), line);
            }
            AgentEvent::ClearProgress => self.progress.clear(),
            AgentEvent::OfferContinue if self.limits.supports_buttons => {
                let payload = crate::command::ContinueButton;
                self.buttons = vec![Button {
                    label: crate::command::ContinueButton::LABEL.into(),
                    payload: payload.to_string(),
                }];
            }
            AgentEvent::OfferContinue => {}
            AgentEvent::Final(_)
            | AgentEvent::FromChild { .. }
            | AgentEvent::Usage(_)
            | AgentEvent::ApprovalRequested { .. }
            | AgentEvent::ApprovalResolved { .. } => {}
        }
    }

    /// Replace the progress line of `id` (a call, a sub-task), or add it at the end.
    fn set_progress(&mut self, id: String, line: String) {
        match self.progress.iter_mut().find(|(pid, _)| *pid == id) {
            Some(slot) => slot.1 = line,
            None => self.progress.push((id, line)),
        }
    }

    /// Answer text streamed in; the first visible text starts the first send's hold.
    fn push_text(&mut self, text: &str) {
        if text.contains(CLEAR_SENTINEL) {
            self.progress.clear();
        }
        self.answer.push_str(&text.replace(CLEAR_SENTINEL, ""));
        if self.first_text_at.is_none() && !self.answer.trim().is_empty() {
            self.first_text_at = Some(Instant::now());
        }
    }

    pub(super) fn progress_text(&self) -> String {
        let lines: Vec<&str> = self.progress.iter().map(|(_, l)| l.as_str()).collect();
        lines.join("\n")
    }

    /// The plan as shown at the top of the draft: within half the platform's length limit
    /// (counted in UTF-16 units, never fewer than characters), scrubbed; empty when none.
    pub(super) fn plan_text(&self) -> String {
        let Some(plan) = &self.plan else {
            return String::new();
        };
        let text = plan.render(self.limits.max_message_len / 2);
        let mut text = self.scrubber.scrub(&text).into_owned();
        while text.encode_utf16().count() > self.limits.max_message_len / 2 {
            text.pop();
        }
        text
    }

    /// What heads every update: the heading line (when set), then the plan (when there is one).
    pub(super) fn top_text(&self) -> String {
        match (&self.heading, self.plan_text()) {
            (None, plan) => plan,
            (Some(heading), plan) if plan.is_empty() => heading.clone(),
            (Some(heading), plan) => format!("{heading}\n\n{plan}"),
        }
    }

    /// `body` under the heading and the plan (when there are).
    pub(super) fn under_plan(&self, body: &str) -> String {
        match self.top_text() {
            plan if plan.is_empty() => body.to_owned(),
            plan if body.trim().is_empty() => plan,
            plan => format!("{plan}\n\n{body}"),
        }
    }

    /// What an intermediate update shows: the plan, progress lines and the settled part of
    /// the answer, scrubbed.
    pub(super) fn visible(&self) -> String {
        self.under_plan(&self.body())
    }

    /// An update without the plan: progress lines and the settled answer, scrubbed.
    pub(super) fn body(&self) -> String {
        let answer = self.holdback.settled(&self.scrubber, &self.answer);
        let text = match (self.progress.is_empty(), answer.trim().is_empty()) {
            (true, _) => answer.to_owned(),
            (false, true) => self.progress_text(),
            (false, false) => format!("{}\n\n{answer}", self.progress_text()),
        };
        self.scrubber.scrub(&text).into_owned()
    }
}

#[cfg(test)]
mod tests;

/// A sub-task's progress line: its number, state and task.
fn sub_task_line(index: usize, task: &str, state: crate::agent::Progress) -> String {
    use crate::agent::Progress;
    let mark = match state {
        Progress::Queued => "⬜ queued",
        Progress::Running => "🔄 running",
        Progress::Waiting => "🔐 waiting for approval",
        Progress::Done => "✅ done",
        Progress::Failed => "❌ failed",
    };
    format!("🧩 Sub-task {}: {task} — {mark}", index + 1)
}
