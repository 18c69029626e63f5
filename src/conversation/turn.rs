//! One turn: a claimed inbox event in, an answer streamed to the channel, history stored and
//! the event marked done in one transaction. Errors reach the user as one short line with a
//! trace id; the detail goes to the log under the same id.

use std::sync::Arc;
use std::time::Duration;

use switchboard_channel::{
    ButtonPress, Channel, ChannelError, ChannelEvent, ConversationKey, Inbound, MessageRef, UserRef,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::approval::{self, Action, ApprovalButton, Suspended};
use super::audit::AuditRecorder;
use super::{Command, Deps};
use crate::agent::{AgentError, AgentEvent, AgentRun, Resolution, Suspension};
use crate::draft::{Draft, DraftOutcome, PostedHook};
use crate::ids::ApprovalId;
use crate::memory::{autosave, compact_if_needed, scope_for};
use crate::provider::{ChatMessage, Role};
use crate::store::{InboxRow, now_ms};

/// How often the typing indicator is renewed (platforms show it for about 5 s).
const TYPING_EVERY: Duration = Duration::from_secs(4);

/// Process one claimed event to completion (or hand it back on abort).
pub(super) async fn process(deps: &Deps, row: InboxRow, cancel: CancellationToken) {
    let key = row.event.key().clone();
    let trace = uuid::Uuid::new_v4().simple().to_string()[..8].to_owned();
    let span = tracing::info_span!("turn", %key, inbox = row.id, %trace);
    let Some(channel) = deps.channels.get(&key.channel).cloned() else {
        tracing::warn!(%key, "event for a channel that is not configured; dropped");
        let _ = deps
            .store
            .fail(row.id, "channel not configured", now_ms())
            .await;
        return;
    };
    let turn = Turn {
        deps,
        row: &row,
        channel: &channel,
        trace: &trace,
    };
    async {
        let result = match &row.event {
            ChannelEvent::Message(m) => match Command::parse(&m.text) {
                Some(Command::Approve(id)) => {
                    turn.decide(
                        &m.user,
                        &ApprovalButton {
                            id: ApprovalId::new(id),
                            action: Action::Once,
                        },
                        None,
                        cancel,
                    )
                    .await
                }
                Some(Command::Deny(id)) => {
                    turn.decide(
                        &m.user,
                        &ApprovalButton {
                            id: ApprovalId::new(id),
                            action: Action::Deny,
                        },
                        None,
                        cancel,
                    )
                    .await
                }
                Some(command) => turn.command(command, &m.user.id).await,
                None => turn.chat(m, cancel).await,
            },
            ChannelEvent::Button(press) => match press.payload.parse::<ApprovalButton>() {
                Ok(button) => turn.decide(&press.user, &button, Some(press), cancel).await,
                Err(()) => turn.stale_button(press).await,
            },
        };
        if let Err(err) = result {
            tracing::error!(error = %err, "turn failed");
            let _ = deps.store.fail(row.id, &err.to_string(), now_ms()).await;
        }
    }
    .instrument(span)
    .await
}

/// How a turn's agent run begins.
enum Start {
    /// A new user message over this context.
    Fresh(Vec<ChatMessage>),
    /// A suspended turn whose pending call was decided.
    Resume(Box<Suspension>, Resolution),
}

/// One claimed event being processed.
struct Turn<'a> {
    deps: &'a Deps,
    row: &'a InboxRow,
    channel: &'a Arc<dyn Channel>,
    trace: &'a str,
}

