//! Outbound path, streaming drafts (`draft_transport = "draft"`): the Bot API method
//! `sendMessageDraft` shows a growing answer in a private chat as an animated, ephemeral
//! preview. teloxide 0.17 does not know the method, so it is a small custom payload here.
//! After its first real failure the channel stops trying and the core's edit-in-place is used.

use serde::Serialize;
use switchboard_channel::{ChannelError, ConversationKey, Outbound, Target as Format, render};
use teloxide::requests::{JsonRequest, Payload};
use teloxide::types::{ParseMode, True};

use crate::client::{Client, Target};
use crate::config::DraftTransport;
use crate::errors::Failure;

/// `sendMessageDraft` as the Bot API documents it.
#[derive(Debug, Clone, Serialize)]
struct SendMessageDraft {
    chat_id: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    message_thread_id: Option<i32>,
    draft_id: u64,
    text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    parse_mode: Option<ParseMode>,
}

impl Payload for SendMessageDraft {
    type Output = True;
    const NAME: &'static str = "sendMessageDraft";
}

impl Client {
    /// Show `msg` as draft `draft_id` in `key`. `Ok(false)` means drafts are off, not possible
    /// in this chat (groups) or no longer working: the caller uses send/edit instead.
    pub(crate) async fn send_draft(
        &self,
        key: &ConversationKey,
        draft_id: u64,
        msg: &Outbound,
    ) -> Result<bool, ChannelError> {
        let target = Target::of(key)?;
        if self.config.draft_transport != DraftTransport::Draft
            || !target.is_private()
            || self.drafts.unavailable()
        {
            return Ok(false);
        }
        if draft_id == 0 {
            return Err(ChannelError::Fatal("draft_id must be non-zero".into()));
        }
        let mut payload = SendMessageDraft {
            chat_id: target.chat.0,
            message_thread_id: target.thread.map(|t| t.0.0),
            draft_id,
            text: render(&msg.text, Format::TelegramHtml),
            parse_mode: Some(ParseMode::Html),
        };
        let mut failure = self.try_draft(&payload).await;
        if let Some(Failure::BadEntities(_)) = failure {
            payload.text.clone_from(&msg.text);
            payload.parse_mode = None;
            failure = self.try_draft(&payload).await;
        }
        match failure {
            None => Ok(true),
            Some(Failure::RateLimited(retry_after)) => {
                Err(ChannelError::RateLimited { retry_after })
            }
            Some(Failure::TooLong) => Err(ChannelError::TooLong),
            Some(other) => {
                self.drafts.mark_unavailable();
                tracing::warn!(
                    channel = %self.name,
                    "sendMessageDraft failed ({other:?}); using edit-in-place drafts from now on"
                );
                Ok(false)
            }
        }
    }

    async fn try_draft(&self, payload: &SendMessageDraft) -> Option<Failure> {
        JsonRequest::new(self.bot.clone(), payload.clone())
            .await
            .err()
            .map(|e| self.failure(&e))
    }
}
