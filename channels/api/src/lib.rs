//! switchboard-channel: the boundary between Switchboard's core and chat platforms.
//!
//! Layout:
//! - [`attach`]: file references on inbound messages (`Attachment`), files to post
//!   (`OutboundFile`), their error (`FileError`) and the size-capped download.
//! - [`access`]: `dm_policy`/`group_policy` settings and where an event was written
//!   (`Place`), for the core's access decision.
//! - [`types`]: normalized events and messages (`ConversationKey`, `ChannelEvent`, `Outbound`).
//! - [`channel`]: the `Channel` trait adapters implement, its `Limits` and error enum, and the
//!   `EventSink` through which adapters hand events to the core's durable inbox.
//! - [`render`]: the one markdown → platform renderer (Telegram HTML, Slack mrkdwn, Discord
//!   markdown, web HTML) every channel's outgoing text goes through.
//! - [`choices`]: buttons as emoji choices pressed by reaction or reply, for platforms
//!   without buttons (Matrix, Signal).
//! - [`split`]: the limit-aware splitter every channel's long answers go through.
//! - [`settings`]: what every channel's settings type offers the core (`ChannelSettings`:
//!   validate, secrets, routes, build), and the `${VAR}`-expanding `EnvString`/`Secret`
//!   types the core's own config uses too; [`settings_error`]: `SettingsError`, one problem
//!   naming its key, which [`access`] reports too (so `access` sits below `settings`).
//! - [`recent`]: a capped map for a channel's memory of recent events.
//! - [`token_file`]: the generated access token kept in a file (the web chat's and the
//!   dashboard's): made, rotated and read one way.
//! - [`auth`]: what every HTTP gate in front of a secret shares: the cookie reader and the
//!   constant-time comparison.
//! - [`html`]: the one HTML escaper.
//! - [`backoff`]: the doubling wait of every reconnect and retry loop, and
//!   [`authenticate`]: a channel's start-up credential check retried with it.
//! - [`launch`]: helper processes a channel keeps running (signal-cli), started by the core
//!   under its sandbox through a `Launcher` and supervised by the channel.
//! - [`ids`]: the check every channel runs on an event's platform ids at its edge (no empty
//!   event id, no control characters), answering 400 instead of storing it.

pub mod access;
pub mod attach;
pub mod auth;
pub mod authenticate;
pub mod backoff;
pub mod channel;
pub mod choices;
pub mod html;
pub mod ids;
pub mod launch;
pub mod recent;
pub mod render;
pub mod settings;
pub mod settings_error;
pub mod split;
pub mod token_file;
pub mod types;

pub use access::{AccessRules, DmPolicy, GroupPolicy, Place};
pub use attach::{
    Attachment, AttachmentKind, DEFAULT_MAX_ATTACHMENT_BYTES, FileError, OutboundFile, VoiceNote,
    human_size, read_capped,
};
pub use auth::{cookie, secrets_match};
pub use authenticate::{CredentialCheck, authenticate_until_ok};
pub use backoff::Backoff;
pub use channel::{
    AnswerDelivery, Channel, ChannelError, Delivery, EventSink, Health, Limits, SinkError,
};
pub use ids::{BadId, check_id, check_key};
pub use launch::{Launched, Launcher};
pub use recent::Recent;
pub use render::{Target, render};
pub use settings::{
    BuildError, ChannelSettings, EnvString, HttpRoute, Redactor, Secret, SettingsError, Site,
};
pub use split::{LengthUnit, fit_tail, split_message};
pub use token_file::{TokenFile, TokenFileError};
pub use types::{
    BadConversationKey, Button, ButtonPress, ChannelEvent, ConversationKey, Inbound, MessageRef,
    Outbound, UserRef,
};
