//! Homeserver failures → [`ChannelError`]: `M_LIMIT_EXCEEDED` → `RateLimited` with the wait
//! the server gave, a 5xx or a network error → `Transient`, a missing room or event →
//! `NotFound`, a refused token or permission → `Fatal`.

use std::time::{Duration, SystemTime};

use matrix_sdk::ruma::api::client::error::{ErrorKind, RetryAfter};
use matrix_sdk::{Error, HttpError};
use switchboard_channel::ChannelError;

/// The wait assumed when the server asks us to slow down without saying how long.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(2);

pub(crate) fn from_sdk(err: &Error) -> ChannelError {
    match err {
        Error::Http(http) => from_http(http),
        other => ChannelError::Fatal(other.to_string()),
    }
}

pub(crate) fn from_http(err: &HttpError) -> ChannelError {
    if let Some(kind) = err.client_api_error_kind() {
        return match kind {
            ErrorKind::LimitExceeded { retry_after } => ChannelError::RateLimited {
                retry_after: retry_after.as_ref().map_or(DEFAULT_RETRY_AFTER, wait_for),
            },
            ErrorKind::NotFound => ChannelError::NotFound(err.to_string()),
            ErrorKind::TooLarge => ChannelError::TooLong,
            _ => match err.as_client_api_error().map(|e| e.status_code.as_u16()) {
                Some(status) if status >= 500 => ChannelError::Transient(err.to_string()),
                _ => ChannelError::Fatal(err.to_string()),
            },
        };
    }
    match err {
        HttpError::Reqwest(_) => ChannelError::Transient(err.to_string()),
        HttpError::Api(_) => match err.as_client_api_error().map(|e| e.status_code.as_u16()) {
            Some(404) => ChannelError::NotFound(err.to_string()),
            Some(429) => ChannelError::RateLimited {
                retry_after: DEFAULT_RETRY_AFTER,
            },
            Some(status) if status < 500 => ChannelError::Fatal(err.to_string()),
            _ => ChannelError::Transient(err.to_string()),
        },
        _ => ChannelError::Fatal(err.to_string()),
    }
}

fn wait_for(retry_after: &RetryAfter) -> Duration {
    match retry_after {
        RetryAfter::Delay(wait) => *wait,
        RetryAfter::DateTime(at) => at
            .duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    }
}

/// Whether the homeserver no longer accepts the saved session (a logged-out device).
pub(crate) fn is_unknown_token(err: &Error) -> bool {
    matches!(
        err.client_api_error_kind(),
        Some(ErrorKind::UnknownToken { .. })
    )
}

#[cfg(test)]
mod tests {
    use matrix_sdk::RumaApiError;
    use matrix_sdk::ruma::api::client::error::{Error as ClientError, ErrorBody};
    use matrix_sdk::ruma::api::error::FromHttpResponseError;
    use matrix_sdk::ruma::exports::http::StatusCode;

    use super::*;

    fn server(status: u16, kind: ErrorKind) -> HttpError {
        let body = ErrorBody::Standard {
            kind,
            message: "from the homeserver".into(),
        };
        let status = StatusCode::from_u16(status).unwrap();
        HttpError::Api(FromHttpResponseError::Server(RumaApiError::ClientApi(
            ClientError::new(status, body),
        )))
    }

    #[test]
    fn m_limit_exceeded_waits_what_the_server_says_or_two_seconds() {
        let said = server(
            429,
            ErrorKind::LimitExceeded {
                retry_after: Some(RetryAfter::Delay(Duration::from_millis(1714))),
            },
        );
        assert_eq!(
            from_http(&said),
            ChannelError::RateLimited {
                retry_after: Duration::from_millis(1714)
            }
        );
        let silent = server(429, ErrorKind::LimitExceeded { retry_after: None });
        assert_eq!(
            from_http(&silent),
            ChannelError::RateLimited {
                retry_after: DEFAULT_RETRY_AFTER
            }
        );
    }

    #[test]
    fn missing_is_not_found_a_5xx_transient_and_a_refusal_fatal() {
        assert!(matches!(
            from_http(&server(404, ErrorKind::NotFound)),
            ChannelError::NotFound(_)
        ));
        assert!(matches!(
            from_http(&server(502, ErrorKind::Unknown)),
            ChannelError::Transient(_)
        ));
        assert!(matches!(
            from_http(&server(403, ErrorKind::forbidden())),
            ChannelError::Fatal(_)
        ));
        assert_eq!(
            from_http(&server(413, ErrorKind::TooLarge)),
            ChannelError::TooLong
        );
    }
}
