//! One LLM round-trip of the agent loop: stream the response, show its text through the
//! draft guard (no call syntax, no `<think>`), and collect tool calls — native ones, or
//! prompt-guided ones parsed from the text once the response is complete.

use tokio_util::sync::CancellationToken;

use super::guard::DraftGuard;
use super::parse::parse_tool_calls;
use super::{AgentEvent, AgentLoop};
use crate::provider::{
    ChatRequest, Provider, ProviderError, StopReason, StreamEvent, ToolCall, Usage,
};

/// What one round-trip produced.
pub(super) struct Response {
    pub text: String,
    pub calls: Vec<ToolCall>,
    pub stop: StopReason,
    pub usage: Usage,
}

impl Response {
    /// The provider's token counts, or (when it reported none) about four characters a
    /// token of what was sent and received, so budgets hold on servers without usage.
    pub(super) fn used(&self, request: &ChatRequest) -> Usage {
        if self.usage.input_tokens + self.usage.output_tokens > 0 {
            return self.usage;
        }
        let args =
            |calls: &[ToolCall]| -> usize { calls.iter().map(|c| c.args.to_string().len()).sum() };
        let sent: usize = request
            .messages
            .iter()
            .map(|m| m.content.len() + args(&m.tool_calls))
            .sum();
        let received = self.text.len() + args(&self.calls);
        Usage {
            input_tokens: (sent as u64).div_ceil(4),
            output_tokens: (received as u64).div_ceil(4),
        }
    }
}

impl AgentLoop {
    /// One streamed round-trip. `Err(Ok(text))` means cancelled after streaming `text`.
    pub(super) async fn call(
        &self,
        provider: &dyn Provider,
        request: &ChatRequest,
        cancel: &CancellationToken,
        on_event: &mut impl FnMut(AgentEvent),
    ) -> Result<Response, Result<String, ProviderError>> {
        if cancel.is_cancelled() {
            return Err(Ok(String::new()));
        }
        let mut stream = tokio::select! {
            s = provider.stream(request) => s.map_err(Err)?,
            () = cancel.cancelled() => return Err(Ok(String::new())),
        };
        let names: Vec<&str> = self.tools.iter().map(|t| t.name()).collect();
        let mut guard = DraftGuard::new(&names);
        let mut response = Response {
            text: String::new(),
            calls: Vec::new(),
            stop: StopReason::EndTurn,
            usage: Usage::default(),
        };
        let mut shown = String::new();
        loop {
            let event = tokio::select! {
                e = stream.next() => e,
                () = cancel.cancelled() => return Err(Ok(shown)),
            };
            match event {
                Some(Ok(StreamEvent::TextDelta(text))) => {
                    response.text.push_str(&text);
                    let visible = guard.push(&text);
                    if !visible.is_empty() {
                        shown.push_str(&visible);
                        on_event(AgentEvent::TextChunk(visible));
                    }
                }
                Some(Ok(StreamEvent::ToolCall(call))) => response.calls.push(call),
                Some(Ok(StreamEvent::Done { stop_reason, usage })) => {
                    let rest = guard.finish();
                    if !rest.is_empty() {
                        on_event(AgentEvent::TextChunk(rest));
                    }
                    response.stop = stop_reason;
                    response.usage = usage;
                    let parsed = parse_tool_calls(&response.text, &names);
                    // Text without calls or <think> is kept exactly as the model wrote it.
                    if !parsed.calls.is_empty() || response.text.contains("<think") {
                        response.text = parsed.text;
                    }
                    if response.calls.is_empty() && !self.tools.is_empty() {
                        response.calls = parsed.calls;
                    }
                    return Ok(response);
                }
                Some(Err(err)) => return Err(Err(err)),
                None => {
                    return Err(Err(ProviderError::Stream(
                        "the stream ended without a finish".into(),
                    )));
                }
            }
        }
    }
}
