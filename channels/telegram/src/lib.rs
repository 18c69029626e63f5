//! switchboard-telegram: the Telegram channel. Updates come in by long polling or webhook,
//! are stored through the core's `EventSink` before Telegram is told they arrived, and
//! answers go out as Telegram HTML through the Bot API (teloxide).
//!
//! Layout, in the order an update flows:
//! - [`config`]: `[channels.<name>]` settings, their validation and the webhook's path.
//! - `poll` / `webhook`: the two receive paths; both confirm an update only once it is stored.
//! - `inbound`: one `Update` → one `ChannelEvent` (mentions, replies, topics, commands);
//!   `access` checks `allowed_users` entries (the core decides who gets in).
//! - `outbound`: send / edit / delete / typing / button answers; `draft`: `sendMessageDraft`.
//! - `files`: attachments in (references, `getFile` downloads) and files out.
//! - `errors`: Bot API failures → `ChannelError`; `health`: what `/readyz` reports.
//! - `client`: the state those parts share; [`channel`]: the `Channel` implementation.
//!
//! Imports run one way, from the bottom up: `access`, `errors` → `config` → `health` →
//! `client` → `files` → `inbound` → `outbound`, `draft` → `poll`, `webhook` → `channel`.

pub mod channel;
pub mod config;

mod access;
mod client;
mod draft;
mod errors;
mod files;
mod health;
mod inbound;
mod outbound;
mod poll;
mod webhook;

pub use channel::{MAX_MESSAGE_UTF16, TelegramChannel};
pub use config::{DEFAULT_API_URL, DraftTransport, Mode, TelegramConfig};
pub use outbound::MAX_CALLBACK_DATA;
pub use webhook::SECRET_HEADER;
