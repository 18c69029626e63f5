//! What every HTTP gate in front of a secret shares: the web chat's and the dashboard's
//! token checks, the metrics bearer token, the dashboard's CSRF field and Telegram's webhook
//! secret. A cookie is read from the request one way, and a presented secret is compared in
//! constant time, so how long a refusal takes says nothing about how much of it was right.

use axum::http::HeaderMap;
use axum::http::header::COOKIE;
use subtle::ConstantTimeEq;

/// Whether `given` is the secret `expected`, compared in constant time (only the length may
/// show).
pub fn secrets_match(expected: impl AsRef<[u8]>, given: impl AsRef<[u8]>) -> bool {
    bool::from(expected.as_ref().ct_eq(given.as_ref()))
}

/// The value of cookie `name` in the request (among every `Cookie` header and pair), with
/// surrounding quotes removed; `None` when it carries none.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.trim_matches('"'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(*k, HeaderValue::from_static(v));
        }
        map
    }

    #[test]
    fn cookies_are_found_among_several_headers_and_pairs() {
        let h = headers(&[("cookie", "a=1; sb_web_session=abc"), ("cookie", "b=\"2\"")]);
        assert_eq!(cookie(&h, "sb_web_session"), Some("abc"));
        assert_eq!(cookie(&h, "b"), Some("2"));
        assert_eq!(cookie(&h, "sb_web"), None, "a prefix is not a name");
        assert_eq!(cookie(&headers(&[]), "a"), None);
    }

    #[test]
    fn only_the_whole_secret_matches() {
        assert!(secrets_match("abc", "abc"));
        for given in ["", "ab", "abd", "abcd", "ABC"] {
            assert!(!secrets_match("abc", given), "{given:?}");
        }
    }
}
