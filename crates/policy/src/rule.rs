//! Policy patterns, `tool` or `tool(specifier)`, compiled once: a glob over the normalised
//! simple command for `shell`, over the `path` argument for file tools (or the `url` for
//! others), and `domain:HOST` over a URL's host.

use globset::{GlobBuilder, GlobMatcher};
use serde_json::Value;

use super::part::{Part, Redirect};
use super::views::deny_views;

/// The tool whose calls are shell command lines.
pub(crate) const SHELL: &str = "shell";

/// The pseudo-tool naming MCP tools in rules: `mcp(github__create_issue)`, `mcp(github__*)`.
pub(crate) const MCP: &str = "mcp";

/// The browser tool: `browser(HOST)` rules match the host of an `open` call's URL.
pub(crate) const BROWSER: &str = "browser";

/// Separator between an MCP server's name and its tool's name, as the model and the rules see
/// them (`github__create_issue`).
pub const TOOL_SEPARATOR: &str = "__";

/// Whether `tool` is an MCP server's tool (`<server>__<tool>`; no built-in name has `__`).
pub(crate) fn is_mcp(tool: &str) -> bool {
    tool.contains(TOOL_SEPARATOR)
}

/// What a specifier is matched against.
#[derive(Debug, Clone)]
enum Spec {
    /// Every call of the tool.
    Any,
    /// A shell simple command; `*` crosses spaces and `/`.
    Command(GlobMatcher),
    /// The `path` argument (`*` stays within one directory, `**` crosses them), else the `url`.
    Path(GlobMatcher),
    /// The host of the `url` argument, case-insensitive.
    Domain(GlobMatcher),
    /// The `<server>__<tool>` name of an MCP tool (`mcp(...)` rules).
    McpTool(GlobMatcher),
}

/// One compiled pattern.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    /// The pattern as written, for reasons and errors.
    pub source: String,
    tool: String,
    spec: Spec,
    /// Which list it came from: a deny or ask rule matches every spelling of a command
    /// ([`deny_views`]), an allow rule only the command as written.
    list: Listed,
}

/// The rule list a pattern belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Listed {
    Deny,
    Ask,
    Allow,
}

impl Rule {
    /// Compiles a pattern of the `list` named (`deny`, `ask`, `allow`).
    pub(crate) fn for_list(list: &str, pattern: &str) -> Result<Self, String> {
        let mut rule = Self::parse(pattern)?;
        rule.list = match list {
            "deny" => Listed::Deny,
            "ask" => Listed::Ask,
            _ => Listed::Allow,
        };
        Ok(rule)
    }

    /// Parses `tool` or `tool(specifier)` as an allow rule; the error names the pattern and
    /// what is wrong.
    pub(crate) fn parse(pattern: &str) -> Result<Self, String> {
        let fail = |why: &str| format!("invalid policy pattern `{pattern}`: {why}");
        let trimmed = pattern.trim();
        let (tool, spec) = match trimmed.split_once('(') {
            None => (trimmed, None),
            Some((tool, rest)) => {
                let spec = rest
                    .strip_suffix(')')
                    .ok_or_else(|| fail("missing the closing `)`"))?;
                if spec.is_empty() {
                    return Err(fail(
                        "empty specifier; write the bare tool name to match every call",
                    ));
                }
                (tool, Some(spec))
            }
        };
        if tool.is_empty() {
            return Err(fail("missing the tool name"));
        }
        if !tool
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        {
            return Err(fail(
                "a tool name has only letters, digits, `_`, `-` and `.`",
            ));
        }
        let spec = match spec {
            None => Spec::Any,
            Some(spec) if tool == SHELL => {
                Spec::Command(glob(spec, false, false).map_err(|e| fail(&e))?)
            }
            Some(spec) if tool == MCP => {
                Spec::McpTool(glob(spec, false, false).map_err(|e| fail(&e))?)
            }
            Some(spec) if tool == BROWSER => {
                let host = spec.strip_prefix("domain:").unwrap_or(spec);
                Spec::Domain(glob(host, false, true).map_err(|e| fail(&e))?)
            }
            Some(spec) => match spec.strip_prefix("domain:") {
                Some("") => return Err(fail("`domain:` needs a host")),
                Some(host) => Spec::Domain(glob(host, false, true).map_err(|e| fail(&e))?),
                None => {
                    let path = spec.strip_prefix("./").unwrap_or(spec);
                    Spec::Path(glob(path, true, false).map_err(|e| fail(&e))?)
                }
            },
        };
        Ok(Self {
            source: trimmed.to_string(),
            tool: tool.to_string(),
            spec,
            list: Listed::Allow,
        })
    }

