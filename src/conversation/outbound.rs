//! The outbound path: every text the conversation layer sends (streamed answers, approval
//! prompts, notices) leaves through [`Outbound`], which owns the channels, the per-chat
//! governor, the scrubber and the draft pacing, so no caller can post around them.

use std::collections::HashMap;
use std::sync::Arc;

use switchboard_channel::{
    Button, ButtonPress, Channel, ChannelError, ConversationKey, MessageRef,
};

use crate::draft::{Draft, DraftOutcome, DraftSettings, PostedHook};
use crate::governor::Governor;
use crate::scrub::Scrubber;

/// Channels plus what every message to them passes through.
pub struct Outbound {
    /// Channels by instance name.
    channels: HashMap<String, Arc<dyn Channel>>,
    /// Per-chat send/edit budgets, shared by every draft in a chat.
    governor: Arc<Governor>,
    /// Redacts credentials from everything posted.
    scrubber: Arc<Scrubber>,
    /// Draft pacing.
    draft: DraftSettings,
}

impl Outbound {
    /// The outbound path over `channels`.
    pub fn new(
        channels: &[Arc<dyn Channel>],
        governor: Arc<Governor>,
        scrubber: Arc<Scrubber>,
        draft: DraftSettings,
    ) -> Self {
        Self {
            channels: channels
                .iter()
                .map(|c| (c.name().to_owned(), Arc::clone(c)))
                .collect(),
            governor,
            scrubber,
            draft,
        }
    }

    /// The channel instance named `name`, if configured.
    pub fn channel(&self, name: &str) -> Option<&Arc<dyn Channel>> {
        self.channels.get(name)
    }

    /// The scrubber outbound text and stored history pass through.
    pub fn scrubber(&self) -> &Arc<Scrubber> {
        &self.scrubber
    }

    /// A live draft in `key`, scrubbed and governed. `posted` earlier messages are edited
    /// instead of sent again (a turn resumed after a restart); `hook` learns of new ones.
    pub fn draft(
        &self,
        channel: &Arc<dyn Channel>,
        key: &ConversationKey,
        posted: Vec<MessageRef>,
        hook: Option<PostedHook>,
    ) -> Draft {
        Draft::new(Arc::clone(channel), key.clone(), self.draft, posted, hook)
            .scrubbed(Arc::clone(&self.scrubber))
            .governed(Arc::clone(&self.governor))
    }

    /// Post one complete message (with `buttons`, if any) in `key`.
    pub async fn post(
        &self,
        channel: &Arc<dyn Channel>,
        key: &ConversationKey,
        text: &str,
        buttons: Vec<Button>,
    ) -> Result<DraftOutcome, ChannelError> {
        self.draft(channel, key, Vec::new(), None)
            .with_buttons(buttons)
            .finish(text)
            .await
    }

    /// Replace the text of a message posted earlier (an approval prompt once decided): the
    /// edit is scrubbed and waits for the chat's budget like any other write.
    pub async fn edit(
        &self,
        channel: &Arc<dyn Channel>,
        key: &ConversationKey,
        message: &MessageRef,
        text: &str,
    ) -> Result<(), ChannelError> {
        let text = self.scrubber.scrub(text).into_owned();
        self.governor.take(key, &channel.limits_for(key)).await;
        channel
            .edit(key, message, &switchboard_channel::Outbound::text(text))
            .await
    }

    /// Tell the user something short: on the pressed button when there is one (a toast, not
    /// a new message), otherwise as a message in the chat. Best effort: a failure is logged.
    pub async fn notice(
        &self,
        channel: &Arc<dyn Channel>,
        key: &ConversationKey,
        press: Option<&ButtonPress>,
        text: &str,
    ) {
        let sent = match press {
            Some(press) => channel.answer_button(press, text).await,
            None => self.post(channel, key, text, Vec::new()).await.map(|_| ()),
        };
        if let Err(err) = sent {
            tracing::warn!(%key, error = %err, "could not deliver a notice");
        }
    }
}
