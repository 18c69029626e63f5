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
use crate::budget::{Meter, Reached};
use crate::conversation::approval::Suspended;
use crate::conversation::audit::AuditRecorder;
use crate::draft::{Draft, PostedHook};
use crate::provider::{ChatMessage, Role};
use crate::store::{Claim, Durable, Store};

/// How often the typing indicator is renewed (platforms show it for about 5 s).
const TYPING_EVERY: Duration = Duration::from_secs(4);

/// How a turn's agent run begins.
pub(super) enum Start {
    /// A new user message over this context.
    Fresh(Vec<ChatMessage>),
    /// A suspended turn whose pending call was decided: the turn's own (an empty path) or
    /// a sub-task's (its path in the suspension's delegation).
    Resume(Box<Suspension>, Vec<usize>, Resolution),
}

impl Turn<'_> {
    /// This turn's draft: it edits what an earlier attempt already posted, and records what
    /// it posts so a restart does the same.
    pub(super) fn draft(&self) -> Draft {
        let hook = posted_hook(&self.deps.store, self.durable, self.row.claim());
        self.deps.outbound.draft(
            self.channel,
            self.key(),
            self.row.draft_refs.clone(),
            Some(hook),
        )
    }

    /// Run (or resume) the agent with a live draft (headed by `heading`, a voice note's
    /// transcript, when there is one), then store the outcome.
    pub(super) async fn run(
        &self,
        user: ChatMessage,
        requester: &str,
        start: Start,
        heading: Option<String>,
        cancel: CancellationToken,
    ) -> anyhow::Result<()> {
        let deps = self.deps;
        let files = deps.outbound.file_poster(self.channel, self.key());
        let agent = deps
            .agents
            .agent_for(self.active, &deps.store, self.key(), requester, files)
            .await;
        let (tx, rx) = mpsc::unbounded_channel();
        let started = Instant::now();
        deps.metrics.turns.with_label_values(&["started"]).inc();
        let agent_side = self.agent_side(&agent, start, &cancel, tx, (started, requester));
        let draft = match &heading {
            Some(line) => self.draft().headed(line),
            None => self.draft(),
        };
        let typing = async {
            loop {
                deps.outbound.typing(self.channel, self.key()).await;
                tokio::time::sleep(TYPING_EVERY).await;
            }
        };
        let spoken_to = heading.is_some();
        // Pinned here and joined by reference: moved into the joining block instead, the
        // agent's side would be stored twice in this future (once captured, once joined),
        // and every live turn holds this future.
        let agent_side = std::pin::pin!(agent_side);
        let drafting = std::pin::pin!(draft.drive(rx));
        let ((result, mut meter), drafted) = tokio::select! {
            both = async { tokio::join!(agent_side, drafting) } => both,
            () = typing => unreachable!("the typing loop never ends"),
        };
        log_delivery(&drafted);
        self.count(&result, &drafted, started);
        if let Ok(run) = &result {
            // After the text is out: a voice note adds to the answer, never holds it back.
            Box::pin(self.speak(&run.answer, spoken_to, meter.as_mut())).await;
        }
        // Boxed: only the turn's end needs its space.
        Box::pin(self.store_outcome(user, requester, result, meter.as_ref())).await
    }

    /// The agent's side of the turn: run or resume, watching every event on its way to the
    /// draft. An error still ends the draft with a short line for the user. Returns the
    /// outcome and the budget meter, whose usage is stored with the outcome.
    async fn agent_side(
        &self,
        agent: &AgentLoop,
        start: Start,
        cancel: &CancellationToken,
        tx: mpsc::UnboundedSender<Box<AgentEvent>>,
        (started, requester): (Instant, &str),
    ) -> (Result<AgentRun, AgentError>, Option<Meter>) {
        let deps = self.deps;
        let mut meter = self.meter(requester).await;
        // Cancelled when a budget is reached mid-turn (and with the turn's own token).
        let stop = cancel.child_token();
        let mut reached = None;
        let clock = deps.lifecycle.clock().clone();
        let mut audit =
            AuditRecorder::new(deps.store.clone(), self.key().clone(), self.row.id, clock);
        let mut first_text = true;
        let on_event = |event: AgentEvent| {
            // A sub-task's calls and tokens are the turn's: metered, measured and audited
            // (under the chain of calls that led to them) like its own.
            let (chain, inner) = event.innermost();
            if chain.is_empty() {
                self.observe(inner, &mut first_text, started);
            } else {
                self.observe(inner, &mut false, started);
            }
            audit.observe(&chain, inner);
            if let Some(meter) = meter.as_mut() {
                self.spend(inner, meter, &stop, &mut reached);
            }
            let _ = tx.send(Box::new(event));
        };
        let provider = self.active.provider();
        let provider = provider.as_ref();
        let result = match start {
            Start::Fresh(messages) => agent.run_until(provider, messages, &stop, on_event).await,
            Start::Resume(s, path, resolution) => {
                agent
                    .resume_at(provider, *s, &path, resolution, &stop, on_event)
                    .await
            }
        };
        let result = stopped_by_budget(result, reached);
        if let Err(err) = &result {
            let _ = tx.send(Box::new(AgentEvent::ClearProgress));
            if err.paused().is_some() {
                let _ = tx.send(Box::new(AgentEvent::OfferContinue));
            }
            let _ = tx.send(Box::new(AgentEvent::Final(ending(err, self.trace))));
        }
        (result, meter)
    }

    /// Store what the agent produced.
    async fn store_outcome(
        &self,
        user: ChatMessage,
        requester: &str,
        result: Result<AgentRun, AgentError>,
        meter: Option<&Meter>,
    ) -> anyhow::Result<()> {
        let deps = self.deps;
        let aborted =
            deps.lifecycle.aborted() && matches!(result, Err(AgentError::Cancelled { .. }));
        if aborted || matches!(result, Err(AgentError::Suspended(_))) {
            // No completion follows now: what the turn spent is written on its own.
            self.record_now(meter).await;
        }
        if aborted {
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
                    path: Vec::new(),
                };
                let ids = deps
                    .approvals
                    .suspend(
                        &deps.outbound,
                        self.channel,
                        self.key(),
                        requester,
                        state,
                        self.durable,
                        Some(self.row.claim()),
                    )
                    .await?;
                // The inbox row was marked done with the request, in one transaction.
                let ids: Vec<String> = ids.iter().map(ToString::to_string).collect();
                tracing::info!(approvals = %ids.join(","), "turn waits for approval");
                return Ok(());
            }
            Err(err) => {
                tracing::warn!(error = %err, "turn ended without an answer");
                stored.extend(err.partial().iter().cloned());
                if !matches!(err, AgentError::Llm { .. }) {
                    stored.push(ChatMessage::new(Role::Assistant, ending(&err, self.trace)));
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
        self.complete(&stored, meter.and_then(Meter::spent)).await
    }

    /// Add what the turn spent to its budgets in a write of its own; a store failure is
    /// logged (the turn's outcome matters more than its count).
    async fn record_now(&self, meter: Option<&Meter>) {
        if let Some(meter) = meter
            && let Err(err) = meter.record(self.deps.store.as_ref()).await
        {
            tracing::warn!(error = %err, "could not record budget usage");
        }
    }
}

