//! Whether `[provider]` can work at all without a key: a hosted API (api.openai.com,
//! api.anthropic.com) with an empty `api_key` fails every call, so the provider refuses at
//! once (no request, no retries) and start-up and `switchboard check` warn, naming what to set.

use super::{ProviderConfig, ProviderKind};

/// Hosts whose API always needs a key.
const HOSTED: [&str; 2] = ["api.openai.com", "api.anthropic.com"];

/// The variable people usually keep this provider's key in.
fn key_variable(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Openai => "OPENAI_API_KEY",
        ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
    }
}

/// What to set to give the provider a key, for logs and warnings.
pub(crate) fn key_hint(config: &ProviderConfig) -> String {
    format!(
        "set {} (read by `[provider] api_key = \"${{{}}}\"`) or SWITCHBOARD__PROVIDER__API_KEY",
        key_variable(config.kind),
        key_variable(config.kind),
    )
}

/// Whether `[provider]` points at a hosted API that needs a key, with none set.
pub fn missing_hosted_key(config: &ProviderConfig) -> bool {
    let host = reqwest::Url::parse(config.base_url())
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned));
    let hosted = host.is_some_and(|h| HOSTED.contains(&h.as_str()));
    hosted && !config.api_key.is_set()
}

/// The start-up warning (and `switchboard check`'s) for a hosted API without a key.
pub fn key_warning(config: &ProviderConfig) -> Option<String> {
    missing_hosted_key(config).then(|| {
        format!(
            "[provider] points at {} but api_key is empty, so every message will be answered \
             with \"no API key\": {} and restart",
            config.base_url(),
            key_hint(config),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hosted_api_without_a_key_is_flagged_and_a_local_one_is_not() {
        let mut config = ProviderConfig::default();
        assert!(missing_hosted_key(&config));
        assert!(key_warning(&config).unwrap().contains("OPENAI_API_KEY"));
        config.api_key = switchboard_env::Secret::new("k");
        assert!(key_warning(&config).is_none());
        let local = ProviderConfig {
            base_url: Some(switchboard_env::EnvString(
                "http://127.0.0.1:11434/v1".into(),
            )),
            ..ProviderConfig::default()
        };
        assert!(key_warning(&local).is_none());
    }
}
