//! The Discord channel end to end against the FakeDiscord stand-in: the real serenity gateway
//! client on the fake's WebSocket, REST calls to the fake's routes.

mod buttons;
mod gateway;
mod helpers;
mod inbound;
mod outage;
mod outbound;
