//! Slack stand-in: a fake Web API (`FakeSlack`) the Slack channel sends to, and a signer that
//! builds the signed Events API / interactivity requests Slack would send to the gateway.
//! Used by the Slack channel's tests, the end-to-end tests and the load harness.

mod files;
mod server;
mod signer;

pub use files::UploadedFile;
pub use server::{Failure, FakeMessage, FakeSlack, SlackCall};
pub use signer::{
    ButtonClick, SignedRequest, SlackMessage, block_actions, channel_message_event, dm_event,
    mention_deliveries, mention_event, sign, unix_now, url_verification,
};

/// The bot token `FakeSlack::start` accepts; obviously not a real token.
pub const FAKE_BOT_TOKEN: &str = "xoxb-test-fake";
/// A signing secret for tests; obviously not a real secret.
pub const FAKE_SIGNING_SECRET: &str = "test-signing-secret";
/// The bot's user id `auth.test` answers with.
pub const FAKE_BOT_USER_ID: &str = "U0FAKEBOT";
/// The bot id on messages the fake posts.
pub const FAKE_BOT_ID: &str = "B0FAKEBOT";
/// Longest `text` the fake accepts before answering `msg_too_long`, as Slack does.
pub const MAX_TEXT_CHARS: usize = 40_000;
/// Longest section block text the fake accepts before answering `invalid_blocks`.
pub const MAX_SECTION_CHARS: usize = 3_000;
