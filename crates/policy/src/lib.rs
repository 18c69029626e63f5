//! The policy gate every tool call passes before it runs: allow, ask (an approval through
//! buttons) or deny. Pure and synchronous; the agent loop calls [`Policy::evaluate`].
//!
//! Order: deny rules → ask rules → allow rules (and the conversation's "always allow" rules),
//! first match wins; then the mode's default. A shell command line is split into its simple
//! commands (`analyze`), each judged on its own; the most severe verdict wins. Circuit
//! breakers (`breakers`) turn any verdict but deny into ask, in every mode.
//!
//! The outcome is a typed [`Decision`] (verdict, matching rule or breaker, reason, decider)
//! that travels unchanged to the agent's events, the audit log and the metrics.
//!
//! Modules, each using only those before it:
//! - `words` (one word: substitutions, unquoting, basename), `part` (a simple command as
//!   judged), `git` (when git only reads), `expansion` (which words bash still expands);
//! - `command` (wrappers stripped), `readonly` (the read-only programs), `views` (the
//!   spellings deny and ask rules see);
//! - `carrier` (`sh -c`, `eval`, `find -exec`), `rule` (one compiled pattern);
//! - `analyze` (a command line split into parts), then `unread` (what a part with unread words
//!   may run), then `breakers` (the circuit breakers); this file judges the parts.

mod analyze;
mod breakers;
mod browser;
mod carrier;
mod command;
mod expansion;
mod git;
mod part;
mod readonly;
mod rule;
mod unread;
mod views;
mod words;

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde_json::Value;

use part::{Analysis, Part};
pub use rule::TOOL_SEPARATOR;
use rule::{BROWSER, MCP, Rule, SHELL, escape, host_arg, is_mcp, path_arg};
pub use switchboard_gate::{Decider, Decision, Matched, RuleList, Verdict};

/// The reason given when a shell command line cannot be read.
const UNPARSABLE: &str = "could not parse the command";

/// Longest command text quoted in a reason.
const REASON_COMMAND_CHARS: usize = 80;

/// The `[policy]` section of the config.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PolicyConfig {
    /// What happens to a call no rule matches.
    pub mode: Mode,
    /// Patterns refused outright; checked first.
    pub deny: Vec<String>,
    /// Patterns that always need approval; checked second.
    pub ask: Vec<String>,
    /// Patterns allowed without asking; checked third.
    pub allow: Vec<String>,
    /// channel instance name → user ids who may approve anything in that channel (besides the requester)
    pub approvers: BTreeMap<String, Vec<String>>,
    /// How long an approval request stays answerable.
    pub approval_timeout_secs: u64,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        Self {
            mode: Mode::default(),
            deny: Vec::new(),
            ask: Vec::new(),
            allow: Vec::new(),
            approvers: BTreeMap::new(),
            approval_timeout_secs: 300,
        }
    }
}

/// The default for calls no rule matches.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Ask for every call of a tool that is not read-only, every shell command included.
    Manual,
    /// Allow read-only tools and the curated read-only shell commands; ask for the rest.
    #[default]
    Guarded,
    /// Allow whatever no rule denies (circuit breakers still ask).
    Autonomous,
    /// Allow read-only tools and read-only shell commands; refuse everything else.
    ReadOnly,
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Manual => "manual",
            Self::Guarded => "guarded",
            Self::Autonomous => "autonomous",
            Self::ReadOnly => "read_only",
        })
    }
}

/// The compiled `[policy]` rules and mode.
#[derive(Debug, Clone)]
pub struct Policy {
    mode: Mode,
    deny: Vec<Rule>,
    ask: Vec<Rule>,
    allow: Vec<Rule>,
}

impl Policy {
    /// Compile the rules; a malformed pattern is an error naming it.
    pub fn new(config: &PolicyConfig) -> Result<Self, String> {
        let compile = |list: &str, patterns: &[String]| -> Result<Vec<Rule>, String> {
            let compiled = patterns.iter().enumerate().map(|(i, p)| {
                Rule::for_list(list, p).map_err(|e| format!("policy.{list}[{i}]: {e}"))
            });
            compiled.collect()
        };
        Ok(Self {
            mode: config.mode,
            deny: compile("deny", &config.deny)?,
            ask: compile("ask", &config.ask)?,
            allow: compile("allow", &config.allow)?,
        })
    }

