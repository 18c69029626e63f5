//! Agent profiles at run time: each `[agents.<name>]` (and the default one made of today's
//! sections) compiled once at start-up into a [`Profile`] — its turn settings, policy,
//! built-in tools and one provider chain per allowed model — and the routing that picks a
//! profile for a conversation. A conversation actor resolves its profile and model once, when
//! it starts ([`Profiles::activate`]), into an [`Active`] profile that its turns read and
//! `/model` changes.
//!
//! - this file: [`Profile`], [`Profiles`] and building them from the config.
//! - `active`: [`Active`], the profile and model of one live conversation, and `/model`.

mod active;
mod settings;

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::Context;
use prometheus::IntCounterVec;
use switchboard_channel::ConversationKey;

pub use active::Active;

use crate::config::agents::{AgentProfileConfig, DEFAULT_AGENT, Routing};
use crate::config::providers::DEFAULT_PROVIDER;
use crate::config::{Config, EnvString, TOOL_NAMES};
use crate::policy::Policy;
use crate::provider::{self, Fallback, InFlight, Limited, Link, Provider};
use crate::skills::{SkillSet, Skills};
pub use settings::TurnSettings;

/// One agent profile, ready to run.
pub struct Profile {
    /// `[agents.<name>]` name, or `default`.
    pub name: String,
    /// System prompt, history and iteration limits, memory, budgets.
    pub settings: TurnSettings,
    /// The gate every tool call of this profile passes.
    pub policy: Arc<Policy>,
    /// Built-in tools offered (tools added in code, memory and schedule tools come on top).
    pub tools: Vec<String>,
    /// The Agent Skills it may use (named in its system prompt, loaded by the `skill` tool).
    pub skills: Arc<SkillSet>,
    /// Models `/model` may choose; the first is the one used until someone switches.
    models: Vec<String>,
    /// The provider chain for each model.
    chains: BTreeMap<String, Arc<dyn Provider>>,
}

impl Profile {
    /// The models this profile allows, the default first.
    pub fn models(&self) -> &[String] {
        &self.models
    }

    /// Whether `model` is one of this profile's.
    pub fn allows(&self, model: &str) -> bool {
        self.chains.contains_key(model)
    }

    /// The provider chain for `model` (the default model's for one it does not allow).
    pub fn provider(&self, model: &str) -> Arc<dyn Provider> {
        let chain = self.chains.get(model).or_else(|| {
            let first = self.models.first()?;
            self.chains.get(first)
        });
        chain.map_or_else(|| unreachable_provider(), Arc::clone)
    }

    /// Whether the tool called `name` may be offered: built-in tools only when listed.
    pub fn offers(&self, name: &str) -> bool {
        !TOOL_NAMES.contains(&name) || self.tools.iter().any(|t| t == name)
    }
}

/// A provider for a profile with no chain (never built: every profile has a model).
fn unreachable_provider() -> Arc<dyn Provider> {
    Arc::new(Fallback::new(Vec::new(), None))
}

/// Every profile, and which conversation uses which.
pub struct Profiles {
    /// The profile made of `[agent]`, `[provider]`, `[tools]`, `[policy]`…
    default: Arc<Profile>,
    /// `[agents.<name>]` profiles (a table named `default` replaces the default one).
    named: BTreeMap<String, Arc<Profile>>,
    /// `agent` keys of the channel tables.
    routing: Routing,
    /// Each provider's bound on calls in flight, shared by every profile and model using it.
    bounds: BTreeMap<String, Arc<InFlight>>,
}

