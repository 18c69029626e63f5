//! Messages out: markdown rendered to WhatsApp's marks and split at 4,096 characters;
//! buttons as interactive reply buttons (at most three, titles of at most 20 characters, a
//! body of at most 1,024 characters, so a longer text goes out first and the buttons after
//! it), a list where there are more choices; and the 24-hour window: chosen by the person's
//! last message before sending, a `131047` handled the same way when it comes back anyway.
//! Outside the window a message goes out as the configured template, or is recorded as
//! undeliverable: logged, counted in the channel's health, and refused once (never retried).

use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use switchboard_channel::{
    Button, ChannelError, LengthUnit, MessageRef, Outbound, Target, render, split_message,
};

use crate::api::REENGAGEMENT;
use crate::state::{Inner, Window};

/// Longest text message WhatsApp takes.
pub(crate) const MAX_TEXT_CHARS: usize = 4096;
/// Longest body of an interactive message.
const MAX_BODY_CHARS: usize = 1024;
/// Longest reply-button title.
const MAX_BUTTON_TITLE: usize = 20;
/// Longest list-row title and description.
const MAX_ROW_TITLE: usize = 24;
const MAX_ROW_DESCRIPTION: usize = 72;
/// Reply buttons one message takes; more choices become a list (of at most ten rows).
const MAX_BUTTONS: usize = 3;
const MAX_ROWS: usize = 10;
/// Longest template parameter we send (the template's whole body is capped at 1,024).
const MAX_PARAMETER_CHARS: usize = 900;
/// Attempts at a later piece of one message before its failure is handed back.
const REST_ATTEMPTS: u32 = 5;
/// The body of a button message that follows a text too long to carry them.
const CHOOSE: &str = "Choose one:";

/// `text` cut to `max` characters, with `…` when cut.
fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max - 1).collect();
    cut.push('…');
    cut
}

/// The addressee of a message to `chat`: a phone number goes in `to` (Meta prefers it when
/// known); a business-scoped user id (someone who shows no number) in `recipient`.
pub(crate) fn addressed(chat: &str, mut body: Value) -> Value {
    body["recipient_type"] = json!("individual");
    if chat.bytes().all(|b| b.is_ascii_digit()) {
        body["to"] = json!(chat);
    } else {
        body["recipient"] = json!(chat);
    }
    body
}

fn text_body(text: &str) -> Value {
    // No link previews: a preview fetches a URL the model wrote with nobody clicking it.
    json!({"type": "text", "text": {"body": text, "preview_url": false}})
}

/// Reply buttons for up to three choices, else a list.
fn interactive(body: &str, buttons: &[Button]) -> Value {
    if buttons.len() <= MAX_BUTTONS {
        let buttons: Vec<Value> = buttons
            .iter()
            .map(|b| json!({"type": "reply", "reply": {"id": b.payload, "title": clip(&b.label, MAX_BUTTON_TITLE)}}))
            .collect();
        return json!({"type": "interactive", "interactive": {
            "type": "button", "body": {"text": body}, "action": {"buttons": buttons}}});
    }
    let rows: Vec<Value> = buttons
        .iter()
        .take(MAX_ROWS)
        .map(|b| {
            let mut row = json!({"id": b.payload, "title": clip(&b.label, MAX_ROW_TITLE)});
            if b.label.chars().count() > MAX_ROW_TITLE {
                row["description"] = json!(clip(&b.label, MAX_ROW_DESCRIPTION));
            }
            row
        })
        .collect();
    json!({"type": "interactive", "interactive": {
        "type": "list", "body": {"text": body},
        "action": {"button": "Choose", "sections": [{"title": "Choices", "rows": rows}]}}})
}

/// The messages `msg` becomes, in order.
pub(crate) fn bodies(msg: &Outbound) -> Vec<Value> {
    let text = render(&msg.text, Target::WhatsApp);
    let text = if text.trim().is_empty() {
        "…".to_owned()
    } else {
        text
    };
    if msg.buttons.is_empty() {
        return split_message(&text, MAX_TEXT_CHARS, LengthUnit::Chars)
            .iter()
            .map(|t| text_body(t))
            .collect();
    }
    if text.chars().count() <= MAX_BODY_CHARS {
        return vec![interactive(&text, &msg.buttons)];
    }
    let mut out: Vec<Value> = split_message(&text, MAX_TEXT_CHARS, LengthUnit::Chars)
        .iter()
        .map(|t| text_body(t))
        .collect();
    out.push(interactive(CHOOSE, &msg.buttons));
    out
}

