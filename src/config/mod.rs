//! The configuration tree: one TOML file (plus `SWITCHBOARD__SECTION__KEY` overrides) parsed
//! into these types at start-up. Every key has a default except the provider's model.
//!
//! Layout: this file holds the core's own sections; `args` the `--config` options every
//! subcommand takes (which file is read, and the fallback); `channels` the `[channels.<name>]` enum
//! over the channel crates' settings types; `memory` the `[memory]` section; `load` reading,
//! overrides and the checks serde cannot express; `locate` finding a key's line for a problem
//! found after parsing; `providers` the `[providers.<name>]` tables; `agents` the
//! `[agents.<name>]` profiles and the `agent` keys routing channels and chats to them;
//! `delegation` the `[delegation]` caps on sub-tasks; `secrets` every secret value the config holds; `skills` the `[skills]` section;
//! `deprecated` the renamed and removed keys, still read with a warning for one minor
//! version, and their rewrite for `switchboard config migrate`. `${VAR}` expansion and the
//! redacting [`Secret`] live in `switchboard_channel::settings`, so core keys and channel
//! keys resolve the same way.

pub mod admin;
pub mod agents;
mod args;
pub mod budgets;
mod channels;
pub mod checkpoints;
mod cluster;
pub mod delegation;
pub mod deprecated;
mod load;
mod locate;
pub mod mcp;
mod memory;
pub mod providers;
mod schedules;
mod secrets;
pub mod skills;
mod transcription;
pub mod voice;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

pub use crate::provider::{ProviderConfig, ProviderKind};
pub(crate) use args::log_fallback;
pub use args::{ConfigArgs, DEFAULT_CONFIG, EXAMPLE_CONFIG};
pub use channels::{ChannelConfig, KINDS, ROUTES};
pub use cluster::ClusterConfig;
pub use load::{ConfigError, Problem, load, parse};
pub use memory::{EmbeddingsConfig, MemoryConfig, MemoryScopeMode};
pub use schedules::{OperatorJob, SchedulerConfig};
pub use switchboard_channel::settings::{EnvString, Secret, expand};
pub use transcription::TranscriptionConfig;
pub use voice::{VoiceConfig, VoiceRule};

/// The whole configuration file.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Process-wide settings: HTTP listener, database, data directory.
    #[serde(default)]
    pub gateway: GatewayConfig,
    /// The LLM endpoint.
    #[serde(default)]
    pub provider: ProviderConfig,
    /// The agent loop.
    #[serde(default)]
    pub agent: AgentConfig,
    /// How answers stream into the live draft.
    #[serde(default)]
    pub streaming: StreamingConfig,
    /// Built-in tools the agent may call.
    #[serde(default)]
    pub tools: ToolsConfig,
    /// Which tool calls run, ask first, or are refused.
    #[serde(default)]
    pub policy: crate::policy::PolicyConfig,
    /// Long-term memory and history compaction.
    #[serde(default)]
    pub memory: MemoryConfig,
    /// How tool processes are confined (`[sandbox]`).
    #[serde(default)]
    pub sandbox: crate::sandbox::SandboxConfig,
    /// Daily limits on LLM tokens and tool runs (`[budgets]`).
    #[serde(default)]
    pub budgets: budgets::BudgetsConfig,
    /// Voice notes to text (`[transcription]`); absent, they are saved and described only.
    #[serde(default)]
    pub transcription: Option<TranscriptionConfig>,
    /// Answers spoken as voice notes (`[voice]`); absent, nothing is spoken.
    #[serde(default)]
    pub voice: Option<VoiceConfig>,
    /// Workspace checkpoints for `/rewind` (`[checkpoints]`).
    #[serde(default)]
    pub checkpoints: checkpoints::CheckpointsConfig,
    /// Chat platform instances by name; the name is the `channel` of their conversations.
    #[serde(default)]
    pub channels: BTreeMap<String, ChannelConfig>,
    /// How scheduled tasks behave (`[scheduler]`).
    #[serde(default)]
    pub scheduler: SchedulerConfig,
    /// The operator's own recurring jobs (`[[schedules]]`).
    #[serde(default)]
    pub schedules: Vec<OperatorJob>,
    /// Timings of several replicas on one PostgreSQL (`[cluster]`).
    #[serde(default)]
    pub cluster: ClusterConfig,
    /// Model Context Protocol servers whose tools the agent may call (`[mcp]`).
    #[serde(default)]
    pub mcp: mcp::McpConfig,
    /// Further LLM endpoints by name (`[providers.<name>]`), for profiles and fallbacks.
    #[serde(default)]
    pub providers: providers::ProvidersConfig,
    /// Agent Skills: where they are installed and pinned (`[skills]`).
    #[serde(default)]
    pub skills: skills::SkillsConfig,
    /// The operator's dashboard (`[admin]`).
    #[serde(default)]
    pub admin: admin::AdminConfig,
    /// Sub-tasks the `delegate` tool hands to child agents (`[delegation]`).
    #[serde(default)]
    pub delegation: delegation::DelegationConfig,
    /// Agent profiles by name (`[agents.<name>]`).
    #[serde(default)]
    pub agents: BTreeMap<String, agents::AgentProfileConfig>,
    /// Which profile each channel and chat uses (their `agent` keys, read by `load`).
    #[serde(skip)]
    pub routing: agents::Routing,
    /// Each deprecated key this config used, for `check` to list and `run` to warn about.
    #[serde(skip)]
    pub deprecated: Vec<deprecated::Use>,
}

