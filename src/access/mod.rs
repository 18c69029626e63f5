//! Who may talk to the bot, decided once, in the core's sink, before an event reaches the
//! inbox: each channel's `dm_policy`/`group_policy` and allow lists (from its settings), the
//! `[policy.approvers]`, and the grants `switchboard access` stored in the database. A
//! stranger writing in a private chat under `pairing` gets one short reply with a code the
//! operator approves; nothing of their message is kept and nothing reaches the model.
//!
//! - this file: [`Access`], [`Admission`] and the decision.
//! - `pairing`: codes, their lifetime and the one reply.
//! - `cli`: the bodies of `switchboard access pending | allow | revoke | list | approver`.
//! - `warnings`: risky but valid settings, for `check` and start-up.

pub mod cli;
mod pairing;
mod warnings;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use switchboard_channel::{AccessRules, ChannelEvent, DmPolicy, GroupPolicy, Place, UserRef};

pub use pairing::{MAX_PENDING_PER_CHANNEL, PAIRING_TTL_MS, pairing_code, pairing_reply};
pub use warnings::warnings;

use crate::clock::Clock;
use crate::config::Config;
use crate::ids::{OPERATOR_USER, SYSTEM_USER};
use crate::store::{AccessRole, AccessStore, Pairing, PairingRequest, StoreError};

/// What the sink does with an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// Into the inbox.
    Admit,
    /// Acknowledged and dropped; the reason goes to the log.
    Refuse(&'static str),
    /// A stranger in a private chat: acknowledged, dropped, and answered with this code
    /// (`None`: they already have one, or too many wait; no reply).
    Pair(Option<String>),
}

/// What the decision needs to know about the person beyond the rules: looked up only when
/// the rules alone cannot decide.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Decided(Admission),
    /// Admit if the person is allowed (config, approvers or a grant); otherwise `else`.
    IfAllowed(Admission),
}

/// Every channel's access rules, the approvers and the grant store.
pub struct Access {
    /// Per channel instance. A channel built in code without a `[channels.<name>]` table
    /// brings its own gate (tests, embedders) and is open.
    rules: HashMap<String, AccessRules>,
    /// `[policy.approvers]`: they may always talk to the bot on their channel.
    approvers: BTreeMap<String, Vec<String>>,
    /// Grants and pairing requests.
    store: Arc<dyn AccessStore>,
    /// "Now", for code expiry.
    clock: Clock,
}

impl Access {
    /// The access rules `config` describes, with grants in `store`.
    pub fn new(config: &Config, store: Arc<dyn AccessStore>, clock: Clock) -> Self {
        let rules = config
            .channels
            .iter()
            .map(|(name, channel)| (name.clone(), channel.settings().access()))
            .collect();
        Self::from_parts(rules, config.policy.approvers.clone(), store, clock)
    }

    /// Access from rules per channel and approvers per channel (tests, embedders).
    pub fn from_parts(
        rules: HashMap<String, AccessRules>,
        approvers: BTreeMap<String, Vec<String>>,
        store: Arc<dyn AccessStore>,
        clock: Clock,
    ) -> Self {
        Self {
            rules,
            approvers,
            store,
            clock,
        }
    }

    /// The rules of channel `name`.
    pub fn rules(&self, name: &str) -> AccessRules {
        self.rules
            .get(name)
            .cloned()
            .unwrap_or_else(AccessRules::open)
    }

    /// Whether the config opened channel `name` to anyone (`dm_policy = "open"`, or a web
    /// chat answering public names without a token). A channel whose own gate admits only
    /// its operator (the web chat behind its token or on loopback) is not open, and neither
    /// is one built in code without a table: it lets everyone through its own gate, but
    /// nobody chose `open` for it.
    pub fn is_open(&self, name: &str) -> bool {
        self.rules
            .get(name)
            .is_some_and(|r| r.dm_policy == DmPolicy::Open && !r.operator_only)
    }

    /// Whether `user` may approve others' requests on `channel`: a `[policy.approvers]`
    /// entry or an approver grant.
    pub async fn is_approver(&self, channel: &str, user: &str) -> Result<bool, StoreError> {
        if self
            .approvers
            .get(channel)
            .is_some_and(|a| a.iter().any(|u| u == user))
        {
            return Ok(true);
        }
        self.store
            .has_grant(channel, user, AccessRole::Approver)
            .await
    }

