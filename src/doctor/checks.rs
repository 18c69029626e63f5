//! The doctor's checks, one function per concern, each returning its findings.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::{Finding, Severity};
use crate::config::Config;

/// Keys whose values are credentials wherever they appear in the file.
const SECRET_KEYS: &[&str] = &[
    "api_key",
    "token",
    "bot_token",
    "app_token",
    "signing_secret",
    "secret_token",
    "access_token",
    "metrics_token",
    "password",
];

/// Every finding for `config`, read from `path` whose text is `raw`.
pub fn all(config: &Config, path: &Path, raw: &str) -> Vec<Finding> {
    let mut out = exposure(config);
    out.extend(super::operator::findings(config));
    out.extend(plain_secrets(raw));
    out.extend(file_modes(config, path));
    out.extend(tools(config));
    out.extend(browser(config));
    out.extend(skills(config));
    out.extend(super::matrix::findings(config));
    out
}

/// A browser allowed (close to) every host: a page it opens can send what it reads
/// anywhere, and be steered anywhere.
fn browser(config: &Config) -> Vec<Finding> {
    let mut out = Vec::new();
    if config
        .tools
        .enabled
        .iter()
        .any(|t| t == crate::tools::BROWSER_TOOL)
    {
        let posture = crate::tools::browser_posture(&config.tools.browser, &config.sandbox.limits);
        out.push(Finding::new(Severity::Note, posture, "nothing to do"));
    }
    let broad = config
        .tools
        .browser
        .allowed_hosts
        .iter()
        .filter_map(crate::hosts::AllowedHost::broad)
        .map(|what| {
            Finding::new(
                Severity::Warning,
                format!(
                    "[tools.browser] allowed_hosts: {what}; the browser may reach almost any host"
                ),
                "list the sites the agent needs by name (\"docs.example.com\", \"*.example.com\")",
            )
        });
    out.extend(broad);
    out
}

/// Skills that will not load (changed since trusted, never trusted, invalid), each with how
/// to fix it, and a lock file others may write (they could trust anything).
fn skills(config: &Config) -> Vec<Finding> {
    if config.skills.dirs.is_empty() {
        return Vec::new();
    }
    let catalog = crate::skills::Catalog::scan(&config.skills, &config.gateway.data_dir);
    let mut out = Vec::new();
    if let Some(err) = &catalog.lock_error {
        let fix = "repair or remove the lock file, then trust each skill again";
        out.push(Finding::new(
            Severity::Warning,
            format!("skills: {err}"),
            fix,
        ));
    }
    let lock = &catalog.pins.file;
    if let Ok(meta) = std::fs::metadata(lock)
        && meta.permissions().mode() & 0o022 != 0
    {
        out.push(Finding::new(
            Severity::Critical,
            format!(
                "{} can be written by other users, who could trust any skill",
                lock.display()
            ),
            format!("chmod go-w {}", lock.display()),
        ));
    }
    let mut trusted = Vec::new();
    for found in &catalog.found {
        let Some(fix) = found.fix() else {
            trusted.push(found.name.as_str());
            continue;
        };
        let what = match &found.state {
            crate::skills::State::Changed { .. } => {
                format!(
                    "skill `{}` changed since it was trusted and is not loaded",
                    found.name
                )
            }
            crate::skills::State::Untrusted => {
                format!("skill `{}` was never trusted and is not loaded", found.name)
            }
            _ => format!("skill `{}` is invalid and is not loaded", found.name),
        };
        out.push(Finding::new(Severity::Warning, what, fix));
    }
    if !trusted.is_empty() {
        let what = format!("skills trusted and loaded: {}", trusted.join(", "));
        out.push(Finding::new(Severity::Note, what, "nothing to do"));
    }
    out
}

