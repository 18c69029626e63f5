//! `[agents.<name>]`: agent profiles (system prompt, provider, models, tools, policy, memory
//! scope, budgets), and which conversations use which. Every key a profile leaves out is
//! taken from today's sections (`[agent]`, `[provider]`, `[tools]`, `[policy]`, `[memory]`,
//! `[budgets]`), which together are the profile called `default`.
//!
//! Routing lives next to the channels it routes: `agent = "…"` in a `[channels.<name>]`
//! table, and `[channels.<name>.chats."<chat id>"] agent = "…"` for one chat of it (a chat id
//! as the platform spells it; the threads and topics of that chat follow it). Those keys are
//! taken out of the channel table before the channel crate reads it ([`without_routing`]) and
//! read here from the same document ([`Routing::from_doc`]).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, IgnoredAny, IntoDeserializer, MapAccess};
use toml_edit::{DocumentMut, Item};

use super::budgets::BudgetsConfig;
use super::providers::DEFAULT_PROVIDER;
use super::{Config, MemoryScopeMode};
use crate::policy::{Mode, PolicyConfig};

/// The profile conversations use when no route names another.
pub const DEFAULT_AGENT: &str = "default";

/// Keys of a `[channels.<name>]` table that belong to routing, not to the channel crate.
const ROUTING_KEYS: &[&str] = &["agent", "chats"];

/// One `[agents.<name>]` table; every key left out comes from the default profile.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct AgentProfileConfig {
    /// The system prompt (default: `[agent] system_prompt`).
    pub system_prompt: Option<String>,
    /// A provider name from `[providers.<name>]`, or `default` for `[provider]`.
    pub provider: Option<String>,
    /// Models `/model` may switch among, on `provider`; the first is used until someone
    /// switches (default: the provider's own `model`).
    pub models: Vec<String>,
    /// Providers tried in order, each with its own model, when the ones before fail before
    /// the first token (429, 5xx, connection errors, timeouts).
    pub fallback: Vec<String>,
    /// Built-in tools offered (default: `[tools] enabled`); `[]` offers none.
    pub tools: Option<Vec<String>>,
    /// Agent Skills this profile may use, by name (default: every skill `[skills] dirs`
    /// holds); `[]` uses none.
    pub skills: Option<Vec<String>>,
    /// Policy mode and rules (each left out comes from `[policy]`).
    pub policy: PolicyOverride,
    /// Whose memories conversations see (default: `[memory] scope`).
    pub memory_scope: Option<MemoryScopeMode>,
    /// Daily limits (default: `[budgets]`).
    pub budgets: Option<BudgetsConfig>,
    /// LLM round-trips per turn (default: `[agent] max_tool_iterations`).
    pub max_tool_iterations: Option<usize>,
    /// Stored messages loaded per turn (default: `[agent] history_limit`).
    pub history_limit: Option<usize>,
    /// When answers are spoken (default: `[voice] rule`; nothing is spoken without
    /// `[voice]`).
    pub voice: Option<super::VoiceRule>,
}

/// `[agents.<name>.policy]`: the keys given replace `[policy]`'s; approvers and the
/// approval timeout always come from `[policy]`.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct PolicyOverride {
    /// What happens to a call no rule matches.
    pub mode: Option<Mode>,
    /// Patterns refused outright.
    pub deny: Option<Vec<String>>,
    /// Patterns that always ask.
    pub ask: Option<Vec<String>>,
    /// Patterns allowed without asking.
    pub allow: Option<Vec<String>>,
}

impl PolicyOverride {
    /// `base` with this profile's mode and rules in place of its own.
    pub fn apply(&self, base: &PolicyConfig) -> PolicyConfig {
        let mut policy = base.clone();
        if let Some(mode) = self.mode {
            policy.mode = mode;
        }
        for (mine, theirs) in [
            (&self.deny, &mut policy.deny),
            (&self.ask, &mut policy.ask),
            (&self.allow, &mut policy.allow),
        ] {
            if let Some(rules) = mine {
                theirs.clone_from(rules);
            }
        }
        policy
    }
}

/// Which profile each channel, and each chat of it, uses (from the channel tables).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Routing {
    /// `[channels.<name>] agent`, by channel.
    pub channels: BTreeMap<String, String>,
    /// `[channels.<name>.chats."<chat>"] agent`, by (channel, chat).
    pub chats: BTreeMap<(String, String), String>,
}

impl Routing {
    /// The routing keys of every `[channels.<name>]` table in `doc`.
    pub(super) fn from_doc(doc: &DocumentMut) -> Self {
        let mut routing = Self::default();
        let Some(channels) = doc.get("channels").and_then(Item::as_table_like) else {
            return routing;
        };
        for (channel, table) in channels.iter() {
            let Some(table) = table.as_table_like() else {
                continue;
            };
            if let Some(agent) = table.get("agent").and_then(Item::as_str) {
                routing.channels.insert(channel.into(), agent.into());
            }
            let chats = table.get("chats").and_then(Item::as_table_like);
            for (chat, entry) in chats.into_iter().flat_map(|t| t.iter()) {
                let agent = entry
                    .as_table_like()
                    .and_then(|e| e.get("agent"))
                    .and_then(Item::as_str);
                if let Some(agent) = agent {
                    let at = (channel.to_owned(), chat.to_owned());
                    routing.chats.insert(at, agent.into());
                }
            }
        }
        routing
    }

