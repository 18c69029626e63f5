//! Outbound edge: what a failed Bot API call means for the core. teloxide keeps only
//! Telegram's `description` (not `error_code`), so the class is read from the description's
//! standard prefix ("Bad Request:", "Forbidden:", …) rather than from exact texts that drift.

use std::time::Duration;

use switchboard_channel::ChannelError;
use teloxide::{ApiError, RequestError};

/// A failed call, sorted by what the caller does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// 429: wait this long.
    RateLimited(Duration),
    /// The HTML did not parse; the text can be resent plain.
    BadEntities(String),
    /// An edit that changes nothing; already the wanted state.
    NotModified,
    /// The rendered text is over Telegram's limit.
    TooLong,
    /// Message or chat gone.
    NotFound(String),
    /// 409: another poller or a webhook holds the updates.
    Conflict(String),
    /// 401: the token is wrong or revoked.
    Unauthorized,
    /// 403: blocked by the user, removed from the chat, or no right to post there.
    Forbidden(String),
    /// Any other 4xx: the request itself is wrong.
    Refused(String),
    /// Network error, 5xx or an unreadable answer; a retry may work.
    Transient(String),
}

impl Failure {
    /// Sort a teloxide error. `token` is scrubbed from any text kept.
    pub(crate) fn classify(err: &RequestError, token: &str) -> Self {
        match err {
            RequestError::RetryAfter(secs) => Self::RateLimited(secs.duration()),
            RequestError::MigrateToChatId(to) => {
                Self::NotFound(format!("group was upgraded to supergroup {to}"))
            }
            RequestError::Api(api) => Self::from_api(api),
            RequestError::Network(e) => Self::Transient(scrub(&e.to_string(), token)),
            RequestError::InvalidJson { raw, .. } => Self::Transient(format!(
                "unreadable answer from the Bot API: {}",
                scrub(&raw.chars().take(200).collect::<String>(), token)
            )),
            RequestError::Io(e) => Self::Transient(scrub(&e.to_string(), token)),
        }
    }

    fn from_api(api: &ApiError) -> Self {
        let description = match api {
            ApiError::InvalidToken => return Self::Unauthorized,
            ApiError::Unknown(text) | ApiError::CantParseEntities(text) => text.clone(),
            known => known.to_string(),
        };
        Self::from_description(description)
    }

    /// Sort a raw Bot API `description`.
    pub(crate) fn from_description(description: String) -> Self {
        let lower = description.to_ascii_lowercase();
        if lower.contains("can't parse entities") {
            Self::BadEntities(description)
        } else if lower.contains("message is not modified") {
            Self::NotModified
        } else if lower.contains("message is too long") || lower.contains("message_too_long") {
            Self::TooLong
        } else if lower.starts_with("conflict") || lower.contains("can't use getupdates") {
            Self::Conflict(description)
        } else if lower.starts_with("unauthorized") || lower == "not found" {
            // "Unauthorized: bot was kicked …" is a 403 in disguise; a bare one is the token.
            if lower == "unauthorized" || lower == "not found" {
                Self::Unauthorized
            } else {
                Self::Forbidden(description)
            }
        } else if lower.starts_with("forbidden") {
            Self::Forbidden(description)
        } else if lower.starts_with("bad request") && is_gone(&lower) {
            Self::NotFound(description)
        } else if lower.starts_with("too many requests") {
            Self::RateLimited(Duration::from_secs(1))
        } else if is_client_error(&lower) {
            Self::Refused(description)
        } else {
            Self::Transient(description)
        }
    }

    /// The error the core sees; `what` names the call for the message.
    pub(crate) fn into_channel_error(self, what: &str) -> ChannelError {
        match self {
            Self::RateLimited(retry_after) => ChannelError::RateLimited { retry_after },
            Self::TooLong => ChannelError::TooLong,
            Self::NotFound(d) => ChannelError::NotFound(format!("{what}: {d}")),
            Self::Transient(d) => ChannelError::Transient(format!("{what}: {d}")),
            Self::Conflict(d) => ChannelError::Transient(format!("{what}: {d}")),
            Self::Unauthorized => {
                ChannelError::Fatal(format!("{what}: Telegram rejected the bot token"))
            }
            Self::Forbidden(d) | Self::Refused(d) | Self::BadEntities(d) => {
                ChannelError::Fatal(format!("{what}: {d}"))
            }
            Self::NotModified => ChannelError::Fatal(format!("{what}: message is not modified")),
        }
    }
}

