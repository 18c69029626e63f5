//! Outbound path: the core's markdown answer → Telegram HTML (`render`) → `sendMessage` /
//! `editMessageText` in the conversation's chat and topic, with buttons as an inline keyboard.
//! HTML Telegram cannot parse is resent once as the plain markdown source.

use switchboard_channel::{
    Button, ButtonPress, ChannelError, ConversationKey, MessageRef, Outbound, Target as Format,
    render,
};
use teloxide::RequestError;
use teloxide::payloads::{
    AnswerCallbackQuerySetters, EditMessageTextSetters, SendChatActionSetters, SendMessageSetters,
};
use teloxide::prelude::Requester;
use teloxide::types::{
    CallbackQueryId, ChatAction, InlineKeyboardButton, InlineKeyboardMarkup, LinkPreviewOptions,
    MessageId, ParseMode,
};

use crate::client::{Client, Target, message_id};
use crate::errors::Failure;

/// Telegram's limit on `callback_data`, in bytes.
pub const MAX_CALLBACK_DATA: usize = 64;
/// Longest notice `answerCallbackQuery` accepts.
const MAX_NOTICE_CHARS: usize = 200;
/// Buttons per keyboard row; more wrap to the next row.
const BUTTONS_PER_ROW: usize = 3;

/// One text to put on Telegram: HTML first, the plain source if the HTML is refused.
struct Text<'a> {
    html: String,
    plain: &'a str,
}

impl Client {
    /// Post `msg` in the conversation `key`.
    pub(crate) async fn send(
        &self,
        key: &ConversationKey,
        msg: &Outbound,
    ) -> Result<MessageRef, ChannelError> {
        let target = Target::of(key)?;
        let keyboard = keyboard(&msg.buttons)?;
        let text = Text {
            html: render(&msg.text, Format::TelegramHtml),
            plain: &msg.text,
        };
        let sent = self
            .with_plain_fallback(key, "sendMessage", &text, |body, mode| {
                let mut request = self
                    .bot
                    .send_message(target.chat, body)
                    .link_preview_options(no_preview());
                if let Some(mode) = mode {
                    request = request.parse_mode(mode);
                }
                if let Some(thread) = target.thread {
                    request = request.message_thread_id(thread);
                }
                if let Some(keyboard) = keyboard.clone() {
                    request = request.reply_markup(keyboard);
                }
                request
            })
            .await?;
        Ok(MessageRef::new(sent.id.0.to_string()))
    }

    /// Replace the text and buttons of message `msg_ref` in `key`.
    pub(crate) async fn edit(
        &self,
        key: &ConversationKey,
        msg_ref: &MessageRef,
        msg: &Outbound,
    ) -> Result<(), ChannelError> {
        let target = Target::of(key)?;
        let id: MessageId = message_id(key, msg_ref)?;
        let keyboard = keyboard(&msg.buttons)?;
        let text = Text {
            html: render(&msg.text, Format::TelegramHtml),
            plain: &msg.text,
        };
        let edited = self
            .with_plain_fallback(key, "editMessageText", &text, |body, mode| {
                let mut request = self
                    .bot
                    .edit_message_text(target.chat, id, body)
                    .link_preview_options(no_preview());
                if let Some(mode) = mode {
                    request = request.parse_mode(mode);
                }
                if let Some(keyboard) = keyboard.clone() {
                    request = request.reply_markup(keyboard);
                }
                request
            })
            .await;
        match edited {
            Ok(_) => Ok(()),
            Err(Edit::Unchanged) => Ok(()),
            Err(Edit::Failed(err)) => Err(err),
        }
    }

    /// Delete message `msg_ref` in `key`.
    pub(crate) async fn delete(
        &self,
        key: &ConversationKey,
        msg_ref: &MessageRef,
    ) -> Result<(), ChannelError> {
        let target = Target::of(key)?;
        let id = message_id(key, msg_ref)?;
        self.bot
            .delete_message(target.chat, id)
            .await
            .map(|_| ())
            .map_err(|e| self.channel_error("deleteMessage", Some(key), self.failure(&e)))
    }

    /// Show "typing…" in `key` (inside its topic).
    pub(crate) async fn typing(&self, key: &ConversationKey) -> Result<(), ChannelError> {
        let target = Target::of(key)?;
        let mut request = self.bot.send_chat_action(target.chat, ChatAction::Typing);
        if let Some(thread) = target.thread {
            request = request.message_thread_id(thread);
        }
        request
            .await
            .map(|_| ())
            .map_err(|e| self.channel_error("sendChatAction", Some(key), self.failure(&e)))
    }

