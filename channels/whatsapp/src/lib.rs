//! switchboard-whatsapp: the WhatsApp channel, on Meta's official WhatsApp Business Cloud API
//! (a business number the operator owns), never the unofficial WhatsApp Web protocol.
//! Signed webhooks in, Graph API calls out; the core only ever sees the `Channel` trait.
//!
//! Layout, in the order a message flows:
//! - [`config`]: `[channels.<name>]` keys (`phone_number_id`, `access_token`, `app_secret`,
//!   `verify_token`, allowlists, `reminder_template`, …) and the webhook path.
//! - `verify`: the `X-Hub-Signature-256` check every POST passes first.
//! - `payload`: Meta's webhook JSON as types.
//! - `inbound`: one webhook message → `ChannelEvent` (text, media, locations, contacts,
//!   reactions, button and list replies); statuses and errors are not messages.
//! - `hub`: one webhook path shared by every channel configured on it, dispatching by the
//!   business number (`metadata.phone_number_id`).
//! - `webhook`: the axum routes: the `GET` verification handshake and the signed `POST`,
//!   stored through the sink before the 200.
//! - `state`: what the channel and the webhook share (each person's last inbound message,
//!   for the 24-hour window and the typing indicator; health; undeliverable answers).
//! - `api`: the Graph API client and the mapping of WhatsApp's error codes to `ChannelError`.
//! - `outbound`: text, buttons and lists, templates outside the 24-hour window.
//! - `files`: media in (media id → URL → bytes) and uploads out.
//! - [`channel`]: `WhatsAppChannel`, the `Channel` implementation tying them together.

mod api;
pub mod channel;
pub mod config;
mod files;
mod hub;
mod inbound;
mod outbound;
mod payload;
mod state;
mod verify;
mod webhook;

pub use channel::{MAX_MESSAGE_CHARS, WhatsAppChannel};
pub use config::{DEFAULT_API_URL, ReminderTemplate, WhatsAppConfig};
