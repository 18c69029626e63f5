//! switchboard-discord: the Discord channel. serenity's gateway client in, Discord REST out;
//! the core only ever sees the `Channel` trait.
//!
//! Layout, in the order a message flows:
//! - [`config`]: `[channels.<name>]` keys (`token`, allowlists, mention rules, …).
//! - `gateway`: serenity's client and its event handler (translate and deliver, nothing
//!   else), plus the watcher that turns the shard's stage into `Health`.
//! - `inbound`: MESSAGE_CREATE / component INTERACTION_CREATE → `ChannelEvent` (or ignored /
//!   refused); one conversation per DM, guild channel or thread.
//! - `buffer`: the ordered, bounded buffer between the handlers and the sink; a failing
//!   store is retried while later events wait, so no event is lost or reordered.
//! - `presses`: button presses from receipt to answer, keeping Discord's 3-second deadline.
//! - `outbound`: rendered text, `allowed_mentions` that ping no one, buttons as action rows.
//! - `files`: attachments in (references, CDN downloads) and multipart uploads out.
//! - `api` + `errors`: the REST client and the mapping of Discord errors to `ChannelError`.
//! - `state`: what the channel, the gateway's handler and the press guards share (the bot's
//!   id, health, thread parents); below both `gateway` and `channel`, so neither needs the
//!   other's internals.
//! - [`channel`]: `DiscordChannel`, the `Channel` implementation tying them together.

mod api;
mod arrival;
mod buffer;
pub mod channel;
pub mod config;
mod errors;
mod files;
mod gateway;
mod inbound;
mod outbound;
mod presses;
mod state;

pub use channel::DiscordChannel;
pub use config::{DEFAULT_API_URL, DiscordConfig};
pub use outbound::{MAX_CUSTOM_ID_CHARS, MAX_MESSAGE_CHARS};
pub use presses::{DEFER_AFTER, PRIVATE_NOTICE_PREFIX, is_private_notice};