    /// Stop the spinner on a pressed button, showing `text` briefly when it is not empty.
    pub(crate) async fn answer_button(
        &self,
        press: &ButtonPress,
        text: &str,
    ) -> Result<(), ChannelError> {
        let id = match &press.reply_token {
            Some(token) => token.clone(),
            None => press
                .event_id
                .strip_prefix("cb")
                .unwrap_or(&press.event_id)
                .to_owned(),
        };
        let mut request = self.bot.answer_callback_query(CallbackQueryId(id));
        if !text.is_empty() {
            // Telegram shows at most 200 characters and refuses longer notices.
            request = request.text(text.chars().take(MAX_NOTICE_CHARS).collect::<String>());
        }
        request.await.map(|_| ()).map_err(|e| {
            self.channel_error("answerCallbackQuery", Some(&press.key), self.failure(&e))
        })
    }

    /// Run `call` with the HTML; if Telegram cannot parse it, run it once more with the plain
    /// markdown source and no parse mode, so the user still gets the answer.
    async fn with_plain_fallback<R, F>(
        &self,
        key: &ConversationKey,
        method: &str,
        text: &Text<'_>,
        call: F,
    ) -> Result<teloxide::types::Message, Edit>
    where
        F: Fn(String, Option<ParseMode>) -> R,
        R: std::future::IntoFuture<Output = Result<teloxide::types::Message, RequestError>>,
    {
        let first = call(text.html.clone(), Some(ParseMode::Html)).await;
        let err = match first {
            Ok(message) => return Ok(message),
            Err(err) => err,
        };
        match self.failure(&err) {
            Failure::BadEntities(description) => {
                tracing::warn!(
                    channel = %self.name,
                    chat = %key.chat,
                    method,
                    "Telegram could not parse the rendered HTML ({description}); sending plain text"
                );
                call(text.plain.to_owned(), None)
                    .await
                    .map_err(|e| self.edit_error(method, key, &e))
            }
            _ => Err(self.edit_error(method, key, &err)),
        }
    }

    fn edit_error(&self, method: &str, key: &ConversationKey, err: &RequestError) -> Edit {
        match self.failure(err) {
            Failure::NotModified => Edit::Unchanged,
            failure => Edit::Failed(self.channel_error(method, Some(key), failure)),
        }
    }
}

/// Why a send or edit did not produce a message.
enum Edit {
    /// The edit changed nothing: the message already reads like this.
    Unchanged,
    /// A real failure.
    Failed(ChannelError),
}

impl From<Edit> for ChannelError {
    fn from(edit: Edit) -> Self {
        match edit {
            Edit::Unchanged => ChannelError::Fatal("message is not modified".into()),
            Edit::Failed(err) => err,
        }
    }
}

/// Buttons as an inline keyboard; payloads over Telegram's 64-byte limit are refused.
fn keyboard(buttons: &[Button]) -> Result<Option<InlineKeyboardMarkup>, ChannelError> {
    if buttons.is_empty() {
        return Ok(None);
    }
    if let Some(long) = buttons.iter().find(|b| b.payload.len() > MAX_CALLBACK_DATA) {
        return Err(ChannelError::Fatal(format!(
            "button {:?}: payload is {} bytes, Telegram allows {MAX_CALLBACK_DATA}",
            long.label,
            long.payload.len()
        )));
    }
    let rows = buttons.chunks(BUTTONS_PER_ROW).map(|row| {
        row.iter()
            .map(|b| InlineKeyboardButton::callback(b.label.clone(), b.payload.clone()))
            .collect::<Vec<_>>()
    });
    Ok(Some(InlineKeyboardMarkup::new(rows)))
}

/// Answers quote links often; a preview card per message would bury the text.
fn no_preview() -> LinkPreviewOptions {
    LinkPreviewOptions {
        is_disabled: true,
        url: None,
        prefer_small_media: false,
        prefer_large_media: false,
        show_above_text: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn button(payload: &str) -> Button {
        Button {
            label: "Approve".into(),
            payload: payload.into(),
        }
    }

    #[test]
    fn a_payload_over_64_bytes_is_refused_before_anything_is_sent() {
        assert!(keyboard(&[button(&"x".repeat(64))]).is_ok());
        assert!(matches!(
            keyboard(&[button(&"x".repeat(65))]),
            Err(ChannelError::Fatal(_))
        ));
    }

    #[test]
    fn buttons_wrap_after_three_per_row() {
        let buttons: Vec<Button> = (0..4).map(|i| button(&format!("p{i}"))).collect();
        let markup = keyboard(&buttons).unwrap().unwrap();
        let widths: Vec<usize> = markup.inline_keyboard.iter().map(Vec::len).collect();
        assert_eq!(widths, vec![3, 1]);
        assert!(keyboard(&[]).unwrap().is_none());
    }
}