/// Descriptions of a message or chat that no longer exists.
fn is_gone(lower: &str) -> bool {
    [
        "message to edit not found",
        "message to delete not found",
        "chat not found",
        "message_id_invalid",
        "query is too old",
        "group is deactivated",
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

/// Telegram prefixes every 4xx description with its status text.
fn is_client_error(lower: &str) -> bool {
    ["bad request", "not found", "request entity too large"]
        .iter()
        .any(|prefix| lower.starts_with(prefix))
}

/// `text` with the bot token replaced, for errors that might echo a URL.
pub(crate) fn scrub(text: &str, token: &str) -> String {
    if token.is_empty() {
        text.to_owned()
    } else {
        text.replace(token, "<token>")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(description: &str) -> Failure {
        Failure::from_description(description.to_owned())
    }

    #[test]
    fn descriptions_are_sorted_by_what_the_core_can_do() {
        assert!(matches!(
            sorted(
                "Bad Request: can't parse entities: Unsupported start tag \"x\" at byte offset 0"
            ),
            Failure::BadEntities(_)
        ));
        assert_eq!(
            sorted(
                "Bad Request: message is not modified: specified new message content and reply markup are exactly the same"
            ),
            Failure::NotModified
        );
        assert_eq!(sorted("Bad Request: message is too long"), Failure::TooLong);
        assert!(matches!(
            sorted("Bad Request: message to edit not found"),
            Failure::NotFound(_)
        ));
        assert!(matches!(
            sorted("Bad Request: chat not found"),
            Failure::NotFound(_)
        ));
        assert_eq!(sorted("Unauthorized"), Failure::Unauthorized);
        assert!(matches!(
            sorted("Forbidden: bot was blocked by the user"),
            Failure::Forbidden(_)
        ));
        assert!(matches!(
            sorted(
                "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"
            ),
            Failure::Conflict(_)
        ));
        assert!(matches!(
            sorted("Bad Request: wrong parameter"),
            Failure::Refused(_)
        ));
        assert!(matches!(
            sorted("Internal Server Error"),
            Failure::Transient(_)
        ));
        assert!(matches!(sorted("Bad Gateway"), Failure::Transient(_)));
    }

    #[test]
    fn teloxide_errors_map_to_channel_errors() {
        let token = "123456:TEST-not-a-real-token";
        let retry = RequestError::RetryAfter(teloxide::types::Seconds::from_seconds(7));
        assert_eq!(
            Failure::classify(&retry, token).into_channel_error("sendMessage"),
            ChannelError::RateLimited {
                retry_after: Duration::from_secs(7)
            }
        );
        let too_long = RequestError::Api(ApiError::MessageIsTooLong);
        assert_eq!(
            Failure::classify(&too_long, token).into_channel_error("x"),
            ChannelError::TooLong
        );
        let gone = RequestError::Api(ApiError::MessageToEditNotFound);
        assert!(matches!(
            Failure::classify(&gone, token).into_channel_error("x"),
            ChannelError::NotFound(_)
        ));
        let bad_token = RequestError::Api(ApiError::InvalidToken);
        assert!(matches!(
            Failure::classify(&bad_token, token).into_channel_error("x"),
            ChannelError::Fatal(_)
        ));
        let blocked = RequestError::Api(ApiError::BotBlocked);
        assert!(matches!(
            Failure::classify(&blocked, token),
            Failure::Forbidden(_)
        ));
        let server = RequestError::Api(ApiError::Unknown("Internal Server Error".into()));
        assert!(matches!(
            Failure::classify(&server, token).into_channel_error("x"),
            ChannelError::Transient(_)
        ));
    }

    #[test]
    fn the_token_is_scrubbed_from_kept_text() {
        let token = "123456:TEST-not-a-real-token";
        let raw = format!("<html>error at /bot{token}/getMe</html>");
        let err = RequestError::InvalidJson {
            source: std::sync::Arc::new(serde_json::from_str::<u8>("x").unwrap_err()),
            raw: raw.into_boxed_str(),
        };
        let Failure::Transient(text) = Failure::classify(&err, token) else {
            panic!("an unreadable answer is transient");
        };
        assert!(!text.contains(token), "{text}");
    }
}
