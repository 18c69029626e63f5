//! Inbound edge, after normalising: `allowed_users` decides whose messages reach the inbox.
//! A refused user is logged once (with the id to paste into the config), then silently dropped.

use std::collections::HashSet;
use std::sync::Mutex;

use teloxide::types::User;

/// Who may talk to the bot.
#[derive(Debug)]
pub(crate) struct Access {
    rule: Rule,
    /// Users already named in a refusal warning; a std Mutex because it is held for one
    /// insert, never across an await.
    warned: Mutex<HashSet<u64>>,
}

#[derive(Debug, PartialEq, Eq)]
enum Rule {
    Everyone,
    Only {
        ids: HashSet<u64>,
        /// Lowercase, without `@`: Telegram usernames are case-insensitive.
        usernames: HashSet<String>,
    },
}

impl Access {
    /// Parse `allowed_users`; the error names the bad entry and reads after the key.
    pub(crate) fn parse(entries: &[String]) -> Result<Self, String> {
        let mut ids = HashSet::new();
        let mut usernames = HashSet::new();
        let mut everyone = false;
        for entry in entries {
            let entry = entry.trim();
            if entry == "*" {
                everyone = true;
            } else if let Ok(id) = entry.parse::<u64>() {
                ids.insert(id);
            } else {
                let username = entry.strip_prefix('@').unwrap_or(entry);
                if !is_username(username) {
                    return Err(format!(
                        "has {entry:?}, which is neither a numeric user id, a username nor \"*\""
                    ));
                }
                usernames.insert(username.to_ascii_lowercase());
            }
        }
        let rule = if everyone {
            Rule::Everyone
        } else {
            Rule::Only { ids, usernames }
        };
        Ok(Self {
            rule,
            warned: Mutex::new(HashSet::new()),
        })
    }

    /// Whether `user` may talk to the bot.
    pub(crate) fn admits(&self, user: &User) -> bool {
        match &self.rule {
            Rule::Everyone => true,
            Rule::Only { ids, usernames } => {
                ids.contains(&user.id.0)
                    || user
                        .username
                        .as_deref()
                        .is_some_and(|u| usernames.contains(&u.to_ascii_lowercase()))
            }
        }
    }

    /// Log the refusal of `user` at warn, once per user, so the owner can allow them.
    pub(crate) fn note_refusal(&self, channel: &str, user: &User) {
        let first = self
            .warned
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(user.id.0);
        if first {
            tracing::warn!(
                channel,
                user_id = user.id.0,
                username = user.username.as_deref().unwrap_or(""),
                "refused a message from Telegram user {}: add \"{}\" to channels.{channel}.allowed_users \
                 to let them in",
                user.id.0,
                user.id.0,
            );
        } else {
            tracing::debug!(channel, user_id = user.id.0, "refused a message again");
        }
    }
}

/// Telegram usernames: 5-32 characters of A-Z, a-z, 0-9 and `_` (older ones can be shorter).
fn is_username(s: &str) -> bool {
    (1..=32).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(id: u64, username: Option<&str>) -> User {
        serde_json::from_value(serde_json::json!({
            "id": id, "is_bot": false, "first_name": "Test", "username": username,
        }))
        .expect("a user parses")
    }

    fn access(entries: &[&str]) -> Access {
        let entries: Vec<String> = entries.iter().map(|s| (*s).to_owned()).collect();
        Access::parse(&entries).expect("valid list")
    }

    #[test]
    fn ids_and_usernames_with_or_without_at_are_admitted() {
        let allowed = access(&["42", "@Alice", "bob_2"]);
        assert!(allowed.admits(&user(42, None)));
        assert!(allowed.admits(&user(7, Some("alice"))));
        assert!(allowed.admits(&user(8, Some("BOB_2"))));
        assert!(!allowed.admits(&user(9, Some("mallory"))));
        assert!(!allowed.admits(&user(10, None)));
    }

    #[test]
    fn a_star_admits_everyone_and_an_empty_list_no_one() {
        assert!(access(&["*"]).admits(&user(1, None)));
        assert!(!access(&[]).admits(&user(1, Some("alice"))));
    }

    #[test]
    fn an_entry_that_is_neither_id_nor_username_is_refused_naming_the_entry() {
        let err = Access::parse(&["not a name!".to_owned()]).unwrap_err();
        assert!(err.contains("\"not a name!\""), "{err}");
    }

    #[test]
    fn a_refused_user_is_remembered_so_the_warning_is_logged_once() {
        let allowed = access(&[]);
        allowed.note_refusal("telegram", &user(5, None));
        allowed.note_refusal("telegram", &user(5, None));
        assert_eq!(allowed.warned.lock().unwrap().len(), 1);
    }
}