    /// Decide one call. `read_only` is the tool's own declaration; `extra_allow` are per-conversation "always allow" patterns (same syntax, checked after ask rules, together with `allow`).
    pub fn evaluate(
        &self,
        tool: &str,
        args: &Value,
        read_only: bool,
        extra_allow: &[String],
    ) -> Decision {
        // Stored patterns were validated when saved; one that no longer parses grants nothing.
        let extra: Vec<Rule> = extra_allow
            .iter()
            .filter_map(|p| Rule::parse(p).ok())
            .collect();
        if tool == SHELL {
            return self.evaluate_shell(args, &extra);
        }
        let matched = self.first_match(&extra, |rule| rule.matches_call(tool, args));
        if tool == BROWSER {
            return browser::judge(self.mode, args, matched);
        }
        if is_mcp(tool) {
            let mut decision = matched.unwrap_or_else(|| self.mcp_default(tool));
            if read_only && decision.verdict == Verdict::Ask {
                decision
                    .reason
                    .push_str(" (its server marks it read-only; that alone never skips asking)");
            }
            return decision;
        }
        matched.unwrap_or_else(|| {
            let mode = self.mode;
            match (mode, read_only) {
                (Mode::Autonomous, _) => Decision::by_mode(
                    Verdict::Allow,
                    format!("mode {mode}: no rule denies `{tool}`"),
                ),
                (_, true) => Decision::by_mode(
                    Verdict::Allow,
                    format!("mode {mode}: `{tool}` is read-only"),
                ),
                (Mode::ReadOnly, false) => Decision::by_mode(
                    Verdict::Deny,
                    format!("mode {mode}: `{tool}` is not read-only"),
                ),
                (_, false) => Decision::by_mode(
                    Verdict::Ask,
                    format!("mode {mode}: `{tool}` is not read-only"),
                ),
            }
        })
    }

    /// An MCP tool no rule names asks in every mode (a server's own `readOnlyHint` is only
    /// shown in the reason), and is refused in `read_only` mode.
    fn mcp_default(&self, tool: &str) -> Decision {
        let mode = self.mode;
        let verdict = if mode == Mode::ReadOnly {
            Verdict::Deny
        } else {
            Verdict::Ask
        };
        Decision::by_mode(
            verdict,
            format!("mode {mode}: MCP tool `{tool}` asks unless an allow rule names it"),
        )
    }

    fn evaluate_shell(&self, args: &Value, extra: &[Rule]) -> Decision {
        let command = args.get("command").and_then(Value::as_str);
        let analysis = command.ok_or(words::Unparsable).and_then(analyze::analyze);
        let Ok(analysis) = analysis else {
            // Unreadable: it asks, unless a deny rule names a program somewhere in it
            // (`denies_any` is true only for deny-list rules).
            let rough = analyze::rough(command.unwrap_or_default());
            return self
                .first_match(&[], |rule| rule.denies_any(&rough))
                .unwrap_or_else(|| Decision::by_mode(Verdict::Ask, UNPARSABLE));
        };
        let decisions = analysis
            .parts
            .iter()
            .map(|part| self.judge_part(part, &analysis, extra));
        // The most severe part decides; among equal asks a circuit breaker is the reason worth
        // showing the approver; otherwise the first part gives it.
        let rank = |d: &Decision| (d.verdict, d.is_breaker());
        decisions
            .reduce(|worst, next| {
                if rank(&next) > rank(&worst) {
                    next
                } else {
                    worst
                }
            })
            .unwrap_or_else(|| Decision::by_mode(Verdict::Allow, "empty command: nothing runs"))
    }

    /// One simple command's verdict. Words bash expands into something unread count as
    /// matching wherever they could: a deny or ask rule matching any command they may make,
    /// a circuit breaker tripped by any of those (deny wins when in doubt).
    fn judge_part(&self, part: &Part, analysis: &Analysis, extra: &[Rule]) -> Decision {
        let unread = unread::Unread::of(part);
        let decision = self
            .first_match(extra, |rule| {
                rule.matches_part(part) || rule.may_match_unread(&unread.views, unread.anything)
            })
            .unwrap_or_else(|| self.shell_default(part));
        let breaker = breakers::tripped(part, analysis)
            .or_else(|| unread.views.iter().find_map(breakers::tripped_by_view));
        match breaker {
            Some(name) if decision.verdict != Verdict::Deny => {
                Decision::by_rule(Verdict::Ask, Matched::Breaker(name.to_owned()))
            }
            _ => decision,
        }
    }

    /// Deny, then ask, then allow and the conversation's extra allow rules: the first match.
    fn first_match(&self, extra: &[Rule], matches: impl Fn(&Rule) -> bool) -> Option<Decision> {
        let lists = [
            (Verdict::Deny, RuleList::Deny, self.deny.as_slice()),
            (Verdict::Ask, RuleList::Ask, self.ask.as_slice()),
            (Verdict::Allow, RuleList::Allow, self.allow.as_slice()),
            (Verdict::Allow, RuleList::AlwaysAllow, extra),
        ];
        lists.into_iter().find_map(|(verdict, list, rules)| {
            let rule = rules.iter().find(|r| matches(r))?;
            let pattern = rule.source.clone();
            Some(Decision::by_rule(verdict, Matched::Rule { list, pattern }))
        })
    }

