//! Switchboard: a self-hosted gateway that puts an LLM agent behind chat platforms.
//!
//! Layout, in the order an event flows through it (the modules' layers, bottom to top, are in
//! ARCHITECTURE.md, "Layers"; `tests/layers.rs` keeps them free of loops):
//! - [`config`]: the TOML file (plus `${VAR}` and `SWITCHBOARD__…` overrides) as types.
//! - [`channels`]: builds the configured `Channel`s (crates under `channels/`).
//! - [`leader`]: leader leases, so one replica runs each Telegram poller and Discord gateway.
//! - [`access`]: who may talk to the bot (`dm_policy`, `group_policy`, pairing, grants),
//!   decided in the sink before the inbox.
//! - [`command`]: what an inbound event asks for (message, chat command, approval button),
//!   classified once where it enters the inbox.
//! - [`conversation`]: the `Inbox` sink channels deliver into, the registry of per-conversation
//!   actors, the turn each stored event becomes, and the parts turns share (agents,
//!   approvals, outbound path, lifecycle).
//! - [`attach`]: files people send, fetched after the event is stored, saved into the
//!   conversation's workspace and described to the model.
//! - [`profile`]: agent profiles (prompt, provider chain and models, tools, policy) and which
//!   conversation uses which, resolved when its actor starts.
//! - [`agent`]: the platform-free agent loop (`AgentLoop`, `Tool`, `ContextProvider`); the
//!   `switchboard-agent` crate, re-exported, as are [`policy`], [`sandbox`], [`scrub`] and
//!   [`provider`] (inside the agent crate).
//! - [`policy`]: the gate every tool call passes (deny → ask → allow, circuit breakers) and
//!   the typed `Decision` it hands to approvals, the audit and the metrics.
//! - [`provider`]: streaming LLM clients (OpenAI-compatible, Anthropic).
//! - [`schedule`]: reminders and recurring tasks, fired through the inbox exactly once.
//! - [`checkpoint`]: workspace checkpoints before changing tool calls, and `/rewind`.
//! - [`budget`]: daily token and tool-run budgets per conversation and per user.
//! - [`tools`]: built-in tools (shell, files, http_fetch), confined to a workspace.
//! - [`mcp`]: Model Context Protocol servers as tool sources, sandboxed and gated.
//! - [`skills`]: Agent Skills: checked, pinned by content hash, named in the prompt, loaded
//!   by the `skill` tool, their files read-only to tools.
//! - [`sandbox`]: the supervisor every tool process runs under (namespaces, limits, Landlock,
//!   seccomp) and the posture it measured on this host.
//! - [`scrub`]: credential redaction for tool output, chat, history and logs.
//! - [`voice`]: answers spoken as voice notes (`[voice]`): engines, Ogg/Opus encoding.
//! - [`draft`]: the live draft message an answer streams into, throttled and split.
//! - [`governor`]: one send/edit budget per chat, shared by every draft in it.
//! - [`ids`]: typed ids and stored states (the gateway's own user ids, approval id and
//!   status, memory scope, inbox kind).
//! - [`hosts`]: which hosts `http_fetch` may reach; [`when`]: schedules' instants and cron
//!   patterns in a time zone; [`skill_format`]: the `SKILL.md` format. Leaves the config
//!   checks with and their features use.
//! - [`store`]: the durable inbox and history, on SQLite or PostgreSQL.
//! - [`cluster`]: several replicas on one PostgreSQL (instance ids, conversation leases,
//!   `LISTEN/NOTIFY` wake-ups, leaving at shutdown).
//! - [`http`]: the shared axum server (health, channel webhooks).
//! - [`memory`]: recall, autosave, memory tools and history compaction.
//! - [`metrics`]: Prometheus metrics served at `/metrics`.
//! - [`telemetry`]: tracing set-up (JSON or pretty), every log line scrubbed.
//! - [`data_dir`]: the data directory and the files in it, private from the first run.
//! - [`clock`]: time as an input (wall clock in production, paused or manual in tests).
//! - [`admin`]: the operator's dashboard; [`doctor`]: `switchboard doctor`; [`probe`]:
//!   `switchboard check --probe`.
//! - [`gateway`]: wires all of it together and shuts it down in order.
//! - [`cli`]: the `switchboard` command's subcommands.
//! - [`backup`]: `switchboard backup` and `restore` (a live SQLite database and `data_dir`
//!   in one archive), and the lock that tells a restore a gateway is running.
//! - `web_token`: the web chat's generated access token at start-up, and `switchboard
//!   web-token`, which prints the chat's link with it.

pub mod access;
pub mod admin;
pub use switchboard_agent as agent;
pub mod attach;
pub mod backup;
pub mod budget;
pub mod channels;
pub mod checkpoint;
pub mod cli;
pub mod clock;
pub mod cluster;
pub mod command;
pub mod config;
pub mod conversation;
pub mod data_dir;
pub mod doctor;
pub mod draft;
pub mod gateway;
pub mod governor;
pub mod hosts;
pub mod http;
pub mod ids;
pub mod leader;
pub mod mcp;
pub mod memory;
pub mod metrics;
pub use switchboard_policy as policy;
pub mod probe;
pub mod profile;
pub use switchboard_agent::provider;
pub use switchboard_sandbox as sandbox;
pub mod schedule;
pub use switchboard_scrub as scrub;
pub mod skill_format;
pub mod skills;
pub mod store;
pub mod telemetry;
pub mod tools;
pub mod vision;
pub mod voice;
#[cfg(feature = "web")]
pub mod web_token;
pub mod when;

pub use gateway::{Gateway, RunningGateway};