/// The text a person sees in a message body (a text's, or an interactive message's body).
fn shown_text(body: &Value) -> String {
    let text = body["text"]["body"].as_str();
    let text = text.or(body["interactive"]["body"]["text"].as_str());
    text.unwrap_or_default().to_owned()
}

/// `text` as one template parameter: Meta refuses newlines, tabs and more than four spaces
/// in a row there, so lines are joined with ` · ` and runs of blanks become one space.
pub(crate) fn flatten(text: &str) -> String {
    let lines: Vec<String> = text
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|line| !line.is_empty())
        .collect();
    clip(&lines.join(" · "), MAX_PARAMETER_CHARS)
}

impl Inner {
    /// Send `msg` to `chat`; the last message's id. Free-form inside the 24-hour window (or
    /// when it is unknown), the template outside it.
    pub(crate) async fn send_outbound(
        &self,
        chat: &str,
        msg: &Outbound,
    ) -> Result<MessageRef, ChannelError> {
        if self.window(chat, SystemTime::now()) == Window::Closed {
            return self.outside_window(chat, msg).await;
        }
        let mut last = None;
        for body in bodies(msg) {
            let shown = shown_text(&body);
            let body = addressed(chat, body);
            // After the first piece went out, a retry of the whole message would repeat it:
            // the rest waits out a rate limit or a passing failure here instead.
            let sent = match last {
                None => self.api.send(body).await,
                Some(_) => self.send_rest(body).await,
            };
            match sent {
                Ok(id) => {
                    self.remember_sent(&id, chat, &shown);
                    last = Some(id);
                }
                Err(err) if err.code() == Some(REENGAGEMENT) && last.is_none() => {
                    return self.outside_window(chat, msg).await;
                }
                Err(err) => return Err(err.into()),
            }
        }
        self.answered(chat);
        last.map(MessageRef::new)
            .ok_or_else(|| ChannelError::Transient("nothing was sent".into()))
    }

