//! Outbound message bodies: the core's markdown rendered for Discord, buttons as action rows,
//! and `allowed_mentions` emptied on every body so model output can never ping anyone. Runs
//! just before `api` sends a create, an edit or an interaction answer.

use serde_json::{Value, json};
use switchboard_channel::{Button, ChannelError, Outbound, Target, render};

/// Longest message content Discord accepts, in characters.
pub const MAX_MESSAGE_CHARS: usize = 2000;
/// Longest `custom_id` Discord accepts; a longer payload cannot round-trip.
pub const MAX_CUSTOM_ID_CHARS: usize = 100;
/// Longest button label Discord accepts; longer labels are shortened.
const MAX_LABEL_CHARS: usize = 80;
/// Buttons per action row, and action rows per message.
const PER_ROW: usize = 5;
const MAX_ROWS: usize = 5;
/// Button style 1 (blurple) for the first button, 2 (grey) for the rest.
const PRIMARY: u8 = 1;
const SECONDARY: u8 = 2;
/// Component types: action row and button.
const ACTION_ROW: u8 = 1;
const BUTTON: u8 = 2;

/// Message flag that hides link embeds (`SUPPRESS_EMBEDS`, 1 << 2).
pub const SUPPRESS_EMBEDS: u64 = 1 << 2;

/// `allowed_mentions` that allows nothing: no @everyone/@here, role or user pings, even when
/// the text contains a mention the renderer did not catch, and no reply ping.
pub fn no_mentions() -> Value {
    json!({"parse": [], "users": [], "roles": [], "replied_user": false})
}

/// The body of a create (`is_edit` false) or an edit. An edit always names its components,
/// so buttons the new text no longer has disappear. Without `previews`, embeds are
/// suppressed: an embed fetches a link nobody clicked.
pub fn message_body(msg: &Outbound, is_edit: bool, previews: bool) -> Result<Value, ChannelError> {
    let mut body = json!({
        "content": render(&msg.text, Target::DiscordMarkdown),
        "allowed_mentions": no_mentions(),
    });
    if !previews {
        body["flags"] = json!(SUPPRESS_EMBEDS);
    }
    if is_edit || !msg.buttons.is_empty() {
        body["components"] = Value::Array(action_rows(&msg.buttons)?);
    }
    Ok(body)
}

/// Buttons as action rows of at most five; `Fatal` when a payload cannot fit a `custom_id`
/// or there are more buttons than a message holds.
pub fn action_rows(buttons: &[Button]) -> Result<Vec<Value>, ChannelError> {
    if buttons.len() > PER_ROW * MAX_ROWS {
        return Err(ChannelError::Fatal(format!(
            "{} buttons; a Discord message holds at most {}",
            buttons.len(),
            PER_ROW * MAX_ROWS
        )));
    }
    let mut rows = Vec::new();
    for (row, chunk) in buttons.chunks(PER_ROW).enumerate() {
        let mut components = Vec::new();
        for (i, button) in chunk.iter().enumerate() {
            if button.payload.is_empty() || button.payload.chars().count() > MAX_CUSTOM_ID_CHARS {
                return Err(ChannelError::Fatal(format!(
                    "button payload must be 1 to {MAX_CUSTOM_ID_CHARS} characters for a Discord custom_id"
                )));
            }
            let style = if row == 0 && i == 0 {
                PRIMARY
            } else {
                SECONDARY
            };
            components.push(json!({
                "type": BUTTON,
                "style": style,
                "label": shorten(&button.label, MAX_LABEL_CHARS),
                "custom_id": button.payload,
            }));
        }
        rows.push(json!({"type": ACTION_ROW, "components": components}));
    }
    Ok(rows)
}

/// `text` cut to `max` characters, with an ellipsis when cut.
pub fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
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
    fn every_body_allows_no_mentions_and_renders_the_markdown() {
        let body = message_body(&Outbound::text("hi @everyone and <@123>"), false, false).unwrap();
        assert_eq!(body["allowed_mentions"]["parse"], json!([]));
        let content = body["content"].as_str().unwrap();
        assert!(
            !content.contains("@everyone") && !content.contains("<@123>"),
            "{content}"
        );
        assert!(body.get("components").is_none());
        let edit = message_body(&Outbound::text("plain"), true, false).unwrap();
        assert_eq!(edit["components"], json!([]));
    }

    #[test]
    fn buttons_become_rows_of_five_with_their_payload_as_custom_id() {
        let buttons: Vec<Button> = (0..7)
            .map(|i| button(&format!("B{i}"), &format!("p{i}")))
            .collect();
        let rows = action_rows(&buttons).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0]["components"].as_array().unwrap().len(), 5);
        assert_eq!(rows[1]["components"][1]["custom_id"], "p6");
        assert_eq!(rows[0]["components"][0]["style"], 1);
        assert_eq!(rows[0]["components"][1]["style"], 2);
    }

    #[test]
    fn a_payload_over_100_characters_is_fatal_and_a_long_label_is_shortened() {
        let long = "x".repeat(101);
        assert!(matches!(
            action_rows(&[button("ok", &long)]),
            Err(ChannelError::Fatal(_))
        ));
        assert!(action_rows(&[button("ok", &"x".repeat(100))]).is_ok());
        let rows = action_rows(&[button(&"L".repeat(90), "p")]).unwrap();
        let label = rows[0]["components"][0]["label"].as_str().unwrap();
        assert_eq!(label.chars().count(), 80);
        assert!(label.ends_with('…'));
        let many: Vec<Button> = (0..26).map(|i| button("b", &i.to_string())).collect();
        assert!(matches!(action_rows(&many), Err(ChannelError::Fatal(_))));
    }
}
