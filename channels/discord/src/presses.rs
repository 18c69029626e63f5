//! Button presses between receipt and answer. Discord shows "This interaction failed" unless
//! every interaction gets its initial response within 3 seconds, and the core may take longer
//! (it stores the press, wakes the conversation, resolves the approval). So each press is
//! registered when the gateway hands it over, and a guard defers it (type 6,
//! DEFERRED_UPDATE_MESSAGE) if the core has not answered after [`DEFER_AFTER`]; the core's
//! answer then goes through the interaction's webhook instead of the initial response.
//!
//! How `answer_button(press, text)` shows `text`: a text starting with [`PRIVATE_NOTICE_PREFIX`]
//! ("Not yours…") is an ephemeral reply only the presser sees, and the message keeps its
//! buttons for the person they are meant for; any other text is added under the message's
//! content and the buttons are removed (type 7, UPDATE_MESSAGE).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_channel::{ButtonPress, ChannelError, Target, render};

use crate::api::RestApi;
use crate::outbound::{MAX_MESSAGE_CHARS, no_mentions, shorten};
use switchboard_channel::Recent;

/// An answer text starting with this (any case) is shown only to the presser.
pub const PRIVATE_NOTICE_PREFIX: &str = "Not yours";
/// How long after receipt an unanswered press is deferred: under Discord's 3 s, with room
/// for the defer call itself.
pub const DEFER_AFTER: Duration = Duration::from_millis(2500);
/// Interaction response types and the ephemeral message flag.
const CHANNEL_MESSAGE: u8 = 4;
const DEFERRED_UPDATE: u8 = 6;
const UPDATE_MESSAGE: u8 = 7;
const EPHEMERAL: u32 = 1 << 6;
/// How many presses are remembered (tokens live 15 minutes; this is far more than that).
const PRESSES_CAP: usize = 1024;

/// Whether `text` is a notice for the presser alone (see [`PRIVATE_NOTICE_PREFIX`]).
pub fn is_private_notice(text: &str) -> bool {
    let prefix = PRIVATE_NOTICE_PREFIX.len();
    text.trim_start()
        .get(..prefix)
        .is_some_and(|start| start.eq_ignore_ascii_case(PRIVATE_NOTICE_PREFIX))
}

/// What answering a press needs, carried in `ButtonPress::reply_token` as `id:app:token`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PressToken {
    /// The interaction id.
    pub interaction_id: String,
    /// The application id (for the webhook routes).
    pub application_id: String,
    /// The interaction token (valid 15 minutes).
    pub token: String,
}

impl PressToken {
    /// The `reply_token` form.
    pub fn encode(&self) -> String {
        format!(
            "{}:{}:{}",
            self.interaction_id, self.application_id, self.token
        )
    }

    /// Read a `reply_token` made by [`PressToken::encode`].
    pub fn parse(reply_token: &str) -> Option<Self> {
        let mut parts = reply_token.splitn(3, ':');
        let (id, app, token) = (parts.next()?, parts.next()?, parts.next()?);
        (!id.is_empty() && !app.is_empty() && !token.is_empty()).then(|| Self {
            interaction_id: id.to_owned(),
            application_id: app.to_owned(),
            token: token.to_owned(),
        })
    }
}

/// Where a press stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Received; no response sent yet.
    Pending,
    /// Deferred by the guard; answers go through the webhook.
    Deferred,
    /// The initial response was the answer; later answers go through the webhook.
    Answered,
}

/// One press: its stage and the pressed message's text (the answer goes under it).
struct Slot {
    stage: Stage,
    original: String,
}

/// A press's slot; a tokio Mutex because the guard and an answer hold it across the call.
type SlotRef = Arc<tokio::sync::Mutex<Slot>>;

/// The presses of one channel instance.
pub struct Presses {
    api: Arc<RestApi>,
    defer_after: Duration,
    /// std Mutex: held for one map operation, never across an await.
    slots: Mutex<Recent<SlotRef>>,
}

impl Presses {
    /// Presses answered through `api`, deferred `defer_after` after receipt when unanswered.
    pub fn new(api: Arc<RestApi>, defer_after: Duration) -> Self {
        Self {
            api,
            defer_after,
            slots: Mutex::new(Recent::new(PRESSES_CAP)),
        }
    }

    fn slot(&self, interaction_id: &str) -> Option<SlotRef> {
        let slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        slots.get(interaction_id)
    }

