//! Running (or resuming) the agent for one turn: its events feed the live draft, the audit
//! and the metrics while it runs; its outcome is stored afterwards — an answer into history,
//! a suspension into an approval request, an abort back into the inbox.

use std::sync::Arc;
use std::time::{Duration, Instant};

use switchboard_channel::MessageRef;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Turn;
use super::report::{error_reply, log_delivery};
use crate::agent::{AgentError, AgentEvent, AgentLoop, AgentRun, Resolution, Suspension};
use crate::conversation::approval::Suspended;
use crate::conversation::audit::AuditRecorder;
use crate::draft::{Draft, PostedHook};
use crate::provider::{ChatMessage, Role};
use crate::store::{Durable, Store};

/// How often the typing indicator is renewed (platforms show it for about 5 s).
const TYPING_EVERY: Duration = Duration::from_secs(4);

/// How a turn's agent run begins.
pub(super) enum Start {
    /// A new user message over this context.
    Fresh(Vec<ChatMessage>),
    /// A suspended turn whose pending call was decided.
    Resume(Box<Suspension>, Resolution),
}

impl Turn<'_> {
    /// This turn's draft: it edits what an earlier attempt already posted, and records what
    /// it posts so a restart does the same.
    pub(super) fn draft(&self) -> Draft {
        let hook = posted_hook(&self.deps.store, self.durable, self.row.id);
        self.deps.outbound.draft(
            self.channel,
            self.key(),
            self.row.draft_refs.clone(),
            Some(hook),
        )
    }

    /// Run (or resume) the agent with a live draft, then store the outcome.
    pub(super) async fn run(
        &self,
        user: ChatMessage,
        requester: &str,
        start: Start,
        cancel: CancellationToken,
    ) -> anyhow::Result<()> {
        let deps = self.deps;
        let agent = deps
            .agents
            .agent_for(&deps.store, self.key(), requester)
            .await?;
        let (tx, rx) = mpsc::unbounded_channel();
        let started = Instant::now();
        deps.metrics.turns.with_label_values(&["started"]).inc();
        let agent_side = self.agent_side(&agent, start, &cancel, tx, started);
        let typing = async {
            loop {
                deps.outbound.typing(self.channel, self.key()).await;
                tokio::time::sleep(TYPING_EVERY).await;
            }
        };
        let (result, drafted) = tokio::select! {
            both = async { tokio::join!(agent_side, self.draft().drive(rx)) } => both,
            () = typing => unreachable!("the typing loop never ends"),
        };
        log_delivery(&drafted);
        self.count(&result, &drafted, started);
        self.store_outcome(user, requester, result).await
    }

    /// The agent's side of the turn: run or resume, watching every event on its way to the
    /// draft. An error still ends the draft with a short line for the user.
    async fn agent_side(
        &self,
        agent: &AgentLoop,
        start: Start,
        cancel: &CancellationToken,
        tx: mpsc::UnboundedSender<AgentEvent>,
        started: Instant,
    ) -> Result<AgentRun, AgentError> {
        let deps = self.deps;
        let clock = deps.lifecycle.clock().clone();
        let mut audit = AuditRecorder::new(
            Arc::clone(&deps.store),
            self.key().clone(),
            self.row.id,
            clock,
        );
        let mut first_text = true;
        let on_event = |event: AgentEvent| {
            self.observe(&event, &mut first_text, started);
            audit.observe(&event);
            let _ = tx.send(event);
        };
        let provider = deps.agents.provider();
        let result = match start {
            Start::Fresh(messages) => agent.run_until(provider, messages, cancel, on_event).await,
            Start::Resume(s, resolution) => {
                agent
                    .resume(provider, *s, resolution, cancel, on_event)
                    .await
            }
        };
        if let Err(err) = &result {
            let _ = tx.send(AgentEvent::ClearProgress);
            let _ = tx.send(AgentEvent::Final(error_reply(err, self.trace)));
        }
        result
    }

    /// Store what the agent produced.
    async fn store_outcome(
        &self,
        user: ChatMessage,
        requester: &str,
        result: Result<AgentRun, AgentError>,
    ) -> anyhow::Result<()> {
        let deps = self.deps;
        if deps.lifecycle.aborted() && matches!(result, Err(AgentError::Cancelled { .. })) {
            // Shutdown ran out of grace: hand the event back so the next start answers it.
            let release = || deps.store.release(self.row.claim(), self.now());
            self.durable.write("inbox release", release).await?;
            return Ok(());
        }
        let mut stored = vec![user.clone()];
        match result {
            Ok(AgentRun { messages, .. }) => stored.extend(messages),
            Err(AgentError::Suspended(suspension)) => {
                let state = Suspended {
                    user,
                    suspension: *suspension,
                };
                let id = deps
                    .approvals
                    .suspend(&deps.outbound, self.channel, self.key(), requester, state)
                    .await?;
                tracing::info!(approval = %id, "turn waits for approval");
                return self.done().await;
            }
            Err(err) => {
                tracing::warn!(error = %err, "turn ended without an answer");
                stored.extend(err.partial().iter().cloned());
                if !matches!(err, AgentError::Llm { .. }) {
                    stored.push(ChatMessage::new(
                        Role::Assistant,
                        error_reply(&err, self.trace),
                    ));
                }
            }
        }
        let scrubber = deps.outbound.scrubber();
        for message in &mut stored {
            scrubber.scrub_string(&mut message.content);
            for call in &mut message.tool_calls {
                call.args = scrubber.scrub_json(&call.args);
            }
        }
        self.complete(&stored).await
    }
}

/// Records the messages an answer posted, so a restarted turn edits instead of reposting;
/// retried through database errors, since the messages are already visible.
fn posted_hook(store: &Arc<dyn Store>, durable: &Durable, inbox_id: i64) -> PostedHook {
    let (store, durable) = (Arc::clone(store), durable.clone());
    Box::new(move |refs: Vec<MessageRef>| {
        let (store, durable) = (Arc::clone(&store), durable.clone());
        Box::pin(async move {
            let record = || store.set_draft_refs(inbox_id, &refs);
            if let Err(err) = durable.write("draft message ids", record).await {
                tracing::warn!(error = %err, "could not record the draft message id");
            }
        })
    })
}
