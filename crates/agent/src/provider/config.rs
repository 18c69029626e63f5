//! `[provider]` and each `[providers.<name>]`: which endpoint an LLM client talks to, with
//! which model and key. The gateway's config assembles these; the agent crate owns them so a
//! program using the agent loop alone configures its provider the same way.

use serde::Deserialize;
use switchboard_env::{EnvString, Secret};

/// Which wire protocol the LLM endpoint speaks.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI-compatible `/chat/completions` (OpenAI, OpenRouter, Ollama, vLLM, llama.cpp…).
    #[default]
    Openai,
    /// Anthropic Messages API.
    Anthropic,
}

/// Calls in flight to one provider when its table does not say: well above what a
/// self-hosted bot's endpoint is asked at once, and what bounds a burst's memory.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 64;

/// `[provider]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProviderConfig {
    /// Wire protocol.
    pub kind: ProviderKind,
    /// API base; defaults to the vendor's public endpoint for `kind`.
    pub base_url: Option<EnvString>,
    /// Model name sent with every request.
    pub model: EnvString,
    /// API key (`${OPENAI_API_KEY}`); optional for local servers.
    pub api_key: Secret,
    /// Cap on tokens per response.
    pub max_tokens: u32,
    /// Sampling temperature; the server's default when absent.
    pub temperature: Option<f32>,
    /// Seconds to wait for response headers, and between two streamed events.
    pub timeout_secs: u64,
    /// Retries on 429/5xx/connection errors, only before the first streamed token.
    pub max_retries: u32,
    /// Use the API's native tool calling (false: tools are described in the prompt).
    pub native_tools: bool,
    /// The model reads images: pictures people send go with their message as image parts.
    pub vision: bool,
    /// Calls to this provider in flight at once, across every profile and model using it;
    /// more wait their turn, in order (a burst then holds this many connections, not one
    /// per conversation).
    pub max_in_flight: usize,
}

impl Default for ProviderConfig {
    fn default() -> Self {
        Self {
            kind: ProviderKind::Openai,
            base_url: None,
            model: EnvString("gpt-4o-mini".into()),
            api_key: Secret::default(),
            max_tokens: 1024,
            temperature: None,
            timeout_secs: 60,
            max_retries: 3,
            native_tools: true,
            vision: false,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
        }
    }
}

impl ProviderConfig {
    /// The base URL in effect for this provider.
    pub fn base_url(&self) -> &str {
        match (&self.base_url, self.kind) {
            (Some(url), _) => url.trim_end_matches('/'),
            (None, ProviderKind::Openai) => "https://api.openai.com/v1",
            (None, ProviderKind::Anthropic) => "https://api.anthropic.com",
        }
    }
}
