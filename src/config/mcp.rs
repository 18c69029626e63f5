//! `[mcp.servers.<name>]`: Model Context Protocol servers whose tools the agent may call.
//! A server is either a command (stdio, run under the same sandbox as the shell tool, with
//! its own extra allowances) or a `url` (streamable HTTP, headers from `${VAR}` secrets).
//! Checked at load time so `check` names the file, line and key of a bad entry.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use super::Secret;
use crate::sandbox::Network;

pub use crate::policy::TOOL_SEPARATOR;

/// `[mcp]`.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct McpConfig {
    /// Servers by name; the name prefixes each of its tools (`<name>__<tool>`).
    pub servers: BTreeMap<String, McpServerConfig>,
}

/// One `[mcp.servers.<name>]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct McpServerConfig {
    /// The program of a stdio server (found on the sandbox's `PATH`, or absolute).
    pub command: Option<String>,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its environment: the only variables it sees besides `PATH`, `HOME`, `TMPDIR`, `LANG`.
    /// Values may be `${VAR}` secrets; they are redacted wherever they appear.
    pub env: BTreeMap<String, Secret>,
    /// The endpoint of a streamable-HTTP server.
    pub url: Option<String>,
    /// Headers sent to a streamable-HTTP server (`Authorization = "Bearer ${TOKEN}"`).
    pub headers: BTreeMap<String, Secret>,
    /// Only these tools are offered (empty: all of them).
    pub enabled_tools: Vec<String>,
    /// These tools are never offered.
    pub disabled_tools: Vec<String>,
    /// How long one call (and the start-up handshake) may take.
    pub timeout_secs: u64,
    /// One process per conversation instead of one shared by all.
    pub per_conversation: bool,
    /// Paths a stdio server may read (and execute) besides the system directories,
    /// e.g. where its `node_modules` live.
    pub extra_read: Vec<PathBuf>,
    /// Paths a stdio server may write besides its own working directory.
    pub extra_write: Vec<PathBuf>,
    /// TCP a stdio server may open: `"off"` (default), `"full"` or a list of ports.
    pub network: Network,
}

impl Default for McpServerConfig {
    fn default() -> Self {
        Self {
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            url: None,
            headers: BTreeMap::new(),
            enabled_tools: Vec::new(),
            disabled_tools: Vec::new(),
            timeout_secs: 30,
            per_conversation: false,
            extra_read: Vec::new(),
            extra_write: Vec::new(),
            network: Network::Off,
        }
    }
}

impl McpServerConfig {
    /// Whether the server's tool `name` is offered, after the two filters.
    pub fn offers(&self, name: &str) -> bool {
        (self.enabled_tools.is_empty() || self.enabled_tools.iter().any(|t| t == name))
            && !self.disabled_tools.iter().any(|t| t == name)
    }
}

impl McpConfig {
    /// Every configured secret value of the servers (environment and header values).
    pub fn secret_values(&self) -> impl Iterator<Item = &str> {
        self.servers
            .values()
            .flat_map(|s| s.env.values().chain(s.headers.values()))
            .filter_map(Secret::expose)
    }
}

/// Problems with `[mcp]`, as `(key, message)`.
pub fn problems(config: &McpConfig) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (name, server) in &config.servers {
        let key = |k: &str| format!("mcp.servers.{name}.{k}");
        let mut problem = |k: &str, m: String| out.push((key(k), m));
        let valid_name = !name.is_empty()
            && !name.contains(TOOL_SEPARATOR)
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid_name {
            out.push((
                format!("mcp.servers.{name}"),
                "a server name has only letters, digits, `_` and `-`, and no `__`".into(),
            ));
            continue;
        }
        match (&server.command, &server.url) {
            (Some(_), Some(_)) => problem("url", "give either `command` or `url`, not both".into()),
            (None, None) => problem("command", "give a `command` (stdio) or a `url`".into()),
            (Some(c), None) if c.trim().is_empty() => {
                problem("command", "must not be empty".into())
            }
            (None, Some(url)) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    problem("url", format!("{url:?} is not an http(s) URL"));
                }
                let stdio_only = !server.args.is_empty()
                    || !server.env.is_empty()
                    || !server.extra_read.is_empty()
                    || !server.extra_write.is_empty()
                    || server.network != Network::Off;
                if stdio_only {
                    problem(
                        "url",
                        "args, env, extra_read, extra_write and network apply to stdio servers only"
                            .into(),
                    );
                }
            }
            (Some(_), None) => {
                if !server.headers.is_empty() {
                    problem("headers", "headers apply to `url` servers only".into());
                }
            }
        }
        if server.timeout_secs == 0 {
            problem("timeout_secs", "must be at least 1".into());
        }
        for (list, paths) in [
            ("extra_read", &server.extra_read),
            ("extra_write", &server.extra_write),
        ] {
            if let Some(p) = paths.iter().find(|p| !p.is_absolute()) {
                problem(list, format!("{} is not an absolute path", p.display()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Vec<(String, String)> {
        let config: McpConfig = toml::from_str(text).unwrap();
        problems(&config)
    }

    #[test]
    fn a_stdio_and_an_http_server_are_accepted() {
        let text = "[servers.fs]\ncommand = \"node\"\nargs = [\"server.js\"]\n\
                    [servers.gh]\nurl = \"https://mcp.example/mcp\"\ntimeout_secs = 5\n";
        assert!(parse(text).is_empty(), "{:?}", parse(text));
    }

    #[test]
    fn a_server_needs_exactly_one_of_command_and_url() {
        let both = parse("[servers.x]\ncommand = \"a\"\nurl = \"http://b\"\n");
        assert_eq!(both[0].0, "mcp.servers.x.url");
        let none = parse("[servers.x]\ntimeout_secs = 3\n");
        assert_eq!(none[0].0, "mcp.servers.x.command");
    }

    #[test]
    fn names_with_the_separator_and_stdio_keys_on_http_servers_are_refused() {
        assert_eq!(
            parse("[servers.a__b]\ncommand = \"x\"\n")[0].0,
            "mcp.servers.a__b"
        );
        let mixed = parse("[servers.h]\nurl = \"http://h\"\nargs = [\"x\"]\n");
        assert!(mixed[0].1.contains("stdio servers only"), "{mixed:?}");
        let relative = parse("[servers.s]\ncommand = \"x\"\nextra_read = [\"rel\"]\n");
        assert_eq!(relative[0].0, "mcp.servers.s.extra_read");
    }

    #[test]
    fn the_tool_filters_combine() {
        let server = McpServerConfig {
            enabled_tools: vec!["a".into(), "b".into()],
            disabled_tools: vec!["b".into()],
            ..McpServerConfig::default()
        };
        assert!(server.offers("a") && !server.offers("b") && !server.offers("c"));
    }
}