/// `[gateway]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GatewayConfig {
    /// Address of the shared HTTP server (health, webhooks, web chat).
    pub listen: EnvString,
    /// `sqlite://path` (embedded default) or `postgres://…` (scale-out).
    pub database_url: EnvString,
    /// Where SQLite files and conversation workspaces live.
    pub data_dir: PathBuf,
    /// `pretty` for people, `json` for log shippers.
    pub log_format: LogFormat,
    /// Names this process in inbox and conversation leases. Unset: `default` on SQLite, and
    /// on PostgreSQL the host name plus a random suffix, so scaled copies of one config
    /// never collide. A set id reclaims its own leases at once after a restart.
    pub instance_id: Option<String>,
    /// How long SIGTERM waits for running turns before leaving them for the next start.
    pub shutdown_grace_secs: u64,
    /// Largest request body the HTTP server accepts (larger gets 413).
    pub max_body_bytes: usize,
    /// A conversation with no traffic for this long frees its memory (history stays stored).
    pub conversation_idle_secs: u64,
    /// How long a claimed inbox row belongs to this process before another may take it.
    pub inbox_lease_secs: u64,
    /// Bearer token `/metrics` requires from every scraper; unset serves loopback only.
    pub metrics_token: Secret,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            listen: EnvString("127.0.0.1:8080".into()),
            database_url: EnvString("sqlite://data/switchboard.db".into()),
            data_dir: PathBuf::from("data"),
            log_format: LogFormat::Pretty,
            instance_id: None,
            shutdown_grace_secs: 10,
            max_body_bytes: 1024 * 1024,
            conversation_idle_secs: 300,
            inbox_lease_secs: 600,
            metrics_token: Secret::default(),
        }
    }
}

/// Log output format.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Pretty,
    /// One JSON object per line.
    Json,
}

/// `[agent]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    /// The system prompt every conversation starts with.
    pub system_prompt: String,
    /// LLM round-trips per turn before the loop stops and says so.
    pub max_tool_iterations: usize,
    /// Most recent stored messages loaded as context for a turn.
    pub history_limit: usize,
}

/// The default system prompt: short, so a plain message costs few tokens.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are Switchboard, a helpful assistant reached \
through a chat app. Answer concisely in Markdown. Use tools when they help and say what you \
did. Never reveal credentials.";

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            system_prompt: DEFAULT_SYSTEM_PROMPT.into(),
            max_tool_iterations: 10,
            history_limit: 100,
        }
    }
}

