//! Telegram stand-in: a fake Bot API (`FakeTelegram`) the Telegram channel's teloxide client
//! talks to, plus builders for what users do there (messages, topics, replies, button clicks).
//! Used by the Telegram channel's tests, the end-to-end tests and the load harness.

mod files;
mod html;
mod methods;
mod params;
mod reply;
mod server;
mod updates;

pub use files::{DownloadMode, SentFile};
pub use html::parse as parse_html;
pub use server::{Failure, FakeDraft, FakeMessage, FakeTelegram, Injected, TelegramCall};
pub use updates::{ChatSpec, Click, FakeUser, UserMessage, unix_now};

/// The bot token the fake accepts by default; obviously not a real token.
pub const FAKE_BOT_TOKEN: &str = "123456:TEST-not-a-real-token";
/// The bot's user id (`getMe`), the part of the token before the colon.
pub const FAKE_BOT_ID: u64 = 123_456;
/// The bot's username (`getMe`).
pub const FAKE_BOT_USERNAME: &str = "switchboard_test_bot";
/// Longest visible text Telegram accepts, in UTF-16 code units after entity parsing.
pub const MAX_TEXT_UTF16: usize = 4096;
