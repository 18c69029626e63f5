//! Retrying an LLM call, but only until the first event arrives: once text may have been
//! shown to the user, a retry would repeat it, so later failures go to the caller.

use std::future::Future;
use std::time::Duration;

use super::{EventStream, ProviderError};

/// Longest wait we accept from a `Retry-After` before giving up on the call.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

/// Open a stream with `open`, retrying retryable failures up to `max_retries` times.
///
/// A failure counts as "before the first token" when `open` fails or when the stream's very
/// first item is an error; the first good event is handed back inside the returned stream.
pub(crate) async fn with_retries<F, Fut>(
    max_retries: u32,
    mut open: F,
) -> Result<EventStream, ProviderError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<EventStream, ProviderError>>,
{
    let mut attempt = 0;
    loop {
        let err = match open().await {
            Ok(mut stream) => match stream.next().await {
                Some(Ok(first)) => return Ok(stream.with_first(Ok(first))),
                Some(Err(err)) => err,
                None => ProviderError::Stream("the response ended before any event".into()),
            },
            Err(err) => err,
        };
        let delay = backoff(attempt, &err);
        if !err.is_retryable() || attempt >= max_retries || delay > MAX_RETRY_AFTER {
            return Err(err);
        }
        tracing::warn!(attempt = attempt + 1, ?delay, error = %err, "LLM call failed, retrying");
        tokio::time::sleep(delay).await;
        attempt += 1;
    }
}

fn backoff(attempt: u32, err: &ProviderError) -> Duration {
    match err {
        ProviderError::RateLimited {
            retry_after: Some(after),
            ..
        } => *after,
        _ => Duration::from_millis(500 * 2u64.pow(attempt.min(4))),
    }
}
