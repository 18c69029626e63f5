//! switchboard-matrix: the Matrix channel. Events come in by `/sync` (matrix-sdk, with its
//! SQLite stores and end-to-end encryption), are stored through the core's `EventSink` before
//! the sync token moves past them, and answers go out as `m.text` with HTML, streamed by
//! `m.replace` edits.
//!
//! Layout, in the order an event flows:
//! - [`config`]: `[channels.<name>]` settings and their validation.
//! - `sync`: the receive loop, invitations, the saved token.
//! - `inbound`: one timeline event → one `ChannelEvent` (mentions, threads, replies,
//!   reactions as button presses, files).
//! - `choices`: buttons as emoji choices, pressed by reaction or reply.
//! - `outbound`: send / edit / redact / typing / files.
//! - `errors`: homeserver failures → `ChannelError`; `client`: the login and shared state;
//!   [`channel`]: the `Channel` implementation; [`store`]: what the stores hold, read offline
//!   (the upgrade suite's check that they survive an SDK upgrade).

pub mod channel;
pub mod config;
pub mod store;

mod choices;
mod client;
mod errors;
mod inbound;
mod outbound;
mod sync;

pub use channel::{MAX_MESSAGE_CHARS, MatrixChannel};
pub use config::MatrixConfig;
