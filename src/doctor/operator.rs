//! The doctor's view of who is "the operator": how each web chat and the dashboard let people
//! in, an `allowed_origins` on a chat without a token, a key that no longer does anything, and
//! `/metrics`, which still answers any loopback peer without its token (so behind a proxy on
//! this host, everyone who reaches the proxy).

use std::net::SocketAddr;

use super::{Finding, Severity};
use crate::config::Config;

/// Every finding about the operator's doors.
pub fn findings(config: &Config) -> Vec<Finding> {
    let listen = config.gateway.listen.parse::<SocketAddr>().ok();
    let mut out = Vec::new();
    #[cfg(feature = "web")]
    for (name, channel) in &config.channels {
        if let crate::config::ChannelConfig::Web(web) = channel {
            out.extend(web_chat(name, web, listen));
        }
    }
    out.extend(dashboard(config));
    out.extend(metrics(config, listen));
    out
}

/// How one web chat lets people in, and an `allowed_origins` it has without a token.
#[cfg(feature = "web")]
fn web_chat(
    name: &str,
    web: &switchboard_web::WebConfig,
    listen: Option<SocketAddr>,
) -> Vec<Finding> {
    let public = listen.is_some_and(|l| web.public_on(l));
    let mut out = Vec::new();
    if public && !web.allowed_origins.is_empty() {
        out.push(Finding::new(
            Severity::Warning,
            format!(
                "web chat `{name}` has allowed_origins ({}) but no token: pages on those origins may open it, and nothing tells their visitors from you",
                web.allowed_origins.join(", ")
            ),
            format!("remove channels.{name}.public_hosts so the chat gets its generated token (`switchboard web-token` prints the link), or set access_token = \"${{SWITCHBOARD_WEB_TOKEN}}\""),
        ));
    }
    let (severity, what, fix) = if public {
        (
            Severity::Warning,
            format!(
                "web chat `{name}` is public (public_hosts without a token): anyone who reaches it may ask, and only [policy.approvers] approve"
            ),
            format!(
                "nothing to do if it is meant for the public; else remove channels.{name}.public_hosts"
            ),
        )
    } else if web.access_token.is_set() {
        (
            Severity::Note,
            format!("web chat `{name}` opens only with its access_token, from loopback too"),
            "nothing to do".to_owned(),
        )
    } else {
        (
            Severity::Note,
            format!(
                "web chat `{name}` opens only with its generated token, from loopback too (a tool or a proxy on this host gains nothing)"
            ),
            "nothing to do; `switchboard web-token` prints its link".to_owned(),
        )
    };
    out.push(Finding::new(severity, what, fix));
    out
}

/// The dashboard always needs its token; an old config's `loopback_without_token` is named.
fn dashboard(config: &Config) -> Vec<Finding> {
    let admin = &config.admin;
    if !admin.enabled {
        return Vec::new();
    }
    let mut out = vec![Finding::new(
        Severity::Note,
        format!(
            "the dashboard at {} opens only with its token, from loopback too",
            admin.base()
        ),
        "nothing to do; `switchboard admin-token` prints its link",
    )];
    let retired = config.deprecated.iter();
    for used in retired.filter(|u| u.deprecation.key == "admin.loopback_without_token") {
        out.push(Finding::new(
            Severity::Warning,
            used.to_string(),
            "remove loopback_without_token from [admin] (`switchboard config migrate` does)",
        ));
    }
    out
}

/// `/metrics` without its token: any loopback peer may read it, which behind a proxy on this
/// host is everyone the proxy serves, and a tool with network too.
fn metrics(config: &Config, listen: Option<SocketAddr>) -> Vec<Finding> {
    if config.gateway.metrics_token.is_set() {
        return Vec::new();
    }
    let remote = listen.is_some_and(|l| !l.ip().is_loopback());
    let also = if remote {
        " (other hosts are refused without it)"
    } else {
        ""
    };
    vec![Finding::new(
        Severity::Note,
        format!(
            "/metrics answers every loopback peer without a token{also}: behind a proxy on this host that is everyone the proxy serves, and a sandboxed tool with network reaches it too"
        ),
        "keep /metrics off the proxy (proxy only the chat's path and /admin), or set gateway.metrics_token = \"${SWITCHBOARD_METRICS_TOKEN}\"",
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Config {
        crate::config::parse(text, "t.toml", &[]).unwrap()
    }

    fn about<'a>(found: &'a [Finding], word: &str) -> Vec<&'a Finding> {
        found.iter().filter(|f| f.what.contains(word)).collect()
    }

    #[test]
    fn allowed_origins_on_a_chat_without_a_token_is_a_warning_and_with_one_is_not() {
        let local = "[gateway]\nlisten = \"127.0.0.1:8080\"\n[channels.web]\nkind = \"web\"\n\
                     allowed_origins = [\"https://chat.example.com\"]\n";
        let public = format!("{local}public_hosts = [\"chat.example.com\"]\n");
        let found = findings(&parse(&public));
        let flagged = about(&found, "allowed_origins");
        assert_eq!(flagged.len(), 1, "{found:?}");
        assert_eq!(flagged[0].severity, Severity::Warning);
        assert!(
            flagged[0].what.contains("https://chat.example.com"),
            "{found:?}"
        );
        let generated = findings(&parse(local));
        assert!(
            about(&generated, "allowed_origins").is_empty(),
            "{generated:?}"
        );
        assert!(
            about(&generated, "generated token").len() == 1,
            "the chat's gate is named: {generated:?}"
        );
        let configured = format!("{public}access_token = \"${{T:-}}x\"\n");
        assert!(about(&findings(&parse(&configured)), "allowed_origins").is_empty());
    }

    #[test]
    fn no_finding_says_a_loopback_door_needs_nothing_and_the_old_key_is_a_warning() {
        let text =
            "[gateway]\nlisten = \"127.0.0.1:8080\"\n[admin]\nloopback_without_token = true\n";
        let found = findings(&parse(text));
        assert!(
            !found.iter().any(|f| f.what.contains("loopback only")),
            "{found:?}"
        );
        let metrics = about(&found, "/metrics");
        assert_eq!(metrics.len(), 1, "{found:?}");
        assert!(metrics[0].what.contains("proxy"), "{metrics:?}");
        let key = about(&found, "loopback_without_token");
        assert_eq!(key.len(), 1, "{found:?}");
        assert_eq!(key[0].severity, Severity::Warning);
        assert!(key[0].what.contains("switchboard admin-token"), "{key:?}");
    }
}
