//! What a turn tells the outside about itself: metrics from its events and outcome, a log
//! line for its delivery, and the one short line a user sees when it ends without an answer.

use std::time::Instant;

use switchboard_channel::ChannelError;

use super::Turn;
use crate::agent::{AgentError, AgentEvent, AgentRun};
use crate::draft::DraftOutcome;
use crate::provider::{ConnectKind, ProviderError};

impl Turn<'_> {
    /// Metrics from one agent event: time to first text, and tool calls by their decision.
    pub(super) fn observe(&self, event: &AgentEvent, first_text: &mut bool, started: Instant) {
        let m = &self.deps.metrics;
        match event {
            AgentEvent::TextChunk(_) if *first_text => {
                *first_text = false;
                m.first_token_seconds
                    .with_label_values(&[] as &[&str])
                    .observe(started.elapsed().as_secs_f64());
            }
            AgentEvent::ToolStarted { name, decision, .. } => {
                let tool = self.deps.agents.tool_label(name);
                m.tool_calls
                    .with_label_values(&[tool, decision.metric_label()])
                    .inc();
            }
            _ => {}
        }
    }

    /// Metrics from a finished turn.
    pub(super) fn count(
        &self,
        result: &Result<AgentRun, AgentError>,
        drafted: &Result<DraftOutcome, ChannelError>,
        started: Instant,
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
            let edits = &m.draft_edits;
            edits
                .with_label_values(&["sent"])
                .inc_by(u64::from(d.sends + d.edits));
            edits
                .with_label_values(&["coalesced"])
                .inc_by(u64::from(d.coalesced));
            edits
                .with_label_values(&["rate_limited"])
                .inc_by(u64::from(d.rate_limited));
        }
    }
}

/// One log line for how the answer was delivered.
pub(super) fn log_delivery(drafted: &Result<DraftOutcome, ChannelError>) {
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
pub(super) fn error_reply(err: &AgentError, trace: &str) -> String {
    match err {
        AgentError::Llm { error, .. } => {
            // The whole cause chain, under this turn's trace id, for the operator.
            tracing::error!(error = %error, "LLM call failed");
            format!("{} (trace {trace})", llm_line(error))
        }
        AgentError::MaxIterations { iterations, .. } => format!(
            "I stopped after {iterations} steps without finishing. Say \"continue\" and I'll carry on."
        ),
        AgentError::Tool { tool, .. } => {
            format!("I stopped because `{tool}` kept failing the same way. (trace {trace})")
        }
        AgentError::Stopped { reason, .. } => reason.clone(),
        AgentError::Cancelled { text, .. } if text.trim().is_empty() => "⏹ Stopped.".into(),
        AgentError::Cancelled { text, .. } => format!("{text}\n\n_(stopped)_"),
        AgentError::Suspended(s) => match &s.delegation {
            Some(children) => {
                let asks: Vec<String> = (children.waiting().iter())
                    .map(|(path, w)| format!("`{}` (sub-task {})", w.pending.name, path[0] + 1))
                    .collect();
                format!("⏸ Waiting for approval: {}…", asks.join(", "))
            }
            None => format!("⏸ Waiting for approval to run `{}`…", s.pending.name),
        },
    }
}

/// One short line on why the model could not answer, and what to do about it.
fn llm_line(error: &ProviderError) -> String {
    match error {
        ProviderError::NoKey { .. } => {
            "I can't answer yet: no API key is set for the language model.".into()
        }
        ProviderError::KeyRejected { status, .. } => {
            format!("I can't answer: the language model API rejected its API key (HTTP {status}).")
        }
        ProviderError::ModelNotFound { model, .. } => {
            format!("I can't answer: the language model API has no model named `{model}`.")
        }
        ProviderError::Connect { kind, .. } => {
            let why = match kind {
                ConnectKind::Refused => "the connection was refused",
                ConnectKind::Dns => "its host name was not found",
                ConnectKind::Tls => "the TLS handshake failed",
                ConnectKind::TimedOut => "the connection timed out",
                ConnectKind::Other => "of a network error",
            };
            format!("I couldn't reach the language model API: {why}.")
        }
        ProviderError::RateLimited {
            status,
            retry_after,
        } => {
            let state = if *status == 529 { "overloaded" } else { "rate limited" };
            match retry_after {
                Some(wait) => format!(
                    "The language model is {state} right now; please try again in {} s.",
                    wait.as_secs().max(1)
                ),
                None => format!(
                    "The language model is {state} right now; please try again in a minute."
                ),
            }
        }
        ProviderError::ContextTooLong(_) => {
            "This conversation is too long for the model; send /new to start a fresh one.".into()
        }
        ProviderError::Timeout(after) => format!(
            "The language model did not answer within {} s; please try again.",
            after.as_secs()
        ),
        ProviderError::Http { .. } | ProviderError::Stream(_) | ProviderError::Decode(_) => {
            "Sorry — I couldn't get an answer from the language model. Please try again in a moment."
                .into()
        }
    }
}
