//! A profile's fallback chain: providers tried in order for one call. The call moves on only
//! when a provider failed before its first streamed event (429, 5xx, connection errors, a
//! timeout before the first token), after that provider's own retries; once an event has
//! arrived the stream is the caller's, so a failure later in it reaches the person as the
//! error line and never as a second, different answer.

use std::sync::Arc;

use async_trait::async_trait;
use prometheus::IntCounterVec;

use super::{ChatRequest, EventStream, Provider, ProviderError};

/// One provider of a chain, with the name logs and metrics know it by.
pub struct Link {
    /// `[providers.<name>]` name (and model, for the log).
    pub name: String,
    /// The endpoint.
    pub provider: Arc<dyn Provider>,
}

/// Providers tried in order until one starts answering.
pub struct Fallback {
    /// At least one; the first is the profile's own provider.
    links: Vec<Link>,
    /// `switchboard_llm_fallbacks_total{from, to}`, when the gateway counts them.
    counter: Option<IntCounterVec>,
}

impl Fallback {
    /// A chain over `links` (the first is tried first), counting each move in `counter`.
    pub fn new(links: Vec<Link>, counter: Option<IntCounterVec>) -> Self {
        Self { links, counter }
    }
}

/// Whether a failure before the first token moves the call to the next provider: rate
/// limits, overload, server errors, connection trouble and timeouts; never a rejected key, an
/// unknown model or a prompt too long (the next provider would be asked the wrong thing, or
/// the operator has something to fix).
pub fn moves_on(err: &ProviderError) -> bool {
    err.is_retryable() || matches!(err, ProviderError::Connect { .. })
}

#[async_trait]
impl Provider for Fallback {
    fn name(&self) -> &str {
        self.links.first().map_or("none", |l| l.name.as_str())
    }

    async fn stream(&self, request: &ChatRequest) -> Result<EventStream, ProviderError> {
        let mut links = self.links.iter().peekable();
        loop {
            let Some(link) = links.next() else {
                return Err(ProviderError::Decode("no provider configured".into()));
            };
            let err = match link.provider.stream(request).await {
                Ok(stream) => return Ok(stream),
                Err(err) => err,
            };
            let Some(next) = links.peek().filter(|_| moves_on(&err)) else {
                return Err(err);
            };
            tracing::warn!(from = %link.name, to = %next.name, error = %err, "LLM provider failed before answering; trying the next one");
            if let Some(counter) = &self.counter {
                counter
                    .with_label_values(&[link.name.as_str(), next.name.as_str()])
                    .inc();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn only_passing_failures_move_a_call_on() {
        let passing = [
            ProviderError::RateLimited {
                status: 429,
                retry_after: None,
            },
            ProviderError::Http {
                status: 503,
                body: String::new(),
            },
            ProviderError::Timeout(Duration::from_secs(1)),
        ];
        assert!(passing.iter().all(moves_on));
        let lasting = [
            ProviderError::ModelNotFound {
                model: "m".into(),
                message: String::new(),
            },
            ProviderError::ContextTooLong(String::new()),
            ProviderError::Http {
                status: 400,
                body: String::new(),
            },
        ];
        assert!(!lasting.iter().any(moves_on));
    }
}
