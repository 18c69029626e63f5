//! The HTTP half both providers share: send the request, turn error statuses into
//! `ProviderError`, then read Server-Sent Events (eventsource-stream) in a task that feeds a
//! protocol-specific decoder and stops at the first idle gap longer than the timeout.

use std::time::Duration;

use eventsource_stream::Eventsource;
use futures::StreamExt;
use tokio::sync::mpsc;

use super::error::CallInfo;
use super::{EventStream, ProviderError, StreamEvent};

/// Turns one protocol's SSE events into [`StreamEvent`]s.
pub(crate) trait SseDecoder: Send + 'static {
    /// Handle one SSE event (`event:` name and `data:`), pushing what it yields into `out`.
    /// Returns `true` when the response is complete.
    fn on_event(
        &mut self,
        event: &str,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<bool, ProviderError>;

    /// The byte stream ended without `on_event` saying it was complete.
    fn on_eof(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError>;
}

/// Send `request`, waiting at most `timeout` for the response headers; an error status is
/// classified with what `call` says about the request.
pub(crate) async fn send(
    request: reqwest::RequestBuilder,
    timeout: Duration,
    call: &CallInfo<'_>,
) -> Result<reqwest::Response, ProviderError> {
    let response = match tokio::time::timeout(timeout, request.send()).await {
        Err(_) => return Err(ProviderError::Timeout(timeout)),
        Ok(Err(err)) => return Err(ProviderError::from_transport(&err)),
        Ok(Ok(response)) => response,
    };
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0 && *s < 1e9)
        .map(Duration::from_secs_f64);
    let body = response.text().await.unwrap_or_default();
    let body: String = body.chars().take(2000).collect();
    Err(ProviderError::from_status(
        status.as_u16(),
        retry_after,
        &body,
        call,
    ))
}

/// Read `response` as SSE in a background task; events arrive through the returned stream.
/// Dropping the stream stops the task and closes the connection.
pub(crate) fn spawn_reader<D: SseDecoder>(
    response: reqwest::Response,
    mut decoder: D,
    idle_timeout: Duration,
) -> EventStream {
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(async move {
        let mut events = response.bytes_stream().eventsource();
        let mut out = Vec::new();
        let result: Result<(), ProviderError> = async {
            loop {
                let next = tokio::time::timeout(idle_timeout, events.next())
                    .await
                    .map_err(|_| ProviderError::Timeout(idle_timeout))?;
                let done = match next {
                    None => {
                        decoder.on_eof(&mut out)?;
                        true
                    }
                    Some(Err(err)) => return Err(ProviderError::Stream(err.to_string())),
                    Some(Ok(event)) => decoder.on_event(&event.event, &event.data, &mut out)?,
                };
                for item in out.drain(..) {
                    if tx.send(Ok(item)).await.is_err() {
                        return Ok(()); // the turn was cancelled; stop reading
                    }
                }
                if done {
                    return Ok(());
                }
            }
        }
        .await;
        if let Err(err) = result {
            let _ = tx.send(Err(err)).await;
        }
    });
    EventStream::new(rx)
}