    /// Whether this `shell` rule matches one simple command. A deny or ask rule matches any of
    /// its spellings. An allow rule matches the text as written, assignments and redirections
    /// included, and a wildcard never stands for an assignment, an `env -C DIR`, a redirection
    /// that writes or a word bash expands: those must be spelled out in the pattern
    /// (`shell(npm test > out.txt)`).
    pub(crate) fn matches_part(&self, part: &Part) -> bool {
        let glob = match (&self.spec, self.tool == SHELL) {
            (_, false) => return false,
            (Spec::Any, true) => return true,
            (Spec::Command(glob), true) => glob,
            (Spec::Path(_) | Spec::Domain(_) | Spec::McpTool(_), true) => return false,
        };
        if self.list != Listed::Allow {
            return deny_views(part).iter().any(|view| glob.is_match(view));
        }
        let spelled = |text: &str| {
            [text.to_string(), escape(text, false), escape(text, true)]
                .iter()
                .any(|t| self.source.contains(t.as_str()))
        };
        let writes = part.redirects.iter().filter(|r| r.writes());
        let chdir = part.chdir.as_ref().map(|dir| format!("env -C {dir}"));
        glob.is_match(&part.text)
            && part.prefix.iter().chain(&chdir).all(|a| spelled(a))
            && writes.map(Redirect::render).all(|r| spelled(&r))
            && part.unread.iter().all(|w| spelled(w))
    }

    /// Whether this deny or ask rule may match a command with unread words: one of the
    /// `views` bash could run matches it, or (`anything`) the words could hide any command.
    pub(crate) fn may_match_unread(&self, views: &[Part], anything: bool) -> bool {
        self.list != Listed::Allow
            && self.tool == SHELL
            && (anything || views.iter().any(|p| self.matches_part(p)))
    }

    /// Whether this deny rule names a program of a line the parser could not read.
    pub(crate) fn denies_any(&self, rough: &[Part]) -> bool {
        self.list == Listed::Deny && rough.iter().any(|p| self.matches_part(p))
    }

    /// Whether this rule matches a call of a tool other than `shell`.
    pub(crate) fn matches_call(&self, tool: &str, args: &Value) -> bool {
        if self.tool == MCP {
            // Bare `mcp` names every MCP tool; `mcp(glob)` those whose full name matches.
            return is_mcp(tool)
                && match &self.spec {
                    Spec::McpTool(glob) => glob.is_match(tool),
                    _ => true,
                };
        }
        self.tool == tool
            && match &self.spec {
                Spec::Any => true,
                Spec::Command(_) | Spec::McpTool(_) => false,
                Spec::Path(glob) => match (path_arg(args), args.get("url").and_then(Value::as_str))
                {
                    (Some(path), _) => glob.is_match(path),
                    (None, Some(url)) => glob.is_match(url),
                    (None, None) => false,
                },
                Spec::Domain(glob) => host_arg(args).is_some_and(|host| glob.is_match(host)),
            }
    }
}

fn glob(
    pattern: &str,
    literal_separator: bool,
    case_insensitive: bool,
) -> Result<GlobMatcher, String> {
    GlobBuilder::new(pattern)
        .literal_separator(literal_separator)
        .case_insensitive(case_insensitive)
        // Backslashes are ordinary characters in commands (`printf 'a\n'`); escape with `[*]`.
        .backslash_escape(false)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| e.kind().to_string())
}

/// The `path` argument, lexically normalised so `src/../../etc/x` cannot pass for `src/**`.
pub(crate) fn path_arg(args: &Value) -> Option<String> {
    let raw = args.get("path")?.as_str()?;
    let mut parts: Vec<&str> = Vec::new();
    for component in raw.split('/') {
        match component {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    let joined = parts.join("/");
    Some(match (raw.starts_with('/'), joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_string(),
        (false, false) => joined,
    })
}

/// The lower-case host of the `url` argument.
pub(crate) fn host_arg(args: &Value) -> Option<String> {
    let url = url::Url::parse(args.get("url")?.as_str()?).ok()?;
    url.host_str().map(str::to_ascii_lowercase)
}

/// Escapes glob metacharacters so the text matches only itself: `*` becomes `[*]`, and so on.
/// Inside an alternation (`{a,b}`) commas are escaped too.
pub(crate) fn escape(text: &str, in_alternation: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '*' | '?' | '[' | '{' | '}' => out.extend(['[', c, ']']),
            ',' if in_alternation => out.push_str("[,]"),
            c => out.push(c),
        }
    }
    out
}