    /// Register a press as it arrives and start its deadline guard. `false` when it was
    /// already registered (a replay after a resume): nothing more to do for it.
    pub fn received(&self, token: &PressToken, original: String) -> bool {
        let slot = Arc::new(tokio::sync::Mutex::new(Slot {
            stage: Stage::Pending,
            original,
        }));
        {
            let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
            if slots.get(&token.interaction_id).is_some() {
                return false;
            }
            slots.insert(token.interaction_id.clone(), Arc::clone(&slot));
        }
        let (api, token, wait) = (Arc::clone(&self.api), token.clone(), self.defer_after);
        tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            let mut slot = slot.lock().await;
            if slot.stage != Stage::Pending {
                return;
            }
            let body = json!({"type": DEFERRED_UPDATE});
            match api
                .interaction_callback(&token.interaction_id, &token.token, &body)
                .await
            {
                Ok(()) => slot.stage = Stage::Deferred,
                Err(e) => tracing::warn!(error = %e, "could not defer a Discord button press"),
            }
        });
        true
    }

    /// Answer a press that never reaches the core (refused, not a button, not stored): an
    /// ephemeral `notice`, or a silent deferred update when `notice` is `None`.
    pub async fn answer_now(&self, token: &PressToken, notice: Option<&str>) {
        let body = match notice {
            Some(text) => json!({"type": CHANNEL_MESSAGE, "data": ephemeral(text)}),
            None => json!({"type": DEFERRED_UPDATE}),
        };
        let slot = self.slot(&token.interaction_id);
        let mut guard = match &slot {
            Some(slot) => Some(slot.lock().await),
            None => None,
        };
        if guard.as_ref().is_some_and(|g| g.stage != Stage::Pending) {
            return;
        }
        match self
            .api
            .interaction_callback(&token.interaction_id, &token.token, &body)
            .await
        {
            Ok(()) => {
                if let Some(guard) = guard.as_mut() {
                    guard.stage = Stage::Answered;
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not answer a Discord button press"),
        }
    }

    /// The core's answer to `press` (see the module docs for how `text` is shown).
    pub async fn answer(&self, press: &ButtonPress, text: &str) -> Result<(), ChannelError> {
        let token = press
            .reply_token
            .as_deref()
            .and_then(PressToken::parse)
            .ok_or_else(|| {
                ChannelError::Fatal("button press without a Discord interaction token".into())
            })?;
        let private = is_private_notice(text);
        let outcome = shorten(&render(text, Target::DiscordMarkdown), MAX_MESSAGE_CHARS);
        let slot = self.slot(&token.interaction_id);
        let Some(slot) = slot else {
            return self.answer_unknown(press, &token, private, &outcome).await;
        };
        let mut slot = slot.lock().await;
        let content = if private {
            outcome
        } else {
            under(&slot.original, &outcome)
        };
        match slot.stage {
            Stage::Pending => self.respond(&token, private, &content).await?,
            Stage::Deferred | Stage::Answered => self.follow_up(&token, private, &content).await?,
        }
        slot.stage = Stage::Answered;
        Ok(())
    }

    /// The initial response carrying the answer.
    async fn respond(
        &self,
        token: &PressToken,
        private: bool,
        content: &str,
    ) -> Result<(), ChannelError> {
        let body = if private {
            json!({"type": CHANNEL_MESSAGE, "data": ephemeral(content)})
        } else {
            json!({"type": UPDATE_MESSAGE, "data": answered(content)})
        };
        self.api
            .interaction_callback(&token.interaction_id, &token.token, &body)
            .await
    }

    /// The answer after the initial response: edit the message, or an ephemeral follow-up.
    async fn follow_up(
        &self,
        token: &PressToken,
        private: bool,
        content: &str,
    ) -> Result<(), ChannelError> {
        if private {
            let body = ephemeral(content);
            return self
                .api
                .followup(&token.application_id, &token.token, &body)
                .await;
        }
        self.api
            .edit_original(&token.application_id, &token.token, &answered(content))
            .await
    }

    /// A press this process did not receive (a restart in between): try the initial
    /// response, then the webhook, then — the token having lapsed — edit the message itself.
    async fn answer_unknown(
        &self,
        press: &ButtonPress,
        token: &PressToken,
        private: bool,
        outcome: &str,
    ) -> Result<(), ChannelError> {
        let content = match (&press.message, private) {
            (Some(message), false) => {
                // The pressed message's text was not seen here; the answer still goes under it.
                let original = self.api.message_content(&press.key.chat, &message.id).await;
                under(&original.unwrap_or_default(), outcome)
            }
            _ => outcome.to_owned(),
        };
        let content = content.as_str();
        match self.respond(token, private, content).await {
            Ok(()) => return Ok(()),
            Err(ChannelError::NotFound(_) | ChannelError::Fatal(_)) => {}
            Err(other) => return Err(other),
        }
        let lapsed = match self.follow_up(token, private, content).await {
            Err(ChannelError::NotFound(reason)) => reason,
            other => return other,
        };
        match (&press.message, private) {
            (Some(message), false) => {
                let body = answered(content);
                self.api
                    .edit_message(&press.key.chat, &message.id, &body)
                    .await
            }
            _ => Err(ChannelError::NotFound(lapsed)),
        }
    }
}

/// A message body showing `content` with the buttons removed.
fn answered(content: &str) -> Value {
    json!({"content": content, "components": [], "allowed_mentions": no_mentions()})
}

/// A message body only the presser sees.
fn ephemeral(content: &str) -> Value {
    json!({"content": content, "flags": EPHEMERAL, "allowed_mentions": no_mentions()})
}

/// `outcome` under the pressed message's text, or alone when both do not fit one message.
fn under(original: &str, outcome: &str) -> String {
    let original = original.trim_end();
    if original.is_empty() {
        return outcome.to_owned();
    }
    let both = format!("{original}\n\n{outcome}");
    if both.chars().count() <= MAX_MESSAGE_CHARS {
        both
    } else {
        outcome.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_token_round_trips_even_when_the_token_has_colons() {
        let token = PressToken {
            interaction_id: "1".into(),
            application_id: "2".into(),
            token: "abc:def".into(),
        };
        assert_eq!(PressToken::parse(&token.encode()), Some(token));
        assert_eq!(PressToken::parse("1:2"), None);
        assert_eq!(PressToken::parse("1::x"), None);
    }

    #[test]
    fn only_texts_starting_with_not_yours_are_private() {
        assert!(is_private_notice(
            "Not yours: only the requester can approve."
        ));
        assert!(is_private_notice("  not YOURS to press"));
        assert!(!is_private_notice("Approved"));
        assert!(!is_private_notice("This is not yours"));
        assert!(!is_private_notice("Not"));
    }

    #[test]
    fn the_outcome_goes_under_the_message_unless_both_would_be_too_long() {
        assert_eq!(under("Run `ls`?", "Approved"), "Run `ls`?\n\nApproved");
        assert_eq!(under("", "Approved"), "Approved");
        assert_eq!(under(&"x".repeat(1995), "Approved"), "Approved");
    }
}
