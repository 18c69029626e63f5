//! The signature check every webhook `POST` goes through first, on the raw body, before
//! anything is parsed or stored: Meta signs the body with the app secret (HMAC-SHA256) and
//! sends `sha256=<hex>` in `X-Hub-Signature-256`. Compared in constant time (`hmac`'s
//! `verify_slice`).

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Whether `header` (the `X-Hub-Signature-256` value) signs `body` with `app_secret`.
pub(crate) fn signed(app_secret: &str, header: Option<&str>, body: &[u8]) -> bool {
    let Some(given) = header
        .and_then(|h| h.trim().strip_prefix("sha256="))
        .and_then(|h| hex::decode(h).ok())
    else {
        return false;
    };
    if app_secret.is_empty() {
        return false;
    }
    let mut mac = Hmac::<Sha256>::new_from_slice(app_secret.as_bytes())
        .expect("HMAC takes keys of any length");
    mac.update(body);
    mac.verify_slice(&given).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign(secret: &str, body: &[u8]) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(body);
        format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
    }

    #[test]
    fn only_the_app_secrets_signature_of_these_exact_bytes_passes() {
        let body = br#"{"object":"whatsapp_business_account"}"#;
        let good = sign("test-app-secret", body);
        assert!(signed("test-app-secret", Some(&good), body));
        assert!(!signed("other-secret", Some(&good), body));
        assert!(!signed("test-app-secret", Some(&good), b"{}"));
        assert!(!signed(
            "test-app-secret",
            Some(good.trim_start_matches("sha256=")),
            body
        ));
        assert!(!signed("test-app-secret", Some("sha256=zz"), body));
        assert!(!signed("test-app-secret", None, body));
        assert!(
            !signed("", Some(&sign("", body)), body),
            "no secret, no pass"
        );
    }
}
