//! switchboard-signal: the Signal channel, through a signal-cli daemon (`signal-cli -a <number>
//! daemon --http 127.0.0.1:7583 --receive-mode on-connection`). signal-cli owns the Signal
//! protocol, keys and registration; this crate reads its event stream (SSE, `GET
//! /api/v1/events`), stores each event through the core's `EventSink` before it moves past
//! it, and answers through its JSON-RPC endpoint (`POST /api/v1/rpc`).
//!
//! Layout, in the order an event flows:
//! - [`config`]: `[channels.<name>] kind = "signal"` settings and their validation.
//! - `daemon`: signal-cli itself, when `command` is set: started through the core's sandbox
//!   launcher beside the receive loop, restarted with a backoff, its last output kept.
//! - `events`: the leader-only receive loop over the SSE stream (reconnects, `Last-Event-ID`,
//!   kept in a file so a restarted gateway resumes where the last one stored).
//! - `inbound`: one envelope → one `ChannelEvent` (DMs, groups, mentions, quotes, files,
//!   reactions and replies as button presses); edits, deletes, typing, receipts and sync
//!   messages are not turns.
//! - `prompts`: the choices each prompt offered, kept in a file so a press after a restart
//!   is understood.
//! - `style`: markdown → Signal text with style ranges in UTF-16 code units.
//! - `rpc`: the JSON-RPC client and signal-cli's failures → `ChannelError`.
//! - `shared`: what the loop, the reader and the sends share; sending one message.
//! - [`channel`]: the `Channel` implementation (send, edit by `editTimestamp`, delete, typing,
//!   files).

pub mod channel;
pub mod config;

mod daemon;
mod events;
mod inbound;
mod prompts;
mod rpc;
mod shared;
mod style;

pub use channel::{MAX_EDITS, MAX_MESSAGE_UTF16, SignalChannel};
pub use config::SignalConfig;
