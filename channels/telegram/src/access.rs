//! Checks on `allowed_users` entries (numeric ids or usernames). Whether a person may talk to
//! the bot is the core's decision (`dm_policy`, `group_policy`, grants), made in its sink;
//! this file only makes sure every entry can ever match, and finds the usernames to warn
//! about (a Telegram username can change hands; grants go by numeric id).

/// The `@usernames` in `entries` (an error names an entry that is neither id, username nor `*`).
pub(crate) fn usernames(entries: &[String]) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.trim();
        if entry == "*" || entry.parse::<u64>().is_ok() {
            continue;
        }
        let username = entry.strip_prefix('@').unwrap_or(entry);
        if !is_username(username) {
            return Err(format!(
                "has {entry:?}, which is neither a numeric user id, a username nor \"*\""
            ));
        }
        names.push(format!("@{username}"));
    }
    Ok(names)
}

/// Telegram usernames: 5-32 characters of A-Z, a-z, 0-9 and `_` (older ones can be shorter).
fn is_username(s: &str) -> bool {
    (1..=32).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn ids_and_a_star_are_fine_and_usernames_are_found_with_or_without_at() {
        let found = usernames(&entries(&["42", "*", "@Alice", "bob_2"])).unwrap();
        assert_eq!(found, ["@Alice", "@bob_2"]);
    }

    #[test]
    fn an_entry_that_is_neither_id_nor_username_is_refused_naming_the_entry() {
        let err = usernames(&entries(&["not a name!"])).unwrap_err();
        assert!(err.contains("\"not a name!\""), "{err}");
    }
}