    /// Decide `event`; under pairing, a stranger's request is stored here (not the message).
    pub async fn decide(&self, event: &ChannelEvent) -> Result<Admission, StoreError> {
        if [SYSTEM_USER, OPERATOR_USER].contains(&event.user().id.as_str()) {
            // The gateway's own expiry events, and the operator's dashboard (behind its
            // own gate: `crate::admin`).
            return Ok(Admission::Admit);
        }
        let channel = event.key().channel.as_str();
        let rules = self.rules(channel);
        let pressed = matches!(event, ChannelEvent::Button(_));
        let otherwise = match first_step(&rules, event.place(), pressed) {
            Step::Decided(verdict) => return Ok(verdict),
            Step::IfAllowed(otherwise) => otherwise,
        };
        if self.allows(&rules, channel, event.user()).await? {
            return Ok(Admission::Admit);
        }
        match otherwise {
            Admission::Pair(_) => self.pair(channel, event.user()).await,
            refusal => Ok(refusal),
        }
    }

    /// Whether the config, the approvers or a grant let `user` in on `channel`.
    async fn allows(
        &self,
        rules: &AccessRules,
        channel: &str,
        user: &UserRef,
    ) -> Result<bool, StoreError> {
        if config_lists(rules, user) || self.is_approver(channel, &user.id).await? {
            return Ok(true);
        }
        self.store
            .has_grant(channel, &user.id, AccessRole::User)
            .await
    }

    /// Store a pairing request for `user` and say whether to reply with a new code.
    async fn pair(&self, channel: &str, user: &UserRef) -> Result<Admission, StoreError> {
        let now = self.clock.now_ms();
        let request = PairingRequest {
            channel: channel.to_owned(),
            user_id: user.id.clone(),
            user_name: user.name.clone(),
            code: pairing_code(),
            created_at: now,
            expires_at: now + PAIRING_TTL_MS,
        };
        let stored = self
            .store
            .request_pairing(&request, MAX_PENDING_PER_CHANNEL)
            .await?;
        Ok(match stored {
            Pairing::Created(code) => Admission::Pair(Some(code)),
            Pairing::Waiting | Pairing::Full => Admission::Pair(None),
        })
    }
}

/// What the rules alone say about an event in `place`.
fn first_step(rules: &AccessRules, place: &Place, pressed: bool) -> Step {
    match place {
        Place::Direct => match rules.dm_policy {
            DmPolicy::Open => Step::Decided(Admission::Admit),
            DmPolicy::Allowlist => Step::IfAllowed(Admission::Refuse("not on the allow list")),
            // A press is never a pairing request: only people who wrote get a code.
            DmPolicy::Pairing if pressed => Step::IfAllowed(Admission::Refuse("not paired")),
            DmPolicy::Pairing => Step::IfAllowed(Admission::Pair(None)),
        },
        Place::Group { ids } => {
            let group_allowed = match rules.group_policy {
                GroupPolicy::Disabled => {
                    return Step::Decided(Admission::Refuse("groups disabled"));
                }
                GroupPolicy::Open => true,
                GroupPolicy::Allowlist => rules.lists_group(ids),
            };
            if !group_allowed {
                Step::Decided(Admission::Refuse("group not on the allow list"))
            } else if rules.dm_policy == DmPolicy::Open {
                Step::Decided(Admission::Admit)
            } else {
                Step::IfAllowed(Admission::Refuse("not on the allow list"))
            }
        }
    }
}

/// Whether the config's `allowed_users` names `user`: by id, or (Telegram, warned about by
/// `check`) by a username matching the `@name` the channel reported.
fn config_lists(rules: &AccessRules, user: &UserRef) -> bool {
    let username = user.name.as_deref().and_then(|n| n.strip_prefix('@'));
    rules.lists_user(&user.id)
        || username.is_some_and(|name| {
            rules
                .allowed_users
                .iter()
                .any(|entry| entry.trim_start_matches('@').eq_ignore_ascii_case(name))
        })
}

#[cfg(test)]
mod tests;
