//! switchboard-web: the built-in web chat. The gateway serves one embedded page; each open
//! tab holds a WebSocket to its browser session's conversation; the core only ever sees the
//! `Channel` trait.
//!
//! Layout, in the order a message flows:
//! - [`config`]: `[channels.<name>] kind = "web"` keys and the start-up checks (no chat
//!   without an access token, configured or generated, unless it is a public one);
//!   `settings`: the `ChannelSettings` the core calls on them, building the channel.
//! - `routes`: the page, its script and style (embedded with `include_str!`), and the socket
//!   upgrade; `auth` holds the token, origin and session cookie checks they use, against
//!   what `gate` expects of this request.
//! - `upload` and `files`: `POST <path>/upload` (outside the gateway's body limit, with
//!   its own `max_attachment_bytes`) and `GET <path>/files/<id>`; files kept under
//!   `<history_dir>/files` for the core's `download` and the agent's `send_file`.
//! - `socket`: one tab's connection: frames in (size, rate and button checks, then the
//!   sink), the session's changes out.
//! - `protocol`: the JSON frames both ways and the close codes.
//! - `hub` and `session`: every live session's transcript and open sockets; `persist` saves
//!   transcripts as JSON files so history survives a restart; `html` renders what is shown.
//! - [`channel`]: `WebChannel`, the `Channel` implementation tying them together.
//! - [`token`]: where the generated access token lives (a file under `data_dir`), used when
//!   none is configured, loopback included; `gate` re-reads it per request, so a rotated one
//!   applies at once.
//! - `ids`: the session and file ids (32 lowercase hex digits) and their one check.
//!
//! Layers, each module importing only those before it: `ids`, `token` → `config` → `gate` →
//! `auth` → `protocol` → `files` → `html` → `session` → `persist` → `hub` → `socket` →
//! `routes` → `upload` → `channel` → `settings`. A test (`tests/layers.rs` in the root
//! package) fails on any loop among them.
//!
//! History: each session keeps its last `history_messages` messages in memory and, when a
//! `history_dir` is set (the gateway uses `<data_dir>/web/<name>`), in one JSON file per
//! session, written 250 ms after a change and at shutdown. A page loaded after a restart
//! shows what that file holds. Every text is run through the `redactor` the gateway builds
//! the channel with (its credential scrubber) before it is written.

mod auth;
pub mod channel;
pub mod config;
mod files;
mod gate;
mod html;
mod hub;
mod ids;
mod persist;
mod protocol;
mod routes;
mod session;
mod settings;
mod socket;
pub mod token;
mod upload;

pub use channel::{MAX_MESSAGE_CHARS, WebChannel};
pub use config::{
    DEFAULT_HISTORY_MESSAGES, DEFAULT_MAX_MESSAGE_CHARS, DEFAULT_MAX_MESSAGES_PER_MINUTE,
    WebConfig, WebConfigError,
};
