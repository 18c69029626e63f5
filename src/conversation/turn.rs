//! One turn: a claimed inbox event in, an answer streamed to the channel, history stored and
//! the event marked done in one transaction. Errors reach the user as one short line with a
//! trace id; the detail goes to the log under the same id.

use std::sync::Arc;
use std::time::Duration;

use switchboard_channel::{ButtonPress, Channel, ChannelEvent, Inbound, MessageRef};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::audit::AuditRecorder;
use super::{Command, Deps};
use crate::agent::{AgentError, AgentEvent, AgentRun};
use crate::draft::{Draft, PostedHook};
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
    async {
        let result = match &row.event {
            ChannelEvent::Message(m) => match Command::parse(&m.text) {
                Some(command) => run_command(deps, &row, &channel, command).await,
                None => chat(deps, &row, &channel, m, cancel, &trace).await,
            },
            ChannelEvent::Button(press) => stale_button(deps, &row, &channel, press).await,
        };
        if let Err(err) = result {
            tracing::error!(error = %err, "turn failed");
            let _ = deps.store.fail(row.id, &err.to_string(), now_ms()).await;
        }
    }
    .instrument(span)
    .await
}

async fn run_command(
    deps: &Deps,
    row: &InboxRow,
    channel: &Arc<dyn Channel>,
    command: Command,
) -> anyhow::Result<()> {
    let key = row.event.key();
    if command == Command::New {
        deps.store.clear_history(key).await?;
    }
    Draft::new(
        Arc::clone(channel),
        key.clone(),
        deps.draft,
        row.draft_refs.clone(),
        Some(posted_hook(deps, row.id)),
    )
    .finish(command.reply())
    .await?;
    deps.store.complete(row.id, key, &[], now_ms()).await?;
    Ok(())
}

/// Buttons belong to approvals; one that reaches here has nothing waiting on it.
async fn stale_button(
    deps: &Deps,
    row: &InboxRow,
    channel: &Arc<dyn Channel>,
    press: &ButtonPress,
) -> anyhow::Result<()> {
    if let Err(err) = channel
        .answer_button(press, "This button is no longer active.")
        .await
    {
        tracing::warn!(error = %err, "could not answer a button press");
    }
    deps.store
        .complete(row.id, &press.key, &[], now_ms())
        .await?;
    Ok(())
}

async fn chat(
    deps: &Deps,
    row: &InboxRow,
    channel: &Arc<dyn Channel>,
    inbound: &Inbound,
    cancel: CancellationToken,
    trace: &str,
) -> anyhow::Result<()> {
    let key = &inbound.key;
    let user = ChatMessage::new(Role::User, inbound.text.clone());
    let mut messages = vec![ChatMessage::new(Role::System, deps.system_prompt.clone())];
    messages.extend(deps.store.history(key, deps.history_limit).await?);
    messages.push(user.clone());

    let (tx, rx) = mpsc::unbounded_channel();
    let draft = Draft::new(
        Arc::clone(channel),
        key.clone(),
        deps.draft,
        row.draft_refs.clone(),
        Some(posted_hook(deps, row.id)),
    )
    .scrubbed(Arc::clone(&deps.scrubber));
    let agent = deps.agent_for(key);
    let mut audit = AuditRecorder::new(Arc::clone(&deps.store), key.clone(), row.id);
    let agent_side = async move {
        let result = agent
            .run_until(deps.provider.as_ref(), messages, &cancel, |event| {
                audit.observe(&event);
                let _ = tx.send(event);
            })
            .await;
        if let Err(err) = &result {
            let _ = tx.send(AgentEvent::ClearProgress);
            let _ = tx.send(AgentEvent::Final(error_reply(err, trace)));
        }
        result
    };
    let typing = async {
        loop {
            let _ = channel.typing(key).await;
            tokio::time::sleep(TYPING_EVERY).await;
        }
    };
    let (result, drafted) = tokio::select! {
        both = async { tokio::join!(agent_side, draft.drive(rx)) } => both,
        () = typing => unreachable!("the typing loop never ends"),
    };

    if deps.abort.is_cancelled() && matches!(result, Err(AgentError::Cancelled { .. })) {
        // Shutdown ran out of grace: hand the event back so the next start answers it.
        deps.store.release(row.id, now_ms()).await?;
        return Ok(());
    }
    let mut stored = vec![user];
    match &result {
        Ok(AgentRun { messages, .. }) => stored.extend(messages.iter().cloned()),
        Err(err) => {
            tracing::warn!(error = %err, "turn ended without an answer");
            stored.extend(err.partial().iter().cloned());
            if !matches!(err, AgentError::Llm { .. }) {
                stored.push(ChatMessage::new(Role::Assistant, error_reply(err, trace)));
            }
        }
    }
    for message in &mut stored {
        deps.scrubber.scrub_string(&mut message.content);
    }
    deps.store.complete(row.id, key, &stored, now_ms()).await?;
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
    Ok(())
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