fn exposure(config: &Config) -> Vec<Finding> {
    let mut out = Vec::new();
    let listen = &*config.gateway.listen;
    let public = listen
        .parse::<std::net::SocketAddr>()
        .is_ok_and(|a| !a.ip().is_loopback());
    if public {
        out.push(Finding::new(
            Severity::Warning,
            format!("gateway.listen = {listen} accepts connections from other hosts"),
            "bind 127.0.0.1 and put a TLS proxy in front, unless other hosts must reach it",
        ));
    }
    out.extend(approvers(config));
    for warning in crate::access::warnings(config) {
        out.push(Finding::new(
            Severity::Critical,
            warning,
            "set dm_policy = \"pairing\" (or \"allowlist\"), or take shell, file_write and file_edit out of [tools] enabled",
        ));
    }
    out
}

/// Channels that admit groups but list no approver: there only approvers may decide, so
/// every call that asks waits until it expires.
fn approvers(config: &Config) -> Vec<Finding> {
    use switchboard_channel::GroupPolicy;
    let mut out = Vec::new();
    for (name, channel) in &config.channels {
        let rules = channel.settings().access();
        let groups = match rules.group_policy {
            GroupPolicy::Open => true,
            GroupPolicy::Allowlist => !rules.allowed_groups.is_empty(),
            GroupPolicy::Disabled => false,
        };
        let listed = config
            .policy
            .approvers
            .get(name)
            .is_some_and(|a| !a.is_empty());
        if groups && channel.kind() != "web" && !listed {
            out.push(Finding::new(
                Severity::Warning,
                format!("channels.{name} admits groups but [policy.approvers] lists nobody for it: a tool call that asks in a group can only expire"),
                format!("add {name} = [\"<user id>\"] under [policy.approvers], or `switchboard access approver {name} <user>`"),
            ));
        }
    }
    out
}

/// Secret keys written with a literal value instead of `${VAR}` (the value is never shown).
fn plain_secrets(raw: &str) -> Vec<Finding> {
    let Ok(doc) = raw.parse::<toml::Table>() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    walk(&doc, "", &mut out);
    out
}

fn walk(table: &toml::Table, prefix: &str, out: &mut Vec<Finding>) {
    for (key, value) in table {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match value {
            toml::Value::Table(inner) => walk(inner, &path, out),
            toml::Value::String(text)
                if SECRET_KEYS.contains(&key.as_str())
                    && !text.is_empty()
                    && !text.contains("${") =>
            {
                out.push(Finding::new(
                    Severity::Critical,
                    format!("{path} is written in plain text in the config file"),
                    format!("write {key} = \"${{VAR}}\" and set VAR in the environment (then rotate the exposed value)"),
                ));
            }
            _ => {}
        }
    }
}

fn file_modes(config: &Config, path: &Path) -> Vec<Finding> {
    let mut out = Vec::new();
    let readable =
        |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o004 != 0);
    if readable(path) {
        out.push(Finding::new(
            Severity::Warning,
            format!("{} is world-readable", path.display()),
            format!("chmod 600 {}", path.display()),
        ));
    }
    let data = &config.gateway.data_dir;
    out.extend(super::data_dir::mode(config));
    let admin_token = crate::data_dir::admin_token(data);
    if readable(&admin_token) {
        out.push(Finding::new(
            Severity::Critical,
            format!(
                "the dashboard's token file {} is world-readable",
                admin_token.display()
            ),
            format!(
                "chmod 600 {}, then `switchboard admin-token --rotate`",
                admin_token.display()
            ),
        ));
    }
    let tokens = std::fs::read_dir(data.join("web")).into_iter().flatten();
    for token in tokens.filter_map(Result::ok) {
        let p = token.path();
        if p.extension().is_some_and(|e| e == "token") && readable(&p) {
            out.push(Finding::new(
                Severity::Critical,
                format!("the web chat token file {} is world-readable", p.display()),
                format!(
                    "chmod 600 {}, then `switchboard web-token --rotate`",
                    p.display()
                ),
            ));
        }
    }
    out
}