    /// A later piece of one message: rate limits and passing failures waited out (a few
    /// times, at most a minute each) rather than handed back.
    async fn send_rest(&self, body: Value) -> Result<String, crate::api::GraphError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let err = match self.api.send(body.clone()).await {
                Ok(id) => return Ok(id),
                Err(err) => err,
            };
            let wait = match ChannelError::from(err.clone()) {
                ChannelError::RateLimited { retry_after } => retry_after,
                ChannelError::Transient(_) => Duration::from_millis(500 << attempt.min(5)),
                _ => return Err(err),
            };
            if attempt >= REST_ATTEMPTS {
                return Err(err);
            }
            tokio::time::sleep(wait.min(Duration::from_secs(60))).await;
        }
    }

    /// `msg` to someone who has not written for 24 hours: as the reminder template with the
    /// text as its parameter, else recorded as undeliverable.
    async fn outside_window(&self, chat: &str, msg: &Outbound) -> Result<MessageRef, ChannelError> {
        self.as_template(chat, &render(&msg.text, Target::WhatsApp))
            .await
    }

    /// Our message `id`, reported failed with `131047` after WhatsApp had taken it: the same
    /// as a closed window found before sending, when its text is still remembered.
    pub(crate) async fn failed_for_the_window(&self, id: &str) {
        let Some((chat, text)) = self.sent_message(id) else {
            self.undeliverable("(a message no longer remembered)");
            tracing::error!(channel = %self.name, message = id, "a message failed outside the 24-hour window and is no longer known");
            return;
        };
        if let Err(err) = self.as_template(&chat, &text).await {
            tracing::warn!(channel = %self.name, chat, error = %err, "could not send the message as the template");
        }
    }

    /// `text` (already in WhatsApp's format) to `chat` as the reminder template, or recorded
    /// as undeliverable without one.
    async fn as_template(&self, chat: &str, text: &str) -> Result<MessageRef, ChannelError> {
        let Some(template) = &self.config.reminder_template else {
            self.undeliverable(chat);
            tracing::error!(
                channel = %self.name,
                chat,
                "message undeliverable: more than 24 hours since this person last wrote, and no \
                 reminder_template is set to reach them"
            );
            return Err(ChannelError::Fatal(
                "undeliverable outside WhatsApp's 24-hour window (no reminder_template)".into(),
            ));
        };
        let parameter = flatten(text);
        let body = json!({"type": "template", "template": {
            "name": template.name,
            "language": {"code": template.language},
            "components": [{"type": "body", "parameters": [{"type": "text", "text": parameter}]}],
        }});
        tracing::info!(channel = %self.name, chat, template = %template.name, "outside the 24-hour window: sent as the template");
        let id = self.api.send(addressed(chat, body)).await?;
        Ok(MessageRef::new(id))
    }

    /// Show "typing…" in `chat` (a read receipt with the typing indicator, on the person's
    /// last message), unless it was shown less than 20 s ago.
    pub(crate) async fn typing(&self, chat: &str) -> Result<(), ChannelError> {
        let Some(message_id) = self.typing_due(chat, SystemTime::now()) else {
            return Ok(());
        };
        let body = json!({"messaging_product": "whatsapp", "status": "read",
            "message_id": message_id, "typing_indicator": {"type": "text"}});
        self.api
            .post("messages", &body)
            .await
            .map(drop)
            .map_err(Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buttons(n: usize) -> Vec<Button> {
        (0..n)
            .map(|i| Button {
                label: format!("Choice number {i} with a long label"),
                payload: format!("p{i}"),
            })
            .collect()
    }

    #[test]
    fn three_buttons_are_reply_buttons_with_titles_of_at_most_twenty_characters() {
        let out = bodies(&Outbound {
            text: "Run `ls`?".into(),
            buttons: buttons(3),
        });
        assert_eq!(out.len(), 1);
        let i = &out[0]["interactive"];
        assert_eq!(i["type"], "button");
        assert_eq!(i["body"]["text"], "Run `ls`?");
        let titles: Vec<usize> = i["action"]["buttons"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["reply"]["title"].as_str().unwrap().chars().count())
            .collect();
        assert_eq!(titles, [20, 20, 20]);
        assert_eq!(i["action"]["buttons"][2]["reply"]["id"], "p2");
    }

    #[test]
    fn more_choices_become_a_list_and_a_long_text_goes_first() {
        let list = bodies(&Outbound {
            text: "Pick".into(),
            buttons: buttons(5),
        });
        assert_eq!(list[0]["interactive"]["type"], "list");
        assert_eq!(
            list[0]["interactive"]["action"]["sections"][0]["rows"]
                .as_array()
                .unwrap()
                .len(),
            5
        );
        let long = bodies(&Outbound {
            text: "x".repeat(1100),
            buttons: buttons(3),
        });
        assert_eq!(long.len(), 2);
        assert_eq!(long[0]["text"]["body"].as_str().unwrap().len(), 1100);
        assert_eq!(long[1]["interactive"]["body"]["text"], CHOOSE);
    }

    #[test]
    fn a_long_text_is_split_at_4096_characters_and_markdown_rendered() {
        let out = bodies(&Outbound::text(format!(
            "**Hi**\n\n{}",
            "word ".repeat(1000)
        )));
        assert_eq!(out.len(), 2);
        assert!(out[0]["text"]["body"].as_str().unwrap().starts_with("*Hi*"));
        assert!(
            out.iter()
                .all(|b| b["text"]["body"].as_str().unwrap().chars().count() <= MAX_TEXT_CHARS)
        );
    }

    #[test]
    fn a_template_parameter_has_no_newlines_tabs_or_long_runs_of_spaces() {
        let flat = flatten("Reminder:\n\n\tcall   Bob      now\nthen rest");
        assert_eq!(flat, "Reminder: · call Bob now · then rest");
        assert!(flatten(&"y ".repeat(2000)).chars().count() <= MAX_PARAMETER_CHARS);
    }

    #[test]
    fn a_number_is_sent_to_and_a_user_id_as_recipient() {
        assert_eq!(addressed("15550100", json!({}))["to"], "15550100");
        assert_eq!(addressed("US.1349", json!({}))["recipient"], "US.1349");
    }
}