impl Profiles {
    /// Build every profile of `config`, each with the `skills` it may use. `custom`
    /// replaces the `default` provider (a provider given in code); `fallbacks` counts moves
    /// along a chain.
    pub fn from_config(
        config: &Config,
        skills: &Skills,
        custom: Option<Arc<dyn Provider>>,
        fallbacks: Option<IntCounterVec>,
    ) -> anyhow::Result<Self> {
        let bounds: BTreeMap<String, Arc<InFlight>> = config
            .provider_names()
            .into_iter()
            .filter_map(|name| {
                let limit = config.provider_named(name)?.max_in_flight;
                Some((name.to_owned(), InFlight::new(limit)))
            })
            .collect();
        let builder = Builder {
            config,
            skills,
            custom,
            fallbacks,
            bounds: &bounds,
        };
        let default = builder.build(DEFAULT_AGENT, &AgentProfileConfig::default())?;
        let mut named = BTreeMap::new();
        for (name, profile) in &config.agents {
            let built = builder.build(name, profile)?;
            named.insert(name.clone(), Arc::new(built));
        }
        Ok(Self {
            default: Arc::new(default),
            named,
            routing: config.routing.clone(),
            bounds,
        })
    }

    /// Each provider's calls in flight and waiting, by provider name.
    pub fn in_flight(&self) -> impl Iterator<Item = (&str, &InFlight)> {
        self.bounds
            .iter()
            .map(|(name, bound)| (name.as_str(), &**bound))
    }

    /// The profile `key`'s conversation uses: its chat's, else its channel's, else default.
    pub fn for_key(&self, key: &ConversationKey) -> Arc<Profile> {
        let name = self.routing.agent_for(&key.channel, &key.chat);
        self.named
            .get(name)
            .map_or_else(|| Arc::clone(&self.default), Arc::clone)
    }

    /// The profile called `name` (`default` is the default one), for a sub-task that names
    /// one.
    pub fn by_name(&self, name: &str) -> Option<Arc<Profile>> {
        match self.named.get(name) {
            Some(profile) => Some(Arc::clone(profile)),
            None if name == DEFAULT_AGENT => Some(Arc::clone(&self.default)),
            None => None,
        }
    }

    /// The names of every profile, for an error naming the known ones.
    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.named.keys().map(String::as_str).collect();
        if !self.named.contains_key(DEFAULT_AGENT) {
            names.insert(0, DEFAULT_AGENT);
        }
        names
    }

    /// The default profile.
    pub fn default_profile(&self) -> &Arc<Profile> {
        self.named.get(DEFAULT_AGENT).unwrap_or(&self.default)
    }

    /// Every built-in tool some profile offers (what the toolbox must be able to make).
    pub fn builtin_tools(&self) -> Vec<String> {
        builtin_tools(&self.default.tools, self.named.values().map(|p| &p.tools))
    }
}

/// Every built-in tool some profile of `config` offers: what the toolbox must be able to
/// make (built before the database opens, so the sandbox probe overlaps it).
pub fn offered_tools(config: &Config) -> Vec<String> {
    let named = config
        .agents
        .values()
        .map(|spec| spec.tools.as_ref().unwrap_or(&config.tools.enabled));
    builtin_tools(&config.tools.enabled, named)
}

/// The sorted union of `default` and `named` tool lists.
fn builtin_tools<'a>(
    default: &'a [String],
    named: impl Iterator<Item = &'a Vec<String>>,
) -> Vec<String> {
    let mut tools: Vec<String> = default.iter().chain(named.flatten()).cloned().collect();
    tools.sort();
    tools.dedup();
    tools
}

/// What building a profile needs.
struct Builder<'a> {
    config: &'a Config,
    skills: &'a Skills,
    custom: Option<Arc<dyn Provider>>,
    fallbacks: Option<IntCounterVec>,
    bounds: &'a BTreeMap<String, Arc<InFlight>>,
}

