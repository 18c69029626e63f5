//! Block Kit for messages with buttons: the rendered mrkdwn in section blocks of at most
//! 3,000 characters, then one `actions` block of buttons. Also the "answered" form of such a
//! message: the same sections with the outcome in place of the buttons.

use serde_json::{Value, json};
use switchboard_channel::{Button, LengthUnit, split_message};

/// Longest text Slack accepts in one section block.
pub const SECTION_MAX_CHARS: usize = 3000;
/// Longest button label Slack accepts.
const BUTTON_LABEL_MAX_CHARS: usize = 75;
/// Most elements one actions block holds.
const ACTIONS_MAX: usize = 25;

/// Section blocks for `mrkdwn` followed by an actions block for `buttons`.
pub fn with_buttons(mrkdwn: &str, buttons: &[Button]) -> Vec<Value> {
    let mut blocks = sections(mrkdwn);
    let elements: Vec<Value> = buttons
        .iter()
        .take(ACTIONS_MAX)
        .enumerate()
        .map(|(i, button)| {
            json!({
                "type": "button",
                "action_id": format!("switchboard-{i}"),
                "text": {"type": "plain_text", "text": label(&button.label), "emoji": true},
                "value": button.payload,
            })
        })
        .collect();
    if !elements.is_empty() {
        blocks.push(json!({"type": "actions", "elements": elements}));
    }
    blocks
}

/// The blocks of a message whose buttons were answered: its earlier blocks without the
/// actions, then the outcome as a context line. Without the earlier blocks (they came
/// from another replica, or before a restart) the outcome stands alone.
pub fn answered(earlier: Option<Vec<Value>>, outcome_mrkdwn: &str) -> Vec<Value> {
    let mut blocks: Vec<Value> = earlier
        .unwrap_or_default()
        .into_iter()
        .filter(|b| b.get("type").and_then(Value::as_str) != Some("actions"))
        .collect();
    let outcome: String = outcome_mrkdwn.chars().take(SECTION_MAX_CHARS).collect();
    if !outcome.trim().is_empty() {
        blocks.push(json!({
            "type": "context",
            "elements": [{"type": "mrkdwn", "text": outcome}],
        }));
    }
    blocks
}

/// `mrkdwn` cut into section blocks Slack accepts; code fences stay balanced per block.
fn sections(mrkdwn: &str) -> Vec<Value> {
    if mrkdwn.trim().is_empty() {
        return Vec::new();
    }
    split_message(mrkdwn, SECTION_MAX_CHARS, LengthUnit::Chars)
        .into_iter()
        .map(|part| json!({"type": "section", "text": {"type": "mrkdwn", "text": part}}))
        .collect()
}

fn label(text: &str) -> String {
    if text.chars().count() <= BUTTON_LABEL_MAX_CHARS {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(BUTTON_LABEL_MAX_CHARS - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    fn button(label: &str, payload: &str) -> Button {
        Button {
            label: label.into(),
            payload: payload.into(),
        }
    }

    #[test]
    fn long_text_is_spread_over_sections_of_at_most_3000_chars() {
        let text = "word ".repeat(1500); // 7,500 chars
        let blocks = with_buttons(&text, &[button("OK", "ok")]);
        let sections: Vec<&str> = blocks
            .iter()
            .filter(|b| b["type"] == "section")
            .map(|b| b["text"]["text"].as_str().unwrap())
            .collect();
        assert_eq!(sections.len(), 3);
        assert!(
            sections
                .iter()
                .all(|s| s.chars().count() <= SECTION_MAX_CHARS)
        );
        let words: usize = sections.iter().map(|s| s.split_whitespace().count()).sum();
        assert_eq!(words, 1500);
        assert_eq!(blocks.last().unwrap()["type"], "actions");
    }

    #[test]
    fn buttons_carry_their_payload_as_value_and_unique_action_ids() {
        let blocks = with_buttons(
            "Run `rm`?",
            &[button("Approve", "a:1"), button("Deny", "d:1")],
        );
        let elements = blocks[1]["elements"].as_array().unwrap();
        assert_eq!(elements[0]["value"], "a:1");
        assert_eq!(elements[1]["text"]["text"], "Deny");
        assert_ne!(elements[0]["action_id"], elements[1]["action_id"]);
    }

    #[test]
    fn long_labels_are_shortened_to_what_slack_accepts() {
        let long = "x".repeat(100);
        let blocks = with_buttons("", &[button(&long, "p")]);
        assert_eq!(blocks.len(), 1, "no empty section");
        let shown = blocks[0]["elements"][0]["text"]["text"].as_str().unwrap();
        assert_eq!(shown.chars().count(), BUTTON_LABEL_MAX_CHARS);
    }

    #[test]
    fn an_answered_message_keeps_its_text_and_shows_the_outcome_instead_of_buttons() {
        let earlier = with_buttons("Delete the file?", &[button("Yes", "y")]);
        let blocks = answered(Some(earlier), "*Approved*");
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[0]["text"]["text"], "Delete the file?");
        assert_eq!(blocks[1]["type"], "context");
        assert_eq!(blocks[1]["elements"][0]["text"], "*Approved*");
        assert_eq!(answered(None, "Expired").len(), 1);
    }
}
