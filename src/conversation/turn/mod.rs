//! One turn: a claimed inbox event in, an answer streamed to the channel, history stored and
//! the event marked done in one transaction. Errors reach the user as one short line with a
//! trace id; the detail goes to the log under the same id.
//!
//! Every write after something was shown (history and the done mark, posted message ids,
//! the end of an approval's raw call, a failure mark) goes through [`Durable`]: a database
//! that is briefly away delays it, never loses it, and never turns a delivered answer into
//! a failed event. A transient database error before anything was shown hands the event
//! back to the inbox to be answered again, instead of failing it.
//!
//! - this file: dispatch on the event's [`Intent`] (chat, command, approval answer, stale
//!   button) and the small handlers.
//! - `run`: running (or resuming) the agent with a live draft, and storing what it produced.
//! - `report`: metrics, delivery logs and the user-facing error lines.
//! - `voice`: whether an answer is spoken, speaking it, and `/voice`.

mod report;
mod rewind;
mod run;
mod voice;

use std::sync::atomic::{AtomicBool, Ordering};

use switchboard_channel::{ButtonPress, ChannelEvent, ConversationKey, Inbound, UserRef};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::approval::Request;
use super::{Deps, OPERATOR_USER, Route};
use crate::command::{Action, ApprovalButton, Command, Intent};
use crate::memory::{SavedIn, autosave, compact_if_needed, scope_for};
use crate::profile::Active;
use crate::provider::{ChatMessage, Role};
use crate::store::{Durable, InboxRow, Spent, StoreError};
use run::Start;

/// How a turn ended, as its actor needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ended {
    /// Answered, failed, handed back or lost to another claim: the actor goes on.
    Normally,
    /// Answered, and its completion found no other event of the conversation unfinished:
    /// the actor need not claim again (an event stored since wakes it).
    Drained,
    /// A write was refused because the conversation lease moved on: the actor stops.
    Fenced,
}

/// Process one claimed event to completion (or hand it back on abort).
pub(super) async fn process(
    deps: &Deps,
    active: &Active,
    row: InboxRow,
    cancel: CancellationToken,
) -> Ended {
    let key = row.event.key().clone();
    let trace = uuid::Uuid::new_v4().simple().to_string()[..8].to_owned();
    let span = tracing::info_span!("turn", %key, inbox = row.id, %trace);
    let now = || deps.lifecycle.clock().now_ms();
    // Cancelled only when the shutdown grace period ends (never by /stop).
    let durable = Durable::new(deps.lifecycle.turn_token());
    let Some(route) = deps.outbound.route(&key.channel) else {
        tracing::warn!(%key, "event for a channel that is not configured; dropped");
        let _ = deps
            .store
            .fail(row.claim(), "channel not configured", now())
            .await;
        return Ended::Normally;
    };
    let turn = Turn {
        deps,
        active,
        row: &row,
        channel: &route,
        trace: &trace,
        durable: &durable,
        drained: AtomicBool::new(false),
    };
    async {
        let Err(err) = turn.dispatch(cancel).await else {
            return if turn.drained.load(Ordering::Relaxed) {
                Ended::Drained
            } else {
                Ended::Normally
            };
        };
        let stored = match err.downcast_ref::<StoreError>() {
            Some(StoreError::Superseded(_)) => {
                // Another claim of this event (a restart, an expired lease) answers it.
                tracing::warn!(error = %err, "turn lost its claim; its result was not stored");
                return Ended::Normally;
            }
            Some(StoreError::Fenced(_)) => {
                // Another replica owns the conversation now and answers the event.
                tracing::warn!(error = %err, "turn lost its conversation lease; nothing stored");
                deps.metrics.cluster.with_label_values(&["fenced"]).inc();
                return Ended::Fenced;
            }
            Some(StoreError::Stopped) => return Ended::Normally, // the next start finishes it
            Some(store_err) if store_err.is_transient() => {
                tracing::warn!(error = %err, "the database failed before an answer; the event is handed back");
                let release = || deps.store.release(row.claim(), now());
                durable.write("inbox release", release).await
            }
            _ => {
                tracing::error!(error = %err, "turn failed");
                let text = err.to_string();
                let fail = || deps.store.fail(row.claim(), &text, now());
                durable.write("inbox failure", fail).await
            }
        };
        ending(stored)
    }
    .instrument(span)
    .await
}

/// How a turn ended, from whether the write that records its failure was taken.
fn ending(stored: Result<(), StoreError>) -> Ended {
    match stored {
        Ok(()) => Ended::Normally,
        Err(StoreError::Fenced(_)) => Ended::Fenced,
        Err(e) => {
            tracing::warn!(error = %e, "could not record how the turn ended");
            Ended::Normally
        }
    }
}

/// One claimed event being processed.
struct Turn<'a> {
    deps: &'a Deps,
    /// The conversation's agent profile and model.
    active: &'a Active,
    row: &'a InboxRow,
    /// Where the answer goes (written only through the outbound path).
    channel: &'a Route,
    trace: &'a str,
    /// Retries the writes that follow what the turn showed.
    durable: &'a Durable,
    /// Set by the completion when no other event of the conversation was unfinished.
    drained: AtomicBool,
}