/// A turn cancelled because a budget was reached ends with that budget's line.
fn stopped_by_budget(
    result: Result<AgentRun, AgentError>,
    reached: Option<Reached>,
) -> Result<AgentRun, AgentError> {
    match (result, reached) {
        (Err(AgentError::Cancelled { partial, .. }), Some(reached)) => Err(AgentError::Stopped {
            reason: reached.message(),
            partial,
        }),
        (result, _) => result,
    }
}

/// What the user sees (and history keeps) when a turn ends without an answer: a paused
/// turn's summary, or the error line.
fn ending(err: &AgentError, trace: &str) -> String {
    err.paused().unwrap_or_else(|| error_reply(err, trace))
}

/// Records the messages an answer posted, so a restarted turn edits instead of reposting;
/// retried through database errors, since the messages are already visible.
fn posted_hook(store: &Arc<dyn Store>, durable: &Durable, claim: Claim) -> PostedHook {
    let (store, durable) = (Arc::clone(store), durable.clone());
    Box::new(move |refs: Vec<MessageRef>| {
        let (store, durable) = (Arc::clone(&store), durable.clone());
        Box::pin(async move {
            let record = || store.set_draft_refs(claim, &refs);
            if let Err(err) = durable.write("draft message ids", record).await {
                tracing::warn!(error = %err, "could not record the draft message id");
            }
        })
    })
}

impl Turn<'_> {
    /// This turn's budget meter; a store failure is logged and the turn runs unmetered.
    async fn meter(&self, user: &str) -> Option<Meter> {
        let deps = self.deps;
        let limits = self.active.settings().budgets;
        let clock = deps.lifecycle.clock();
        match Meter::load(deps.store.as_ref(), limits, self.key(), user, clock).await {
            Ok(meter) => Some(meter),
            Err(err) => {
                tracing::warn!(error = %err, "could not read budget usage; the turn is not metered");
                None
            }
        }
    }

    /// Refuse a new message when one of its budgets is already used up: one line saying
    /// which and when it resets, and nothing reaches the model. Returns whether it refused.
    pub(super) async fn refused_by_budget(&self, user: &str) -> anyhow::Result<bool> {
        let Some(reached) = self.meter(user).await.and_then(|m| m.reached()) else {
            return Ok(false);
        };
        let labels = [self.key().channel.as_str(), reached.budget.label()];
        self.deps
            .metrics
            .budget_stops
            .with_label_values(&labels)
            .inc();
        self.draft().finish(&reached.message()).await?;
        self.done().await?;
        Ok(true)
    }

    /// Count `event` against the budgets (and the metrics); the first budget it uses up
    /// cancels `stop`, so the turn ends before its next step.
    fn spend(
        &self,
        event: &AgentEvent,
        meter: &mut Meter,
        stop: &CancellationToken,
        reached: &mut Option<Reached>,
    ) {
        let (m, channel) = (&self.deps.metrics, self.key().channel.as_str());
        match event {
            AgentEvent::Usage(used) => {
                let tokens = used.input_tokens + used.output_tokens;
                meter.add_tokens(tokens);
                m.llm_tokens.with_label_values(&[channel]).inc_by(tokens);
            }
            AgentEvent::ToolCompleted { .. } => {
                meter.add_tool_run();
                m.tool_runs.with_label_values(&[channel]).inc();
            }
            _ => return,
        }
        if reached.is_none()
            && let Some(now_reached) = meter.reached()
        {
            tracing::info!(
                budget = now_reached.budget.label(),
                "budget reached; stopping the turn"
            );
            m.budget_stops
                .with_label_values(&[channel, now_reached.budget.label()])
                .inc();
            stop.cancel();
            *reached = Some(now_reached);
        }
    }
}