impl Turn<'_> {
    fn key(&self) -> &ConversationKey {
        self.row.event.key()
    }

    fn draft(&self) -> Draft {
        Draft::new(
            Arc::clone(self.channel),
            self.key().clone(),
            self.deps.draft,
            self.row.draft_refs.clone(),
            Some(posted_hook(self.deps, self.row.id)),
        )
        .scrubbed(Arc::clone(&self.deps.scrubber))
        .governed(Arc::clone(&self.deps.governor))
    }

    async fn command(&self, command: Command, user_id: &str) -> anyhow::Result<()> {
        match command {
            Command::New => self.deps.store.clear_history(self.key()).await?,
            Command::Forget => {
                let scope = scope_for(&self.deps.memory, self.key(), user_id);
                let n = self.deps.store.forget_scope(&scope).await?;
                tracing::info!(%scope, forgotten = n, "memory cleared by /forget");
            }
            _ => {}
        }
        self.draft().finish(command.reply()).await?;
        self.deps
            .store
            .complete(self.row.id, self.key(), &[], now_ms())
            .await?;
        Ok(())
    }

    /// A button that belongs to no approval.
    async fn stale_button(&self, press: &ButtonPress) -> anyhow::Result<()> {
        if let Err(err) = self
            .channel
            .answer_button(press, "This button is no longer active.")
            .await
        {
            tracing::warn!(error = %err, "could not answer a button press");
        }
        self.deps
            .store
            .complete(self.row.id, &press.key, &[], now_ms())
            .await?;
        Ok(())
    }

    /// An approval decision (button, `/approve`, `/deny`, or expiry); resumes the turn.
    async fn decide(
        &self,
        user: &UserRef,
        button: &ApprovalButton,
        press: Option<&ButtonPress>,
        cancel: CancellationToken,
    ) -> anyhow::Result<()> {
        match approval::decide(self.deps, self.channel, self.key(), user, button, press).await? {
            None => {
                self.deps
                    .store
                    .complete(self.row.id, self.key(), &[], now_ms())
                    .await?;
                Ok(())
            }
            Some((state, resolution, approval)) => {
                let start = Start::Resume(Box::new(state.suspension), resolution);
                self.run(state.user, &approval.requester, start, cancel)
                    .await
            }
        }
    }

    async fn chat(&self, inbound: &Inbound, cancel: CancellationToken) -> anyhow::Result<()> {
        let deps = self.deps;
        if deps.memory.enabled {
            // Between turns only: a running tool never sees its history rewritten.
            let compacted = compact_if_needed(
                deps.store.as_ref(),
                deps.provider.as_ref(),
                self.key(),
                &deps.memory,
            )
            .await;
            if let Err(err) = compacted {
                tracing::warn!(error = %err, "history compaction failed; the turn goes on");
            }
        }
        let user = ChatMessage::new(Role::User, inbound.text.clone());
        let mut messages = vec![ChatMessage::new(
            Role::System,
            self.deps.system_prompt.clone(),
        )];
        messages.extend(
            self.deps
                .store
                .history(self.key(), self.deps.history_limit)
                .await?,
        );
        messages.push(user.clone());
        self.run(user, &inbound.user.id, Start::Fresh(messages), cancel)
            .await?;
        let scope = scope_for(&deps.memory, self.key(), &inbound.user.id);
        if let Err(err) = autosave(deps.store.as_ref(), &deps.memory, &scope, &inbound.text).await {
            tracing::warn!(error = %err, "autosave failed");
        }
        Ok(())
    }

    /// Run (or resume) the agent with a live draft, then store the outcome.
    async fn run(
        &self,
        user: ChatMessage,
        requester: &str,
        start: Start,
        cancel: CancellationToken,
    ) -> anyhow::Result<()> {
        let (deps, key, trace) = (self.deps, self.key(), self.trace);
        let (tx, rx) = mpsc::unbounded_channel();
        let agent = deps.agent_for(key, requester).await?;
        let metrics = Arc::clone(&deps.metrics);
        metrics.turns.with_label_values(&["started"]).inc();
        let started = std::time::Instant::now();
        let mut first_text = true;
        let mut audit = AuditRecorder::new(Arc::clone(&deps.store), key.clone(), self.row.id);
        let agent_side = async move {
            let on_event = |event: AgentEvent| {
                match &event {
                    AgentEvent::TextChunk(_) if first_text => {
                        first_text = false;
                        metrics
                            .first_token_seconds
                            .with_label_values(&[] as &[&str])
                            .observe(started.elapsed().as_secs_f64());
                    }
                    AgentEvent::ToolStarted { name, decision, .. } => {
                        let verdict = decision.split(':').next().unwrap_or("allow");
                        metrics
                            .tool_calls
                            .with_label_values(&[name.as_str(), verdict])
                            .inc();
                    }
                    _ => {}
                }
                audit.observe(&event);
                let _ = tx.send(event);
            };
            let provider = deps.provider.as_ref();
            let result = match start {
                Start::Fresh(messages) => {
                    agent.run_until(provider, messages, &cancel, on_event).await
                }
                Start::Resume(s, resolution) => {
                    agent
                        .resume(provider, *s, resolution, &cancel, on_event)
                        .await
                }
            };
            if let Err(err) = &result {
                let _ = tx.send(AgentEvent::ClearProgress);
                let _ = tx.send(AgentEvent::Final(error_reply(err, trace)));
            }
            result
        };
        let typing = async {
            loop {
                let _ = self.channel.typing(key).await;
                tokio::time::sleep(TYPING_EVERY).await;
            }
        };
        let (result, drafted) = tokio::select! {
            both = async { tokio::join!(agent_side, self.draft().drive(rx)) } => both,
            () = typing => unreachable!("the typing loop never ends"),
        };
        log_delivery(&drafted);
        self.count(&result, &drafted, started);
        if deps.abort.is_cancelled() && matches!(result, Err(AgentError::Cancelled { .. })) {
            // Shutdown ran out of grace: hand the event back so the next start answers it.
            deps.store.release(self.row.id, now_ms()).await?;
            return Ok(());
        }
        let mut stored = vec![user.clone()];
        match result {
            Ok(AgentRun { messages, .. }) => stored.extend(messages),
            Err(AgentError::Suspended(suspension)) => {
                let id = approval::suspend(
                    deps,
                    self.channel,
                    key,
                    requester,
                    Suspended {
                        user,
                        suspension: *suspension,
                    },
                )
                .await?;
                tracing::info!(approval = %id, "turn waits for approval");
                deps.store.complete(self.row.id, key, &[], now_ms()).await?;
                return Ok(());
            }
            Err(err) => {
                tracing::warn!(error = %err, "turn ended without an answer");
                stored.extend(err.partial().iter().cloned());
                if !matches!(err, AgentError::Llm { .. }) {
                    stored.push(ChatMessage::new(Role::Assistant, error_reply(&err, trace)));
                }
            }
        }
        for message in &mut stored {
            deps.scrubber.scrub_string(&mut message.content);
        }
        deps.store
            .complete(self.row.id, key, &stored, now_ms())
            .await?;
        Ok(())
    }
}

