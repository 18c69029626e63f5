//! WhatsApp stand-in: a fake Graph API (`FakeGraph`) the WhatsApp channel sends to, with
//! WhatsApp's checks and failure modes, and the notifications Meta's webhook sender posts
//! to the gateway, signed with `X-Hub-Signature-256` (`signer`). Shapes follow Meta's
//! Cloud API reference: messages webhooks, the Messages API, media and error objects.

mod rules;
mod server;
mod signer;

pub use server::{Failure, FakeGraph, Sent};
pub use signer::{Notification, WebhookMessage, sign};

/// The access token `FakeGraph` accepts; obviously not a real token.
pub const FAKE_ACCESS_TOKEN: &str = "test-whatsapp-token";
/// An app secret for tests; obviously not a real secret.
pub const FAKE_APP_SECRET: &str = "test-app-secret";
/// The webhook verify token for tests.
pub const FAKE_VERIFY_TOKEN: &str = "test-verify-token";
/// The business number's id the tests configure.
pub const FAKE_PHONE_NUMBER_ID: &str = "106540352242922";
/// The Graph API version in the stand-in's URL.
pub const API_VERSION: &str = "v23.0";
