//! The secrets a loaded config holds (provider keys, channel tokens, passwords inside URLs),
//! for the scrubber and for clearing tool environments.

use super::{Config, Secret};

impl Config {
    /// The credential scrubber for this config (its secret values plus the token shapes):
    /// the one the gateway runs every outgoing and stored text through, and the one each
    /// channel gets to redact its own files with.
    pub fn scrubber(&self) -> crate::scrub::Scrubber {
        crate::scrub::Scrubber::new(self.secret_values())
    }

    /// Every configured secret value, for the scrubber and for clearing tool environments:
    /// the provider's key, whatever each channel's settings list as secrets, and passwords
    /// inside the database URL and the provider's base URL. Empty values are never listed.
    pub fn secret_values(&self) -> Vec<String> {
        let channel_secrets = self
            .channels
            .values()
            .flat_map(|channel| channel.settings().secrets());
        let named = self.providers.values();
        let urls = std::iter::once(&*self.gateway.database_url)
            .chain(self.provider.base_url.as_deref())
            .chain(named.clone().filter_map(|p| p.base_url.as_deref()))
            .flat_map(url_password)
            .chain(passwords_in_any_url(self));
        let transcription = self.transcription.as_ref().map(|t| &t.api_key);
        let speech = (self.voice.as_ref())
            .and_then(|v| v.http.as_ref())
            .map(|h| &h.api_key);
        [
            &self.provider.api_key,
            &self.gateway.metrics_token,
            &self.admin.token,
        ]
        .into_iter()
        .chain(named.map(|p| &p.api_key))
        .chain(transcription)
        .chain(speech)
        .chain(channel_secrets)
        .filter_map(Secret::expose)
        .chain(self.mcp.secret_values())
        .map(str::to_owned)
        .chain(urls)
        .filter(|v| !v.is_empty())
        .collect()
    }
}

/// Passwords of every `scheme://user:pass@` anywhere in the loaded config (a channel's
/// `api_url` through a proxy, say), read from its debug form, where `Secret`s are hidden.
fn passwords_in_any_url(config: &Config) -> Vec<String> {
    static USERINFO: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#"[A-Za-z][A-Za-z0-9+.\-]*://[^\s/@"?#]*@"#).expect("compiles")
    });
    let text = format!("{config:?}");
    USERINFO
        .find_iter(&text)
        .flat_map(|m| url_password(m.as_str()))
        .collect()
}

/// The password in `scheme://user:pass@host…`, as written and percent-decoded.
fn url_password(url: &str) -> Vec<String> {
    let Some((_, rest)) = url.split_once("://") else {
        return Vec::new();
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let Some((userinfo, _host)) = authority.rsplit_once('@') else {
        return Vec::new();
    };
    let Some((_user, password)) = userinfo.split_once(':') else {
        return Vec::new();
    };
    let decoded = percent_encoding::percent_decode_str(password)
        .decode_utf8_lossy()
        .into_owned();
    let mut values = vec![password.to_owned()];
    if decoded != password {
        values.push(decoded);
    }
    values
}

#[cfg(test)]
mod tests {
    #[test]
    fn passwords_inside_the_database_and_provider_urls_are_secrets() {
        let text = r#"
[gateway]
database_url = "postgres://app:pa%24s-word@db.internal/switchboard"
[provider]
base_url = "https://proxy:proxy-secret-9@llm.internal/v1"
api_key = ""
[channels.slack]
kind = "slack"
bot_token = "xoxb-1"
signing_secret = "s"
api_url = "https://relay:relay-secret-7@slack.internal/api"
"#;
        let config = crate::config::parse(text, "t.toml", &[]).unwrap();
        let secrets = config.secret_values();
        for expected in [
            "pa%24s-word",
            "pa$s-word",
            "proxy-secret-9",
            "relay-secret-7",
        ] {
            assert!(secrets.iter().any(|s| s == expected), "{secrets:?}");
        }
        assert!(!secrets.iter().any(String::is_empty), "{secrets:?}");
        assert!(
            !secrets.iter().any(|s| s.contains("llm.internal")),
            "{secrets:?}"
        );
    }
}
