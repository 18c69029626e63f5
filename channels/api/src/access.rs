//! Who may talk to the bot, as settings: each channel crate reads `dm_policy`,
//! `group_policy` and its allow lists into [`AccessRules`], and says for every event whether
//! it came from a private chat or a group ([`Place`]). The decision itself is the core's
//! (`src/access`), made once in its sink, because only the core sees the grants stored in
//! the database.

use serde::{Deserialize, Serialize};

use crate::settings_error::SettingsError;

/// Who may write to the bot in a private chat.
#[derive(Deserialize, Serialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum DmPolicy {
    /// People not yet allowed get a pairing code the operator approves (default).
    #[default]
    Pairing,
    /// Only `allowed_users` and granted people; others are dropped silently.
    Allowlist,
    /// Anyone (needs `allowed_users = ["*"]` written out).
    Open,
}

/// Which groups (Telegram groups, Discord guilds/channels, Slack channels) the bot answers in.
#[derive(Deserialize, Serialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum GroupPolicy {
    /// Only the groups the channel lists; an empty list means none (default).
    #[default]
    Allowlist,
    /// Any group the bot is in.
    Open,
    /// No group at all.
    Disabled,
}

/// Where an event was written: a private chat with the bot, or a shared space.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Place {
    /// A one-to-one chat with the bot.
    Direct,
    /// A group, guild channel or Slack channel.
    Group {
        /// The identifiers an allow list may name (chat id; channel, parent and guild ids).
        ids: Vec<String>,
    },
}

impl Place {
    /// A group known by one identifier.
    pub fn group(id: impl Into<String>) -> Self {
        Self::Group {
            ids: vec![id.into()],
        }
    }

    /// Whether this is a private chat with the bot.
    pub fn is_direct(&self) -> bool {
        matches!(self, Self::Direct)
    }
}

/// A group nobody listed: an event stored before places existed is judged as strictly as
/// a group.
impl Default for Place {
    fn default() -> Self {
        Self::Group { ids: Vec::new() }
    }
}

/// A channel's access settings, as the core's access decision reads them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccessRules {
    /// Private chats.
    pub dm_policy: DmPolicy,
    /// Groups.
    pub group_policy: GroupPolicy,
    /// User ids from the config (besides grants in the database); `"*"` means anyone and is
    /// only accepted with [`DmPolicy::Open`].
    pub allowed_users: Vec<String>,
    /// Group identifiers the channel allows under [`GroupPolicy::Allowlist`].
    pub allowed_groups: Vec<String>,
    /// The channel's own gate lets only its operator through (the web chat behind its access
    /// token, or answering loopback only): everyone it admits is let in as under
    /// [`DmPolicy::Open`], yet the channel is not open to anyone, so there a requester may
    /// approve their own tool calls as in any private chat they were let into.
    pub operator_only: bool,
}

impl AccessRules {
    /// Rules that let everyone in everywhere: for channels with their own gate (the web
    /// chat's token) or built in code without a config table.
    pub fn open() -> Self {
        Self {
            dm_policy: DmPolicy::Open,
            group_policy: GroupPolicy::Open,
            allowed_users: vec!["*".into()],
            allowed_groups: Vec::new(),
            operator_only: false,
        }
    }

    /// Rules for a channel whose own gate admits only its operator: everyone it lets
    /// through is in, and counts as let in rather than as anyone.
    pub fn operator_only() -> Self {
        Self {
            operator_only: true,
            ..Self::open()
        }
    }

    /// Whether the config lists `user` (or `"*"`).
    pub fn lists_user(&self, user: &str) -> bool {
        self.allowed_users.iter().any(|u| u == "*" || u == user)
    }

    /// Whether the config lists any of a group's identifiers.
    pub fn lists_group(&self, ids: &[String]) -> bool {
        ids.iter().any(|id| self.allowed_groups.contains(id))
    }

    /// The problem with `allowed_users = ["*"]` without `dm_policy = "open"`, naming the
    /// line to add (`dm_policy_written`: whether the key appears in the file at all).
    pub fn problems(&self, dm_policy_written: bool) -> Vec<SettingsError> {
        let star = self.allowed_users.iter().any(|u| u == "*");
        if !star || self.dm_policy == DmPolicy::Open {
            return Vec::new();
        }
        let message = if dm_policy_written {
            "is [\"*\"], which lets anyone in and is only accepted with dm_policy = \"open\"; \
             list the user ids instead, or change dm_policy to \"open\""
                .to_owned()
        } else {
            "is [\"*\"], which now needs dm_policy written out: add the line \
             `dm_policy = \"open\"` to this table to keep letting anyone in, or remove \"*\" to \
             pair new people instead"
                .to_owned()
        };
        vec![SettingsError::new("allowed_users", message)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(dm: DmPolicy, users: &[&str]) -> AccessRules {
        AccessRules {
            dm_policy: dm,
            allowed_users: users.iter().map(|u| (*u).to_owned()).collect(),
            ..AccessRules::default()
        }
    }

    #[test]
    fn the_defaults_are_pairing_for_private_chats_and_an_allowlist_for_groups() {
        let rules = AccessRules::default();
        assert_eq!(rules.dm_policy, DmPolicy::Pairing);
        assert_eq!(rules.group_policy, GroupPolicy::Allowlist);
        assert!(!rules.lists_group(&["C1".into()]));
    }

    #[test]
    fn a_star_without_dm_policy_names_the_line_to_add() {
        let problems = rules(DmPolicy::Pairing, &["*"]).problems(false);
        assert_eq!(problems[0].key, "allowed_users");
        assert!(
            problems[0].message.contains("dm_policy = \"open\""),
            "{problems:?}"
        );
        assert!(rules(DmPolicy::Open, &["*"]).problems(false).is_empty());
        assert!(
            rules(DmPolicy::Allowlist, &["*"]).problems(true)[0]
                .message
                .contains("change")
        );
        assert!(rules(DmPolicy::Pairing, &["U1"]).problems(false).is_empty());
    }

    #[test]
    fn a_star_lists_everyone_and_ids_list_only_themselves() {
        assert!(rules(DmPolicy::Open, &["*"]).lists_user("anyone"));
        let listed = rules(DmPolicy::Pairing, &["42"]);
        assert!(listed.lists_user("42") && !listed.lists_user("43"));
    }
}