    /// The profile name for a conversation in `chat` of `channel`.
    pub fn agent_for(&self, channel: &str, chat: &str) -> &str {
        let at = (channel.to_owned(), chat.to_owned());
        self.chats
            .get(&at)
            .or_else(|| self.channels.get(channel))
            .map_or(DEFAULT_AGENT, String::as_str)
    }
}

/// A channel table's map with the routing keys skipped, for the channel crate's own type
/// (which refuses keys it does not know). Keys and values pass through unbuffered, so the
/// crate's errors keep their place in the file.
pub(super) struct WithoutRouting<A>(pub A);

/// Wrap a channel table's map so the crate never sees `agent` or `chats`.
pub(super) fn without_routing<A>(map: A) -> WithoutRouting<A> {
    WithoutRouting(map)
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for WithoutRouting<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        let mut seed = Some(seed);
        loop {
            // The key is read inside the inner map's own key step, so a key the crate
            // refuses is reported there, with its path and its place in the file.
            let Some(read) = self.0.next_key_seed(RoutingKey(&mut seed))? else {
                return Ok(None);
            };
            match read {
                Some(value) => return Ok(Some(value)),
                None => {
                    self.0.next_value::<IgnoredAny>()?;
                }
            }
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.0.next_value_seed(seed)
    }
}

/// Reads one key: `None` for a routing key (skipped), else the crate's own key value.
struct RoutingKey<'s, K>(&'s mut Option<K>);

impl<'de, K: DeserializeSeed<'de>> DeserializeSeed<'de> for RoutingKey<'_, K> {
    type Value = Option<K::Value>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        let key = String::deserialize(d)?;
        if ROUTING_KEYS.contains(&key.as_str()) {
            return Ok(None);
        }
        let Some(seed) = self.0.take() else {
            return Err(de::Error::custom("a channel key was read twice"));
        };
        let key: de::value::StringDeserializer<D::Error> = key.into_deserializer();
        seed.deserialize(key).map(Some)
    }
}

/// `(key, message)` for every profile reference that names nothing: a route to an unknown
/// profile or channel, a profile's unknown provider, fallback, tool or bad policy pattern.
pub(super) fn problems(config: &Config) -> Vec<(String, String)> {
    let mut problems = Vec::new();
    let known_agent = |name: &str| name == DEFAULT_AGENT || config.agents.contains_key(name);
    let agents = || {
        let mut names: Vec<&str> = config.agents.keys().map(String::as_str).collect();
        names.insert(0, DEFAULT_AGENT);
        names.join(", ")
    };
    for (channel, agent) in &config.routing.channels {
        if !known_agent(agent) {
            let message = format!("unknown agent profile {agent:?}; known: {}", agents());
            problems.push((format!("channels.{channel}.agent"), message));
        }
    }
    for ((channel, chat), agent) in &config.routing.chats {
        if !known_agent(agent) {
            let message = format!("unknown agent profile {agent:?}; known: {}", agents());
            problems.push((format!("channels.{channel}.chats.{chat}.agent"), message));
        }
    }
    for (name, profile) in &config.agents {
        problems.extend(profile_problems(config, name, profile));
    }
    problems
}

/// The problems of one `[agents.<name>]` table.
fn profile_problems(
    config: &Config,
    name: &str,
    profile: &AgentProfileConfig,
) -> Vec<(String, String)> {
    let mut problems = Vec::new();
    let key = |k: &str| format!("agents.{name}.{k}");
    let providers = config.provider_names().join(", ");
    let provider = profile.provider.as_deref().unwrap_or(DEFAULT_PROVIDER);
    if config.provider_named(provider).is_none() {
        let message = format!("unknown provider {provider:?}; known: {providers}");
        problems.push((key("provider"), message));
    }
    for fallback in &profile.fallback {
        if config.provider_named(fallback).is_none() {
            let message = format!("unknown provider {fallback:?}; known: {providers}");
            problems.push((key("fallback"), message));
        }
    }
    if profile.models.iter().any(|m| m.trim().is_empty()) {
        problems.push((key("models"), "a model name is empty".into()));
    }
    for tool in profile.tools.iter().flatten() {
        if !super::TOOL_NAMES.contains(&tool.as_str()) {
            let known = super::TOOL_NAMES.join(", ");
            let message = format!("unknown tool {tool:?}; known: {known}");
            problems.push((key("tools"), message));
        }
    }
    for skill in profile.skills.iter().flatten() {
        if let Err(why) = crate::skill_format::check_name(skill) {
            problems.push((
                key("skills"),
                format!("{skill:?} is not a skill name: {why}"),
            ));
        }
    }
    if profile.max_tool_iterations == Some(0) {
        problems.push((key("max_tool_iterations"), "must be at least 1".into()));
    }
    let policy = &profile.policy;
    for (list, patterns) in [
        ("deny", &policy.deny),
        ("ask", &policy.ask),
        ("allow", &policy.allow),
    ] {
        for pattern in patterns.iter().flatten() {
            if let Err(e) = crate::policy::validate_pattern(pattern) {
                problems.push((key(&format!("policy.{list}")), format!("{pattern:?}: {e}")));
            }
        }
    }
    problems
}
