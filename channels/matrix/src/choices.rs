//! Buttons on Matrix: the emoji choices of `switchboard_channel::choices`, pressed by reaction
//! or reply. The choices travel inside the message itself (`ch.switchboard.choices`), so a
//! press is understood after a restart too, and in an encrypted room they are encrypted
//! with it.

pub(crate) use switchboard_channel::choices::{Choice, by_reaction, by_reply, choices, hint};

/// The content key holding a message's choices.
pub(crate) const FIELD: &str = "ch.switchboard.choices";
