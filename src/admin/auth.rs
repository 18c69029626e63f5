//! Who may open the dashboard, and which requests may act. Only its token opens it
//! (`?token=` once, traded for an HttpOnly, SameSite=Strict cookie; or a bearer header),
//! whatever the peer: a loopback peer may be a sandboxed tool with network or a proxy on
//! this host forwarding someone else's request, so being one proves nothing. Every action
//! is a POST that must carry the page's CSRF field and, when the browser names one, come
//! from the page's own origin.

use axum::http::header::{AUTHORIZATION, HOST, ORIGIN};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use switchboard_channel::{TokenFile, cookie, secrets_match};

/// The token cookie's name.
pub const TOKEN_COOKIE: &str = "sb_admin_token";

/// How a request got in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admitted {
    /// With the token, from a cookie or a bearer header.
    Token,
    /// With the token in `?token=`: set the cookie and drop it from the address bar.
    TokenInQuery,
}

/// The request as the gate sees it.
pub struct Knock<'a> {
    /// The request's headers.
    pub headers: &'a HeaderMap,
    /// `?token=`, when given.
    pub query_token: Option<&'a str>,
}

/// Let the request in, or the refusal to send. `token_file` is read per request, so a
/// rotated token applies at once (an unreadable file admits nobody).
#[expect(
    clippy::result_large_err,
    reason = "the refusal is built only for a refused request and sent at once; boxing it buys nothing"
)]
pub fn admit(knock: &Knock<'_>, token_file: &TokenFile) -> Result<Admitted, Response> {
    if let Some(expected) = token_file.read().ok().flatten() {
        let matches = |given: &str| secrets_match(&expected, given.trim());
        if knock.query_token.is_some_and(matches) {
            return Ok(Admitted::TokenInQuery);
        }
        let bearer =
            header(knock.headers, AUTHORIZATION.as_str()).and_then(|v| v.strip_prefix("Bearer "));
        if bearer.is_some_and(matches) || cookie(knock.headers, TOKEN_COOKIE).is_some_and(matches) {
            return Ok(Admitted::Token);
        }
    }
    let text = "The dashboard opens only with its token: open the link `switchboard admin-token` \
                prints (the gateway's first start printed it on its terminal).\n";
    Err((StatusCode::UNAUTHORIZED, text).into_response())
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The `Set-Cookie` value that keeps `token` for the dashboard's pages under `base`.
pub fn token_cookie(token: &str, base: &str, headers: &HeaderMap) -> String {
    let secure =
        header(headers, "x-forwarded-proto").is_some_and(|p| p.eq_ignore_ascii_case("https"));
    let secure = if secure { "; Secure" } else { "" };
    format!(
        "{TOKEN_COOKIE}={token}; Path={base}; Max-Age=2592000; HttpOnly; SameSite=Strict{secure}"
    )
}

/// The CSRF field every form carries: derived from the dashboard's token (which no other
/// site can read), so it is the same on every replica and changes when the token rotates.
pub fn csrf_token(token_file: &TokenFile) -> Option<String> {
    let token = token_file.read().ok().flatten()?;
    let digest = Sha256::new()
        .chain_update(b"switchboard admin csrf\0")
        .chain_update(token.as_bytes())
        .finalize();
    Some(digest[..16].iter().map(|b| format!("{b:02x}")).collect())
}

/// Whether an action may proceed: the form's `csrf` field is the page's, and the browser
/// (when it says where the request comes from) sent it from the dashboard's own origin.
pub fn action_allowed(headers: &HeaderMap, given_csrf: &str, token_file: &TokenFile) -> bool {
    let Some(expected) = csrf_token(token_file) else {
        return false;
    };
    same_origin(headers) && secrets_match(expected, given_csrf)
}

/// `Origin` names the `Host` the request went to; without `Origin`, `Sec-Fetch-Site` (when
/// sent) says same-origin. A client sending neither is not a browser on another site.
fn same_origin(headers: &HeaderMap) -> bool {
    // `null` (an opaque origin) names nothing: then only `Sec-Fetch-Site` can vouch.
    if let Some(origin) = headers.get(ORIGIN).filter(|o| o.as_bytes() != b"null") {
        let (Ok(origin), Some(host)) = (origin.to_str(), header(headers, HOST.as_str())) else {
            return false;
        };
        let own = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"));
        return own.is_some_and(|own| own.trim_end_matches('/').eq_ignore_ascii_case(host));
    }
    match header(headers, "sec-fetch-site") {
        Some(site) => site == "same-origin",
        None => !headers.contains_key(ORIGIN),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_standins::headers::header_map as headers;

    fn knock<'a>(headers: &'a HeaderMap, token: Option<&'a str>) -> Knock<'a> {
        Knock {
            headers,
            query_token: token,
        }
    }

    fn token_file(dir: &std::path::Path) -> TokenFile {
        let file = super::super::token::token_file(dir);
        std::fs::write(file.path(), "0123456789abcdef0123456789abcdef\n").unwrap();
        file
    }

    #[test]
    fn without_the_token_nobody_gets_in_whatever_the_peer_or_host() {
        let dir = tempfile::tempdir().unwrap();
        let file = token_file(dir.path());
        let admit = |k: &Knock<'_>| admit(k, &file).map_err(|r| r.status().as_u16());
        for host in [
            "localhost:8080",
            "127.0.0.1:8080",
            "[::1]:8080",
            "evil.example",
        ] {
            let local = headers(&[("host", host)]);
            assert_eq!(admit(&knock(&local, None)), Err(401), "{host}");
        }
        assert_eq!(admit(&knock(&headers(&[]), None)), Err(401), "no Host");
        let wrong = headers(&[
            ("host", "127.0.0.1:8080"),
            ("cookie", "sb_admin_token=0123"),
        ]);
        assert_eq!(admit(&knock(&wrong, Some("0123"))), Err(401), "wrong");
        let none = super::super::token::token_file(&dir.path().join("none"));
        let gone = super::admit(&knock(&headers(&[]), None), &none);
        assert_eq!(gone.map_err(|r| r.status().as_u16()), Err(401), "no file");
    }

    #[test]
    fn the_token_opens_it_from_anywhere_by_query_cookie_or_bearer_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let file = token_file(dir.path());
        let token = "0123456789abcdef0123456789abcdef";
        let far = headers(&[("host", "ops.example.com")]);
        let admit = |k: &Knock<'_>| admit(k, &file).map_err(|r| r.status().as_u16());
        assert_eq!(admit(&knock(&far, Some(token))), Ok(Admitted::TokenInQuery));
        assert_eq!(admit(&knock(&far, Some("0123"))), Err(401));
        let jar = headers(&[
            ("host", "ops.example.com"),
            (
                "cookie",
                "a=b; sb_admin_token=0123456789abcdef0123456789abcdef",
            ),
        ]);
        assert_eq!(admit(&knock(&jar, None)), Ok(Admitted::Token));
        let bearer = headers(&[
            ("host", "ops.example.com"),
            ("authorization", "Bearer 0123456789abcdef0123456789abcdef"),
        ]);
        assert_eq!(admit(&knock(&bearer, None)), Ok(Admitted::Token));
        let web_cookie = headers(&[
            ("host", "ops.example.com"),
            ("cookie", "sb_web_token=0123456789abcdef0123456789abcdef"),
        ]);
        assert_eq!(admit(&knock(&web_cookie, None)), Err(401));
    }

    #[test]
    fn an_action_needs_the_csrf_field_and_the_pages_own_origin() {
        let dir = tempfile::tempdir().unwrap();
        let file = token_file(dir.path());
        let csrf = csrf_token(&file).unwrap();
        let own = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://127.0.0.1:8080"),
        ]);
        assert!(action_allowed(&own, &csrf, &file));
        assert!(!action_allowed(&own, "0000", &file), "wrong field");
        let foreign = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "https://evil.example"),
        ]);
        assert!(!action_allowed(&foreign, &csrf, &file), "another origin");
        let null = headers(&[("host", "127.0.0.1:8080"), ("origin", "null")]);
        assert!(!action_allowed(&null, &csrf, &file));
        let framed = headers(&[("origin", "null"), ("sec-fetch-site", "cross-site")]);
        assert!(!action_allowed(&framed, &csrf, &file));
        let own_null = headers(&[("origin", "null"), ("sec-fetch-site", "same-origin")]);
        assert!(action_allowed(&own_null, &csrf, &file));
        let cross = headers(&[("host", "127.0.0.1:8080"), ("sec-fetch-site", "cross-site")]);
        assert!(!action_allowed(&cross, &csrf, &file));
        std::fs::write(file.path(), "fedcba9876543210fedcba9876543210\n").unwrap();
        assert!(
            !action_allowed(&own, &csrf, &file),
            "a rotated token changes it"
        );
    }
}
