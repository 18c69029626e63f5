//! Who may open the page and the socket: the access token (compared in constant time by
//! `switchboard_channel::secrets_match`), the
//! `Host` check that stops DNS rebinding when no token is set, the WebSocket `Origin` check,
//! and the session cookie that names a browser's conversation.

use axum::http::HeaderMap;
use axum::http::header::{HOST, ORIGIN};
use switchboard_channel::{cookie, secrets_match};

use crate::gate::Expected;
use crate::ids::valid_session_id;

/// How long the session and token cookies last without a visit (30 days).
pub(crate) const COOKIE_MAX_AGE_SECS: u64 = 30 * 24 * 60 * 60;

/// The session cookie's name for channel `name` (two web channels keep separate sessions).
pub(crate) fn session_cookie(name: &str) -> String {
    format!("sb_{name}_session")
}

/// The access token cookie's name for channel `name`.
pub(crate) fn token_cookie(name: &str) -> String {
    format!("sb_{name}_token")
}

/// The request's valid session id, if it carries one.
pub(crate) fn session_from(headers: &HeaderMap, channel: &str) -> Option<String> {
    cookie(headers, &session_cookie(channel))
        .filter(|id| valid_session_id(id))
        .map(str::to_owned)
}

/// The token as it is stored in a cookie: anything outside the URL-safe set percent-encoded,
/// so a token with `;` or spaces cannot break the header.
pub(crate) fn cookie_safe(token: &str) -> String {
    let mut out = String::with_capacity(token.len());
    for byte in token.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Whether the request may pass the gate: anyone where no token is needed, nobody while the
/// generated token is unreadable, otherwise `?token=` or the token cookie must prove it.
pub(crate) fn has_token(
    expected: &Expected,
    query: Option<&str>,
    headers: &HeaderMap,
    channel: &str,
) -> bool {
    let expected = match expected {
        Expected::Anyone => return true,
        Expected::Nobody => return false,
        Expected::Token(token) => &**token,
    };
    let by_query = query.is_some_and(|given| secrets_match(expected, given));
    let by_cookie = cookie(headers, &token_cookie(channel))
        .is_some_and(|given| secrets_match(cookie_safe(expected), given));
    by_query | by_cookie
}

/// Host names a token-less chat answers to on any port: a page elsewhere that rebinds its
/// own name to 127.0.0.1 still sends its own name in `Host`, and is refused.
const LOOPBACK_NAMES: &[&str] = &["localhost", "127.0.0.1", "[::1]"];

/// Whether a chat without an access token may answer a request for the `Host` it names: a
/// loopback name (any port) or one of `public_hosts` (with or without the port). Without a
/// `Host` (HTTP/1.0) nothing proves where the browser thinks it is, so it is refused too.
pub(crate) fn host_allowed(headers: &HeaderMap, public_hosts: &[String]) -> bool {
    let Some(host) = headers.get(HOST).and_then(|h| h.to_str().ok()) else {
        return false;
    };
    let host = host.trim().to_ascii_lowercase();
    let name = host_name(&host);
    LOOPBACK_NAMES.contains(&name)
        || public_hosts.iter().any(|public| {
            let public = public.trim().to_ascii_lowercase();
            public == host || public == name
        })
}

/// `host` without its `:port` (an IPv6 literal keeps its brackets).
fn host_name(host: &str) -> &str {
    if host.starts_with('[') {
        return host.find(']').map_or(host, |end| &host[..=end]);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

/// Whether a browser on the request's `Origin` may open the socket: the page's own origin
/// always, the listed ones too. Requests without `Origin` come from non-browser clients,
/// which cross-site requests cannot be, so they pass.
pub(crate) fn origin_allowed(headers: &HeaderMap, allowed: &[String]) -> bool {
    let Some(origin) = headers.get(ORIGIN) else {
        return true;
    };
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    let origin = origin.trim_end_matches('/');
    if allowed
        .iter()
        .any(|a| a.trim_end_matches('/').eq_ignore_ascii_case(origin))
    {
        return true;
    }
    let host = headers.get(HOST).and_then(|h| h.to_str().ok());
    let own_host = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    matches!((host, own_host), (Some(host), Some(own)) if host.eq_ignore_ascii_case(own))
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_standins::headers::header_map as headers;

    #[test]
    fn loopback_names_on_any_port_and_listed_public_names_pass_the_host_check() {
        for host in [
            "localhost",
            "localhost:8080",
            "127.0.0.1:9",
            "[::1]:8080",
            "LOCALHOST",
        ] {
            assert!(host_allowed(&headers(&[("host", host)]), &[]), "{host}");
        }
        for host in [
            "evil.example:8080",
            "127.0.0.1.evil.example",
            "localhost.evil",
            "[::2]:80",
        ] {
            assert!(!host_allowed(&headers(&[("host", host)]), &[]), "{host}");
        }
        assert!(!host_allowed(&headers(&[]), &[]), "no Host, no page");
        let public = ["chat.example.com".to_owned()];
        assert!(host_allowed(
            &headers(&[("host", "chat.example.com:443")]),
            &public
        ));
        assert!(!host_allowed(
            &headers(&[("host", "evil.example")]),
            &public
        ));
    }

    #[test]
    fn the_token_matches_by_query_or_by_cookie_and_nothing_else() {
        let none = HeaderMap::new();
        let tok = Expected::Token("t;k 1".into());
        assert!(has_token(&Expected::Anyone, None, &none, "web"), "no token");
        assert!(has_token(&tok, Some("t;k 1"), &none, "web"));
        assert!(!has_token(&tok, Some("t;k 2"), &none, "web"));
        assert!(!has_token(&tok, None, &none, "web"));
        let jar = headers(&[("cookie", "sb_web_token=t%3Bk%201")]);
        assert!(has_token(&tok, None, &jar, "web"));
        assert!(!has_token(&tok, None, &jar, "other"));
        let closed = Expected::Nobody;
        assert!(!has_token(&closed, Some("t;k 1"), &jar, "web"), "closed");
        assert!(!secrets_match("abc", "abcd") && !secrets_match("abc", "abd"));
    }

    #[test]
    fn same_origin_and_listed_origins_may_connect() {
        let own = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://127.0.0.1:8080"),
        ]);
        assert!(origin_allowed(&own, &[]));
        let foreign = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "https://evil.example"),
        ]);
        assert!(!origin_allowed(&foreign, &[]));
        assert!(origin_allowed(&foreign, &["https://EVIL.example/".into()]));
        let no_origin = headers(&[("host", "127.0.0.1:8080")]);
        assert!(origin_allowed(&no_origin, &[]));
        let null = headers(&[("host", "h"), ("origin", "null")]);
        assert!(!origin_allowed(&null, &[]));
    }
}
