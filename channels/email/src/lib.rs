//! switchboard-email: the email channel. Mail comes in over IMAP (IDLE, or polling where the
//! server lacks it), its sender authenticated (DKIM aligned with the From domain, or a
//! trusted server's `Authentication-Results`), stored through the core's `EventSink` before
//! the cursor moves past it and it is marked read; answers go out over SMTP submission as one
//! threaded mail per turn, Markdown and safe HTML.
//!
//! Layout, in the order a mail flows:
//! - [`config`]: `[channels.<name>]` settings and their checks.
//! - `tls`: the rustls set-up both servers share (web roots plus `tls_ca_file`).
//! - `state`: the cursor, threads, sent ids and prompts kept across restarts.
//! - `message`: one raw mail parsed (`mail-parser`), bodies trimmed for the model.
//! - `auth`: who is writing (`mail-auth`: DKIM via the configured DNS resolver).
//! - `inbound`: one mail → skip (loop risk, unauthenticated, over the limit) or an event
//!   (a message in its thread, or an approval decided by reply).
//! - `health`: what `/readyz` shows.
//! - `outbound`: composing and sending answers (`lettre`).
//! - `shared`: what the receive loop and the send path share (`Inner`).
//! - `imap`: connecting and one look at the mailbox; `receive`: the loop around it.
//! - [`channel`]: the `Channel` implementation.
//!
//! Imports run one way, from the bottom up: `config`, `tls` → `state` → `message` → `auth`
//! → `inbound` → `health`, `outbound` → `shared` → `imap` → `receive` → `channel`.

pub mod channel;
pub mod config;

mod auth;
mod health;
mod imap;
mod inbound;
mod message;
mod outbound;
mod receive;
mod shared;
mod state;
mod tls;

pub use channel::{EmailChannel, MAX_MESSAGE_CHARS, probe};
pub use config::{EmailConfig, SenderAuth, ServerConfig, TlsMode};