fn tools(config: &Config) -> Vec<Finding> {
    let mut out = Vec::new();
    let sandbox = crate::sandbox::Sandbox::new(&config.sandbox, &config.gateway.data_dir);
    out.push(Finding::new(
        Severity::Note,
        format!("sandbox: {}", sandbox.posture()),
        match sandbox.posture().missing.is_empty() {
            true => "nothing to do",
            false => "see the findings about what is missing",
        },
    ));
    out.extend(super::data_dir::reach(sandbox.posture()));
    for warning in sandbox.warnings() {
        out.push(Finding::new(
            Severity::Warning,
            warning,
            "run on a kernel with the missing layers, or leave the shell disabled",
        ));
    }
    if let Some(warning) = crate::provider::key_warning(&config.provider) {
        out.push(Finding::new(
            Severity::Warning,
            warning,
            "set the provider's key in the environment",
        ));
    }
    for warning in crate::mcp::path_warnings(config, crate::mcp::ToolUser::of(config)) {
        out.push(Finding::new(
            Severity::Warning,
            warning,
            "see `switchboard check --probe`",
        ));
    }
    for name in config.mcp.servers.keys() {
        let allowed = config
            .policy
            .allow
            .iter()
            .any(|rule| rule == "mcp(*)" || rule.starts_with(&format!("mcp({name}__")));
        if !allowed {
            out.push(Finding::new(
                Severity::Note,
                format!("mcp server `{name}` has no allow rule: every call asks for approval"),
                format!(
                    "add \"mcp({name}__<tool>)\" to [policy] allow for tools that may run unasked"
                ),
            ));
        }
    }
    out
}

/// What the running gateway (if one answers at `gateway.listen`) reports in `/readyz`: the
/// sandbox as its own start-up probe measured it, and MCP servers that failed.
pub async fn live(config: &Config) -> Vec<Finding> {
    let Ok(addr) = config.gateway.listen.parse::<std::net::SocketAddr>() else {
        return Vec::new();
    };
    let host = if addr.ip().is_unspecified() {
        "127.0.0.1".to_owned()
    } else {
        addr.ip().to_string()
    };
    let url = format!("http://{host}:{}/readyz", addr.port());
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(3))
        .build();
    let answer = match client {
        Ok(client) => client.get(&url).send().await,
        Err(_) => return Vec::new(),
    };
    let Ok(body) = answer.map(|r| r.json::<serde_json::Value>()) else {
        return vec![Finding::new(
            Severity::Note,
            format!("no gateway answers at {url}: the findings come from the config and this host"),
            "start the gateway and run doctor again to see what it measured",
        )];
    };
    let body = body.await.unwrap_or_default();
    let checks = body["checks"].as_array().cloned().unwrap_or_default();
    let mut out = Vec::new();
    for check in checks {
        let name = check["name"].as_str().unwrap_or_default();
        let ok = check["ok"].as_bool().unwrap_or(true);
        let detail = check["detail"].to_string();
        if name == "sandbox" || (name.starts_with("mcp:") && !ok) {
            let severity = if ok {
                Severity::Note
            } else {
                Severity::Warning
            };
            out.push(Finding::new(
                severity,
                format!("the running gateway reports {name}: {detail}"),
                if ok {
                    "nothing to do"
                } else {
                    "see its log and `switchboard check --probe`"
                },
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_channel_open_to_groups_without_approvers_is_a_warning_with_its_fix() {
        let text = "[channels.tg]\nkind = \"telegram\"\ntoken = \"\"\ngroup_policy = \"open\"\n";
        let config = crate::config::parse(text, "t.toml", &[]).unwrap();
        let found = approvers(&config);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].fix.contains("[policy.approvers]"), "{found:?}");
        let with = format!("{text}[policy.approvers]\ntg = [\"42\"]\n");
        let config = crate::config::parse(&with, "t.toml", &[]).unwrap();
        assert!(approvers(&config).is_empty());
    }

    #[test]
    fn a_secret_written_in_plain_text_is_named_by_key_and_a_variable_is_not() {
        let found =
            plain_secrets("[provider]\napi_key = \"sk-abc\"\n[channels.s]\nbot_token = \"${T}\"\n");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].what.starts_with("provider.api_key"), "{found:?}");
        assert!(!found[0].what.contains("sk-abc") && !found[0].fix.contains("sk-abc"));
    }
}