impl Turn<'_> {
    fn count(
        &self,
        result: &Result<AgentRun, AgentError>,
        drafted: &Result<DraftOutcome, ChannelError>,
        started: std::time::Instant,
    ) {
        let m = &self.deps.metrics;
        let outcome = match result {
            Ok(_) => "finished",
            Err(AgentError::Suspended(_)) => "suspended",
            Err(_) => "failed",
        };
        m.turns.with_label_values(&[outcome]).inc();
        m.turn_seconds
            .with_label_values(&[] as &[&str])
            .observe(started.elapsed().as_secs_f64());
        if let Ok(d) = drafted {
            m.draft_edits
                .with_label_values(&["sent"])
                .inc_by(u64::from(d.sends + d.edits));
            m.draft_edits
                .with_label_values(&["coalesced"])
                .inc_by(u64::from(d.coalesced));
            m.draft_edits
                .with_label_values(&["rate_limited"])
                .inc_by(u64::from(d.rate_limited));
        }
    }
}

fn log_delivery(drafted: &Result<DraftOutcome, ChannelError>) {
    match drafted {
        Ok(outcome) => tracing::info!(
            sends = outcome.sends,
            edits = outcome.edits,
            coalesced = outcome.coalesced,
            rate_limited = outcome.rate_limited,
            "answer delivered"
        ),
        Err(err) => tracing::error!(error = %err, "the answer could not be delivered"),
    }
}

/// What the user sees when a turn ends without a normal answer.
fn error_reply(err: &AgentError, trace: &str) -> String {
    match err {
        AgentError::Llm { error, .. } => {
            tracing::error!(error = %error, "LLM call failed");
            format!(
                "Sorry — I couldn't get an answer from the language model. Please try again in a moment. (trace {trace})"
            )
        }
        AgentError::MaxIterations { iterations, .. } => format!(
            "I stopped after {iterations} steps without finishing. Say \"continue\" and I'll carry on."
        ),
        AgentError::Tool { tool, .. } => {
            format!("I stopped because `{tool}` kept failing the same way. (trace {trace})")
        }
        AgentError::Cancelled { text, .. } if text.trim().is_empty() => "⏹ Stopped.".into(),
        AgentError::Cancelled { text, .. } => format!("{text}\n\n_(stopped)_"),
        AgentError::Suspended(s) => format!("⏸ Waiting for approval to run `{}`…", s.pending.name),
    }
}

fn posted_hook(deps: &Deps, inbox_id: i64) -> PostedHook {
    let store = Arc::clone(&deps.store);
    Box::new(move |refs: Vec<MessageRef>| {
        let store = Arc::clone(&store);
        Box::pin(async move {
            if let Err(err) = store.set_draft_refs(inbox_id, &refs).await {
                tracing::warn!(error = %err, "could not record the draft message id");
            }
        })
    })
}
