//! `[providers.<name>]`: further LLM endpoints, each with exactly the keys of `[provider]`,
//! which agent profiles name as their provider or in their fallback chain. `[provider]`
//! itself is the provider called `default`.

use std::collections::BTreeMap;

use super::{Config, ProviderConfig, ProviderKind};

/// The name `[provider]` goes by in profiles (`provider = "default"`, `fallback = […]`).
pub const DEFAULT_PROVIDER: &str = "default";

/// `[providers.<name>]` tables by name.
pub type ProvidersConfig = BTreeMap<String, ProviderConfig>;

impl Config {
    /// The provider called `name`: a `[providers.<name>]` table, or `[provider]` for
    /// `default` (unless a table of that name replaces it).
    pub fn provider_named(&self, name: &str) -> Option<&ProviderConfig> {
        match self.providers.get(name) {
            Some(provider) => Some(provider),
            None if name == DEFAULT_PROVIDER => Some(&self.provider),
            None => None,
        }
    }

    /// Every provider name a profile may use.
    pub fn provider_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.providers.keys().map(String::as_str).collect();
        if !self.providers.contains_key(DEFAULT_PROVIDER) {
            names.insert(0, DEFAULT_PROVIDER);
        }
        names
    }
}

/// `(key, message)` for every problem of a `[providers.<name>]` table: the same checks
/// `[provider]` gets.
pub(super) fn problems(config: &Config) -> Vec<(String, String)> {
    let mut problems = Vec::new();
    for (name, provider) in &config.providers {
        let base = provider.base_url();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            problems.push((
                format!("providers.{name}.base_url"),
                format!("{base:?} is not an http(s) URL"),
            ));
        }
        if provider.model.is_empty() {
            problems.push((
                format!("providers.{name}.model"),
                "must name a model".into(),
            ));
        }
        if provider.max_in_flight == 0 {
            problems.push((
                format!("providers.{name}.max_in_flight"),
                "must be at least 1".into(),
            ));
        }
        if provider.kind == ProviderKind::Anthropic && provider.max_tokens == 0 {
            problems.push((
                format!("providers.{name}.max_tokens"),
                "Anthropic requires max_tokens > 0".into(),
            ));
        }
    }
    if config.provider.max_in_flight == 0 {
        problems.push(("provider.max_in_flight".into(), "must be at least 1".into()));
    }
    problems
}
