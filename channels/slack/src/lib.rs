//! switchboard-slack: the Slack channel. Signed Events API and interactivity webhooks in,
//! Web API calls out; the core only ever sees the `Channel` trait.
//!
//! Layout, in the order a message flows:
//! - [`config`]: `[channels.<name>]` keys (`bot_token`, `signing_secret`, allowlists, …) and
//!   the webhook routes' paths.
//! - `verify`: the signature check every webhook passes first.
//! - `inbound`: the envelope, and button presses → `ChannelEvent` (or ignored).
//! - `message`: messages and mentions → `ChannelEvent`: the conversation model (a DM is one
//!   conversation, a thread its own; channel replies only in threads the bot is part of).
//! - `state`: what the channel and its webhook routes share (the bot's user id, health,
//!   pressed messages, known threads); below both, so neither needs the other's internals.
//! - `webhook`: the axum routes that verify, normalise, store through the sink, then ack.
//! - `blocks`: Block Kit for messages with buttons (sections ≤ 3,000 chars + actions).
//! - `files`: attached files in (references, `url_private` downloads) and uploads out.
//! - `api`: the Web API client and the mapping of Slack errors to `ChannelError`.
//! - [`channel`]: `SlackChannel`, the `Channel` implementation tying them together.

mod api;
mod blocks;
pub mod channel;
pub mod config;
mod files;
mod inbound;
mod message;
mod state;
mod verify;
mod webhook;

pub use channel::{MAX_MESSAGE_CHARS, SlackChannel};
pub use config::{DEFAULT_API_URL, SlackConfig};
