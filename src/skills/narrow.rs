//! `allowed-tools`: once a turn has loaded a skill that declares it, the rest of that turn
//! may call only the tools it names (and `skill`, to load another). It only ever narrows:
//! a name the profile does not offer stays unavailable, since the call still has to find
//! the tool among the profile's own. Derived from the turn's messages, so a turn resumed
//! after an approval is narrowed the same way.
//!
//! Names are this gateway's tool names (`shell`, `file_read`, `mcp_server__tool`…); the
//! names skills written for other agents use are mapped (`Bash` → `shell`, `Read` →
//! `file_read`, …). An argument pattern (`Bash(git:*)`) narrows to the tool only: which
//! commands run stays the policy's decision.

use std::collections::BTreeSet;

use super::SkillSet;
use crate::agent::ToolScope;
use crate::provider::{ChatMessage, ToolCall};

/// Other agents' tool names, and ours for them.
const ALIASES: &[(&str, &str)] = &[
    ("Bash", "shell"),
    ("Read", "file_read"),
    ("Write", "file_write"),
    ("Edit", "file_edit"),
    ("MultiEdit", "file_edit"),
    ("LS", "file_list"),
    ("Glob", "file_list"),
    ("WebFetch", "http_fetch"),
    ("TodoWrite", "todo"),
];

/// The tool an `allowed-tools` entry names here.
pub fn tool_name(entry: &str) -> String {
    let bare = entry.split_once('(').map_or(entry, |(name, _)| name).trim();
    ALIASES
        .iter()
        .find(|(theirs, _)| *theirs == bare)
        .map_or(bare, |(_, ours)| ours)
        .to_owned()
}

/// What a turn may still call, given the skills it loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Narrowing {
    /// The tools left (always including `skill`).
    pub allowed: BTreeSet<String>,
    /// The skills that narrowed, for the refusal's reason.
    pub by: Vec<String>,
}

impl Narrowing {
    /// Whether `call` may run.
    pub fn allows(&self, call: &ToolCall) -> bool {
        self.allowed.contains(&call.name)
    }

    /// Why a call outside the set is refused, for the model and the audit.
    pub fn reason(&self, call: &ToolCall) -> String {
        let allowed: Vec<&str> = self.allowed.iter().map(String::as_str).collect();
        format!(
            "`{}` is outside the allowed-tools of skill {} loaded in this turn (allowed: {})",
            call.name,
            self.by.join(", "),
            allowed.join(", ")
        )
    }
}

/// The agent loop asks this before each call: outside the narrowing, a call is refused.
impl ToolScope for SkillSet {
    fn refusal(&self, turn: &[ChatMessage], call: &ToolCall) -> Option<String> {
        let narrowing = self.narrowing(turn)?;
        (!narrowing.allows(call)).then(|| narrowing.reason(call))
    }
}

impl SkillSet {
    /// The narrowing in force after `turn`'s messages: the intersection of the
    /// `allowed-tools` of every skill loaded so far (`None` when none narrows).
    pub fn narrowing(&self, turn: &[ChatMessage]) -> Option<Narrowing> {
        let loaded = turn
            .iter()
            .flat_map(|m| &m.tool_calls)
            .filter(|c| c.name == super::SKILL_TOOL)
            .filter_map(|c| self.get(c.args["name"].as_str()?));
        let mut narrowing: Option<Narrowing> = None;
        for skill in loaded {
            let Some(entries) = &skill.allowed_tools else {
                continue;
            };
            let mut own: BTreeSet<String> = entries.iter().map(|e| tool_name(e)).collect();
            own.insert(super::SKILL_TOOL.to_owned());
            narrowing = Some(match narrowing {
                None => Narrowing {
                    allowed: own,
                    by: vec![skill.name.clone()],
                },
                Some(mut n) if !n.by.contains(&skill.name) => {
                    n.allowed.retain(|t| own.contains(t));
                    n.by.push(skill.name.clone());
                    n
                }
                Some(n) => n,
            });
        }
        narrowing
    }
}