    fn shell_default(&self, part: &Part) -> Decision {
        let shown = shorten(&part.text);
        let mode = self.mode;
        if part.carrier {
            // `sh -c '…'`, `eval …`: the commands inside were judged as parts of their own.
            return Decision::by_mode(
                Verdict::Allow,
                format!("mode {mode}: `{shown}` runs only what is judged inside it"),
            );
        }
        let read_only = readonly::is_read_only(part);
        match (mode, read_only) {
            (Mode::Autonomous, _) => Decision::by_mode(
                Verdict::Allow,
                format!("mode {mode}: no rule denies `{shown}`"),
            ),
            (Mode::Manual, _) => Decision::by_mode(
                Verdict::Ask,
                format!("mode {mode}: every shell command asks (`{shown}`)"),
            ),
            (_, true) => Decision::by_mode(
                Verdict::Allow,
                format!("mode {mode}: `{shown}` is read-only"),
            ),
            (Mode::ReadOnly, false) => Decision::by_mode(
                Verdict::Deny,
                format!("mode {mode}: `{shown}` is not read-only"),
            ),
            (Mode::Guarded, false) => Decision::by_mode(
                Verdict::Ask,
                format!("mode {mode}: `{shown}` is not read-only"),
            ),
        }
    }
}

/// The first line of `text`, cut to [`REASON_COMMAND_CHARS`].
fn shorten(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() <= REASON_COMMAND_CHARS && line.len() == text.len() {
        return line.to_string();
    }
    let cut: String = line.chars().take(REASON_COMMAND_CHARS).collect();
    format!("{cut}…")
}

/// The narrowest rule covering this call, for "Always allow": `shell(<normalised command>)` (exact, with glob metacharacters `*?[` escaped as `[*]` etc.), `file_write(<path>)`, `http_fetch(domain:<host>)`, otherwise the bare tool name.
///
/// A shell line of several simple commands gets one alternative per command,
/// `shell({git status,ls -la})`, since each simple command is matched on its own.
pub fn narrowest_rule(tool: &str, args: &Value) -> String {
    if tool == SHELL {
        let command = args
            .get("command")
            .and_then(Value::as_str)
            .unwrap_or_default();
        return narrowest_shell_rule(command);
    }
    if is_mcp(tool) {
        return format!("{MCP}({})", escape(tool, false));
    }
    if let Some(path) = path_arg(args) {
        return format!("{tool}({})", escape(&path, false));
    }
    match host_arg(args) {
        Some(host) => format!("{tool}(domain:{})", escape(&host, false)),
        None => tool.to_string(),
    }
}

fn narrowest_shell_rule(command: &str) -> String {
    let mut texts: Vec<&str> = Vec::new();
    let analysis = analyze::analyze(command).unwrap_or_default();
    for part in analysis.parts.iter().filter(|p| !p.carrier) {
        if !texts.contains(&part.text.as_str()) {
            texts.push(&part.text);
        }
    }
    match texts.as_slice() {
        // Unparsable or empty: the raw line, which no simple command will ever equal by accident.
        [] if command.trim().is_empty() => format!("{SHELL}( )"),
        [] => format!("{SHELL}({})", escape(command.trim(), false)),
        [one] => format!("{SHELL}({})", escape(one, false)),
        many => {
            let alternatives: Vec<String> = many.iter().map(|t| escape(t, true)).collect();
            format!("{SHELL}({{{}}})", alternatives.join(","))
        }
    }
}

/// The simple commands the gate reads in a shell line, each as the words it judges (wrappers
/// stripped; nested ones, such as `find -exec`'s and `sh -c`'s, included), or `None` when it
/// cannot read the line. What the differential test holds against the words bash runs.
pub fn read_commands(command: &str) -> Option<Vec<Vec<String>>> {
    let analysis = analyze::analyze(command).ok()?;
    Some(analysis.parts.into_iter().map(|p| p.words).collect())
}

/// The words the gate judges for a command that runs as `argv`: its wrappers stripped, as
/// [`read_commands`] strips them.
pub fn judged_words(argv: &[String]) -> Vec<String> {
    let words = argv.iter().cloned().map(command::Word::plain).collect();
    command::strip_wrappers(words).words
}

/// Validate patterns without building (for `switchboard check`).
pub fn validate_pattern(pattern: &str) -> Result<(), String> {
    Rule::parse(pattern).map(|_| ())
}

#[cfg(test)]
mod tests;
