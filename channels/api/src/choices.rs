//! Buttons on platforms that have none (Matrix, Signal): each button becomes a choice with an
//! emoji, which the bot puts under its message as a reaction (one tap for the person to add
//! theirs), and a line under the text names them. A reaction with that emoji, or a reply
//! naming the choice (its emoji, its number, its label or the label's first word:
//! `approve`, `always`, `deny`), is the press. Where the choices are kept so that a press is
//! understood after a restart is each channel's own business.

use crate::types::Button;
use serde::{Deserialize, Serialize};

/// One button as offered on a platform without buttons.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Choice {
    /// The reaction that presses it.
    pub key: String,
    /// What the button said.
    pub label: String,
    /// What the press hands back to the core.
    pub payload: String,
}

/// Keys for buttons whose label says what they do; others get a number.
const NAMED: [(&str, &str); 5] = [
    ("approve once", "✅"),
    ("always allow", "♾️"),
    ("deny", "❌"),
    ("continue", "▶️"),
    ("stop", "⏹️"),
];

const NUMBERS: [&str; 10] = ["1️⃣", "2️⃣", "3️⃣", "4️⃣", "5️⃣", "6️⃣", "7️⃣", "8️⃣", "9️⃣", "🔟"];

/// The choices for `buttons`, each with its own key (at most ten; more cannot be offered
/// with distinct number keys and are dropped with a warning).
pub fn choices(buttons: &[Button]) -> Vec<Choice> {
    if buttons.len() > NUMBERS.len() {
        tracing::warn!(
            buttons = buttons.len(),
            "a message offers at most {} choices; the rest are dropped",
            NUMBERS.len()
        );
    }
    let mut taken: Vec<String> = Vec::new();
    buttons
        .iter()
        .take(NUMBERS.len())
        .enumerate()
        .map(|(i, button)| {
            let label = button.label.to_lowercase();
            let named = NAMED
                .iter()
                .find(|(name, key)| label.trim() == *name && !taken.iter().any(|t| t == key))
                .map(|(_, key)| (*key).to_owned());
            let key = named.unwrap_or_else(|| NUMBERS[i].to_owned());
            taken.push(key.clone());
            Choice {
                key,
                label: button.label.clone(),
                payload: button.payload.clone(),
            }
        })
        .collect()
}

/// The line under a message with choices, in markdown.
pub fn hint(choices: &[Choice]) -> String {
    let named: Vec<String> = choices
        .iter()
        .map(|c| format!("{} {}", c.key, c.label))
        .collect();
    format!("React with {} — or reply with one.", named.join(" · "))
}

/// The choice a reaction `key` presses. Emoji keys are compared without variation
/// selectors, which clients add or drop (`❤` vs `❤️`).
pub fn by_reaction<'a>(choices: &'a [Choice], key: &str) -> Option<&'a Choice> {
    let key = bare(key);
    choices.iter().find(|c| bare(&c.key) == key)
}

/// The choice a reply's text names: its emoji, its number (`1`), its label or the label's
/// first word (`approve`, `always`, `deny`), ignoring case and surrounding space.
pub fn by_reply<'a>(choices: &'a [Choice], text: &str) -> Option<&'a Choice> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let lower = text.to_lowercase();
    choices.iter().enumerate().find_map(|(i, c)| {
        let label = c.label.to_lowercase();
        let hit = bare(&c.key) == bare(text)
            || lower == (i + 1).to_string()
            || lower == label
            || label.split_whitespace().next() == Some(lower.as_str());
        hit.then_some(c)
    })
}

fn bare(key: &str) -> String {
    key.chars()
        .filter(|c| !matches!(c, '\u{fe0e}' | '\u{fe0f}'))
        .collect::<String>()
        .trim()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buttons(labels: &[&str]) -> Vec<Button> {
        labels
            .iter()
            .enumerate()
            .map(|(i, l)| Button {
                label: (*l).into(),
                payload: format!("p{i}"),
            })
            .collect()
    }

    #[test]
    fn approval_buttons_get_their_meaning_as_emoji_and_others_numbers() {
        let c = choices(&buttons(&["Approve once", "Always allow", "Deny"]));
        let keys: Vec<&str> = c.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(keys, ["✅", "♾️", "❌"]);
        let c = choices(&buttons(&["#0 start", "#1 after ls"]));
        assert_eq!(c[0].key, "1️⃣");
        assert_eq!(c[1].key, "2️⃣");
        assert!(
            hint(&c).contains("1️⃣ #0 start · 2️⃣ #1 after ls"),
            "{}",
            hint(&c)
        );
    }

    #[test]
    fn a_reaction_matches_with_or_without_the_variation_selector() {
        let c = choices(&buttons(&["Approve once", "Always allow", "Deny"]));
        assert_eq!(by_reaction(&c, "♾").unwrap().payload, "p1");
        assert_eq!(by_reaction(&c, "✅").unwrap().payload, "p0");
        assert!(by_reaction(&c, "👍").is_none());
    }

    #[test]
    fn a_reply_may_name_the_emoji_the_number_or_the_label() {
        let c = choices(&buttons(&["Approve once", "Always allow", "Deny"]));
        assert_eq!(by_reply(&c, " deny ").unwrap().payload, "p2");
        assert_eq!(by_reply(&c, "Approve").unwrap().payload, "p0");
        assert_eq!(by_reply(&c, "always").unwrap().payload, "p1");
        assert_eq!(by_reply(&c, "2").unwrap().payload, "p1");
        assert_eq!(by_reply(&c, "✅").unwrap().payload, "p0");
        assert!(by_reply(&c, "yes please").is_none());
        assert!(by_reply(&c, "").is_none());
    }

    #[test]
    fn more_than_ten_buttons_keep_ten_distinct_keys() {
        let labels: Vec<String> = (0..12).map(|i| format!("b{i}")).collect();
        let refs: Vec<&str> = labels.iter().map(String::as_str).collect();
        let c = choices(&buttons(&refs));
        assert_eq!(c.len(), 10);
        let mut keys: Vec<&str> = c.iter().map(|c| c.key.as_str()).collect();
        keys.dedup();
        assert_eq!(keys.len(), 10);
    }
}
