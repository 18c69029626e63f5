//! The WhatsApp channel end to end against the FakeGraph stand-in: signed webhooks in
//! through the channel's own axum route, Graph API calls out to the fake.

mod helpers;
mod inbound;
mod outbound;