impl Builder<'_> {
    /// Compile `[agents.<name>]` over the default sections.
    fn build(&self, name: &str, spec: &AgentProfileConfig) -> anyhow::Result<Profile> {
        let config = self.config;
        let provider_name = spec.provider.as_deref().unwrap_or(DEFAULT_PROVIDER);
        let provider = config.provider_named(provider_name).with_context(|| {
            format!("agents.{name}.provider: unknown provider {provider_name:?}")
        })?;
        let mut memory = config.memory.clone();
        memory.scope = spec.memory_scope.unwrap_or(memory.scope);
        let skills = self.skills.for_profile(spec.skills.as_deref());
        let prompt = (spec.system_prompt.as_ref()).unwrap_or(&config.agent.system_prompt);
        let settings = TurnSettings {
            // Each skill's name and description only; its body comes when the model asks.
            system_prompt: format!("{prompt}{}", skills.prompt()),
            history_limit: spec.history_limit.unwrap_or(config.agent.history_limit),
            max_iterations: (spec.max_tool_iterations).unwrap_or(config.agent.max_tool_iterations),
            native_tools: provider.native_tools,
            vision: provider.vision,
            transcription: config.transcription.clone(),
            voice: match &config.voice {
                Some(voice) => spec.voice.unwrap_or(voice.rule),
                None => crate::config::VoiceRule::Off,
            },
            memory,
            budgets: spec.budgets.unwrap_or(config.budgets),
        };
        let policy = Policy::new(&spec.policy.apply(&config.policy))
            .map_err(|e| anyhow::anyhow!("agents.{name}.policy: {e}"))?;
        let models = match spec.models.is_empty() {
            true => vec![provider.model.to_string()],
            false => spec.models.clone(),
        };
        let fallback = self.fallback_links(name, &spec.fallback)?;
        let mut chains = BTreeMap::new();
        for model in &models {
            let first = Link {
                name: provider_name.to_owned(),
                provider: self.provider(provider_name, Some(model))?,
            };
            let chain = self.chain(first, &fallback);
            chains.insert(model.clone(), chain);
        }
        Ok(Profile {
            name: name.to_owned(),
            settings,
            policy: Arc::new(policy),
            tools: spec
                .tools
                .clone()
                .unwrap_or_else(|| config.tools.enabled.clone()),
            skills: Arc::new(skills),
            models,
            chains,
        })
    }

    /// The fallback providers of one profile, each on its own model.
    fn fallback_links(&self, profile: &str, names: &[String]) -> anyhow::Result<Vec<Link>> {
        let link = |name: &String| -> anyhow::Result<Link> {
            let provider = self
                .provider(name, None)
                .with_context(|| format!("agents.{profile}.fallback"))?;
            Ok(Link {
                name: name.clone(),
                provider,
            })
        };
        names.iter().map(link).collect()
    }

    /// `first` alone, or a [`Fallback`] over it and the fallback links.
    fn chain(&self, first: Link, fallback: &[Link]) -> Arc<dyn Provider> {
        if fallback.is_empty() {
            return first.provider;
        }
        let rest = fallback.iter().map(|l| Link {
            name: l.name.clone(),
            provider: Arc::clone(&l.provider),
        });
        let links = std::iter::once(first).chain(rest).collect();
        Arc::new(Fallback::new(links, self.fallbacks.clone()))
    }

    /// The provider called `name`, on `model` (its own model when `None`).
    /// It passes the name's bound on calls in flight.
    fn provider(&self, name: &str, model: Option<&str>) -> anyhow::Result<Arc<dyn Provider>> {
        let bare = self.unbounded(name, model)?;
        Ok(match self.bounds.get(name) {
            Some(bound) => Arc::new(Limited::new(bare, Arc::clone(bound))),
            None => bare,
        })
    }

    fn unbounded(&self, name: &str, model: Option<&str>) -> anyhow::Result<Arc<dyn Provider>> {
        if name == DEFAULT_PROVIDER
            && let Some(custom) = &self.custom
        {
            return Ok(Arc::clone(custom));
        }
        let mut config = (self.config.provider_named(name))
            .with_context(|| format!("unknown provider {name:?}"))?
            .clone();
        if let Some(model) = model {
            config.model = EnvString(model.to_owned());
        }
        provider::from_config(&config)
    }
}
