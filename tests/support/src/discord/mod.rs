//! Discord stand-in: `FakeDiscord`, an in-process Discord with the REST routes the Discord
//! channel and serenity call and a WebSocket gateway on the same port (HELLO, IDENTIFY →
//! READY, heartbeats, RESUME, injected MESSAGE_CREATE / INTERACTION_CREATE dispatches).
//! Used by the Discord channel's tests, the end-to-end tests and the load harness.

mod fake;
mod files;
mod gateway;
pub mod payloads;
mod rest;
mod world;

use std::time::Duration;

pub use fake::FakeDiscord;
pub use files::SentFile;
pub use payloads::{ButtonClick, FakeUser, IncomingMessage};
pub use world::{DiscordCall, Failure, FakeMessage, GatewayOp, InteractionCallback};

/// The bot token `FakeDiscord::start` accepts; obviously not a real token.
pub const FAKE_TOKEN: &str = "test-token-not-real";
/// The bot's user id (`GET /users/@me`, READY).
pub const FAKE_BOT_ID: &str = "1100000000000000001";
/// The bot's application id (READY, interactions, webhook routes).
pub const FAKE_APPLICATION_ID: &str = "1100000000000000002";
/// Longest `content` the fake accepts before answering 50035, as Discord does.
pub const MAX_CONTENT_CHARS: usize = 2000;
/// An interaction not answered within this long is unknown to the callback route (10062).
pub const INTERACTION_DEADLINE: Duration = Duration::from_secs(3);