impl Turn<'_> {
    fn key(&self) -> &ConversationKey {
        self.row.event.key()
    }

    fn now(&self) -> i64 {
        self.deps.lifecycle.clock().now_ms()
    }

    /// Do what the event asks. The intent is re-derived from the stored event by the same
    /// function that classified it on the way in, so the two can never disagree.
    async fn dispatch(&self, cancel: CancellationToken) -> anyhow::Result<()> {
        let decide = |id, action| ApprovalButton { id, action };
        match (&self.row.event, Intent::of(&self.row.event)) {
            (ChannelEvent::Message(m), Intent::Message) => self.chat(m, cancel).await,
            (ChannelEvent::Message(m), Intent::Command(Command::Approve(id))) => {
                self.decide(&m.user, &decide(id, Action::Once), None, cancel)
                    .await
            }
            (ChannelEvent::Message(m), Intent::Command(Command::Deny(id))) => {
                self.decide(&m.user, &decide(id, Action::Deny), None, cancel)
                    .await
            }
            (event, Intent::Command(Command::Rewind(number))) => self.rewind(event, number).await,
            (ChannelEvent::Message(m), Intent::Command(command)) => {
                self.command(&command, &m.user.id).await
            }
            (ChannelEvent::Button(press), Intent::Command(command)) => {
                // A scheduled task's cancel button: answered on the button, like a toast.
                let reply = self.deps.schedules.answer(self.key(), &command).await;
                let out = &self.deps.outbound;
                out.notice(self.channel, self.key(), Some(press), &reply.text)
                    .await;
                self.done().await
            }
            (ChannelEvent::Button(press), Intent::Button(Some(button))) => {
                // The dashboard's press has no message to answer on: its outcome is posted
                // in the chat instead, where the people waiting see who decided.
                let answer_on = Some(press).filter(|p| p.user.id != OPERATOR_USER);
                self.decide(&press.user, &button, answer_on, cancel).await
            }
            (ChannelEvent::Button(press), Intent::Continue) => {
                self.continue_paused(press, cancel).await
            }
            (ChannelEvent::Button(press), _) => self.stale_button(press).await,
            (ChannelEvent::Message(_), Intent::Button(_) | Intent::Continue) => {
                unreachable!("only button presses classify as buttons")
            }
        }
    }

    /// Mark the event done with nothing added to history (after its reply was shown).
    async fn done(&self) -> anyhow::Result<()> {
        self.complete(&[], None).await
    }

    /// Append `messages` to history, add what the turn `spent` to its budgets and mark the
    /// event done, retried until it lands.
    async fn complete(
        &self,
        messages: &[ChatMessage],
        spent: Option<Spent<'_>>,
    ) -> anyhow::Result<()> {
        let (store, claim, key) = (&self.deps.store, self.row.claim(), self.key());
        let complete = || store.complete(claim, key, messages, spent, self.now());
        let more = self.durable.write("turn completion", complete).await?;
        self.drained.store(!more, Ordering::Relaxed);
        Ok(())
    }

    async fn command(&self, command: &Command, user_id: &str) -> anyhow::Result<()> {
        let deps = self.deps;
        if *command == Command::Usage {
            let (limits, clock) = (self.active.settings().budgets, deps.lifecycle.clock());
            let store = deps.store.as_ref();
            let text = crate::budget::report(store, limits, self.key(), user_id, clock).await?;
            self.draft().finish(&text).await?;
            return self.done().await;
        }
        match command {
            Command::New => {
                deps.store.clear_history(self.key()).await?;
                deps.agents.forget_browser(self.key()).await;
            }
            Command::Forget => {
                let scope = scope_for(&self.active.settings().memory, self.key(), user_id);
                let n = deps.store.forget_scope(&scope).await?;
                tracing::info!(%scope, forgotten = n, "memory cleared by /forget");
            }
            Command::Model(wanted) => {
                let (store, now) = (deps.store.as_ref(), self.now());
                let model = self
                    .active
                    .model_command(store, self.key(), wanted.as_deref(), now);
                self.draft().finish(&model.await?).await?;
                return self.done().await;
            }
            Command::Skills => {
                let text = crate::skills::report::chat_list(&self.active.profile().skills);
                self.draft().finish(&text).await?;
                return self.done().await;
            }
            Command::Voice(switch) => {
                let text = self.voice_command(*switch).await?;
                self.draft().finish(&text).await?;
                return self.done().await;
            }
            Command::Schedules | Command::Unschedule(_) | Command::Tz(_) => {
                let reply = deps.schedules.answer(self.key(), command).await;
                self.draft()
                    .with_buttons(reply.buttons)
                    .finish(&reply.text)
                    .await?;
                return self.done().await;
            }
            _ => {}
        }
        self.draft().finish(command.reply()).await?;
        self.done().await
    }

    /// A button that belongs to no approval.
    async fn stale_button(&self, press: &ButtonPress) -> anyhow::Result<()> {
        let text = "This button is no longer active.";
        self.deps
            .outbound
            .notice(self.channel, self.key(), Some(press), text)
            .await;
        self.done().await
    }

    /// An approval answer (button, `/approve`, `/deny`, or expiry); resumes the turn.
    async fn decide(
        &self,
        user: &UserRef,
        button: &ApprovalButton,
        press: Option<&ButtonPress>,
        cancel: CancellationToken,
    ) -> anyhow::Result<()> {
        let request = Request {
            channel: self.channel,
            key: self.key(),
            user,
            button,
            press,
            place: self.row.event.place(),
            fence: Some(self.row.claim()),
        };
        match self
            .deps
            .approvals
            .decide(&self.deps.outbound, request)
            .await?
        {
            None => self.done().await,
            Some(decided) => {
                let state = decided.state;
                let start =
                    Start::Resume(Box::new(state.suspension), state.path, decided.resolution);
                let requester = &decided.approval.requester;
                self.run(state.user, requester, start, None, cancel).await?;
                // The call has run (or was refused): its raw arguments are no longer kept.
                let id = &decided.approval.id;
                let forget = || self.deps.store.forget_approval_call(id);
                Ok(self.durable.write("approval call removal", forget).await?)
            }
        }
    }

    /// The Continue button of a paused turn: acknowledge it, take the button away (so one
    /// pause is continued once), and run a turn that says "continue" — with a fresh step
    /// budget, over the history the paused turn stored.
    async fn continue_paused(
        &self,
        press: &ButtonPress,
        cancel: CancellationToken,
    ) -> anyhow::Result<()> {
        let out = &self.deps.outbound;
        out.notice(self.channel, self.key(), Some(press), "▶ Continuing…")
            .await;
        if let Some(message) = &press.message {
            let text = "⏸ Paused — continued below.";
            if let Err(err) = out.edit(self.channel, self.key(), message, text).await {
                tracing::warn!(error = %err, "could not take the Continue button away");
            }
        }
        let inbound = Inbound {
            key: press.key.clone(),
            event_id: press.event_id.clone(),
            user: press.user.clone(),
            text: crate::command::ContinueButton::SAYS.into(),
            place: press.place.clone(),
            attachments: Vec::new(),
        };
        self.chat(&inbound, cancel).await
    }

    /// A message for the model: compact the history if due, run the turn, autosave.
    async fn chat(&self, inbound: &Inbound, cancel: CancellationToken) -> anyhow::Result<()> {
        if self.refused_by_budget(&inbound.user.id).await? {
            return Ok(());
        }
        let (deps, key) = (self.deps, self.key());
        let memory = &self.active.settings().memory;
        let mut history = None;
        if memory.enabled {
            // Between turns only: a running tool never sees its history rewritten.
            let (store, provider) = (deps.store.as_ref(), self.active.provider());
            let clock = deps.lifecycle.clock();
            match compact_if_needed(store, &*provider, key, memory, clock).await {
                Ok((_, stands)) => history = Some(stands),
                Err(err) => {
                    tracing::warn!(error = %err, "history compaction failed; the turn goes on");
                }
            }
        }
        let (user, heading) = if inbound.attachments.is_empty() {
            (ChatMessage::new(Role::User, inbound.text.clone()), None)
        } else {
            Box::pin(self.attachments(inbound)).await
        };
        let messages = deps
            .agents
            .context_for(self.active, deps.store.as_ref(), key, history, &user)
            .await?;
        let start = Start::Fresh(messages);
        self.run(user, &inbound.user.id, start, heading, cancel)
            .await?;
        let scope = scope_for(memory, key, &inbound.user.id);
        let clock = deps.lifecycle.clock();
        let text = deps.outbound.scrubber().scrub(&inbound.text);
        let saved_in = SavedIn {
            key,
            semantic: deps.agents.semantic().map(AsRef::as_ref),
        };
        let saved = autosave(deps.store.as_ref(), memory, &scope, &text, clock, saved_in).await;
        if let Err(err) = saved {
            tracing::warn!(error = %err, "autosave failed");
        }
        Ok(())
    }
}

impl Turn<'_> {
    /// Fetch and save the message's files; tell the person about any that failed; return
    /// the user message the model reads (with its images, for a vision-capable model) and
    /// the transcript line that heads the reply, when a voice note was transcribed.
    async fn attachments(&self, inbound: &Inbound) -> (ChatMessage, Option<String>) {
        let dir = self.deps.agents.workspace_dir(self.key());
        let settings = self.active.settings();
        let transcription = settings.transcription.as_ref();
        let received = crate::attach::receive(self.channel, &dir, inbound, transcription).await;
        for line in &received.notices {
            let out = &self.deps.outbound;
            out.notice(self.channel, self.key(), None, line).await;
        }
        let mut user = ChatMessage::new(Role::User, received.text);
        if settings.vision {
            user.images = crate::attach::images(&dir, &received.images).await;
        }
        (user, received.heading)
    }
}