/// `[streaming]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StreamingConfig {
    /// A draft edit waits for at least this many new characters.
    pub chunk_min_chars: usize,
    /// At least this long between two edits of a draft (its text, progress and plan lines
    /// alike).
    pub edit_min_interval_ms: u64,
    /// An answer's first send waits up to this long after its first text (or until
    /// `chunk_min_chars`), so a short answer arrives whole in one message.
    pub first_send_hold_ms: u64,
}

impl Default for StreamingConfig {
    fn default() -> Self {
        Self {
            chunk_min_chars: 80,
            edit_min_interval_ms: 500,
            first_send_hold_ms: 400,
        }
    }
}

/// Every built-in tool name.
pub const TOOL_NAMES: &[&str] = &[
    "shell",
    "file_read",
    "file_write",
    "file_edit",
    "file_list",
    "http_fetch",
    "browser",
    "todo",
    "send_file",
    "delegate",
];

/// `[tools]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ToolsConfig {
    /// Tools offered to the model (see [`TOOL_NAMES`]).
    pub enabled: Vec<String>,
    /// `[tools.shell]`.
    pub shell: ShellConfig,
    /// `[tools.http_fetch]`.
    pub http_fetch: HttpFetchConfig,
    /// `[tools.browser]`.
    pub browser: BrowserConfig,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        Self {
            enabled: ["file_read", "file_list", "file_write", "file_edit"]
                .map(String::from)
                .to_vec(),
            shell: ShellConfig::default(),
            http_fetch: HttpFetchConfig::default(),
            browser: BrowserConfig::default(),
        }
    }
}

/// `[tools.shell]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ShellConfig {
    /// Default and maximum run time of one command.
    pub timeout_secs: u64,
    /// Output kept per command (stdout + stderr); the rest is cut with a marker.
    pub max_output_bytes: usize,
}

impl Default for ShellConfig {
    fn default() -> Self {
        Self {
            timeout_secs: 60,
            max_output_bytes: 1024 * 1024,
        }
    }
}

/// `[tools.http_fetch]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpFetchConfig {
    /// Hosts and ports that may be fetched (`example.com` on 443 and 80, `*.example.com`
    /// for subdomains, `example.com:8443`, `{ host = "…", private = true }` to let that name
    /// reach private addresses); empty refuses every URL.
    pub allowed_hosts: Vec<crate::hosts::AllowedHost>,
    /// Response text kept, in bytes.
    pub max_bytes: usize,
    /// Whole-request timeout.
    pub timeout_secs: u64,
}

impl Default for HttpFetchConfig {
    fn default() -> Self {
        Self {
            allowed_hosts: Vec::new(),
            max_bytes: 256 * 1024,
            timeout_secs: 20,
        }
    }
}

/// `[tools.browser]`: headless Chromium in the tool sandbox, reaching the network only
/// through the gateway's checking proxy.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BrowserConfig {
    /// What pages (and everything they load) may reach; the same syntax and checks as
    /// `[tools.http_fetch] allowed_hosts`; empty refuses every request.
    pub allowed_hosts: Vec<crate::hosts::AllowedHost>,
    /// The Chromium binary (default: Debian's headless shell,
    /// `/usr/lib/chromium/chromium-headless-shell`).
    pub chromium: Option<std::path::PathBuf>,
    /// A conversation's browser is closed after this long without an action.
    pub idle_secs: u64,
    /// Longest one action (an open, a click and the load it starts) may take.
    pub timeout_secs: u64,
    /// Page text kept per read, in bytes; the rest is cut with a marker.
    pub max_text_bytes: usize,
    /// Memory of the browser's whole process tree, in MiB (its cgroup's `memory.max`, and
    /// each process's data limit).
    pub memory_mb: u64,
    /// CPU seconds each browser process may use over its life (`RLIMIT_CPU`).
    pub cpu_secs: u64,
}

impl Default for BrowserConfig {
    fn default() -> Self {
        Self {
            allowed_hosts: Vec::new(),
            chromium: None,
            idle_secs: 300,
            timeout_secs: 30,
            max_text_bytes: 64 * 1024,
            memory_mb: 1024,
            cpu_secs: 900,
        }
    }
}
