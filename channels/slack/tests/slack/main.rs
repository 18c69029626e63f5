//! The Slack channel end to end against the FakeSlack stand-in: signed webhooks in through
//! the channel's own axum routes, Web API calls out to the fake.

mod helpers;
mod inbound;
mod interactions;
mod outbound;
