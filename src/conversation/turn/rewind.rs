//! `/rewind` and its buttons in a turn: a message-kind event, so it runs only between turns
//! of its conversation (never while one is running or waits for an approval).

use switchboard_channel::ChannelEvent;

use super::Turn;
use crate::checkpoint::Asker;

impl Turn<'_> {
    /// List the checkpoints (`None`) or go back to checkpoint `number`, and answer.
    pub(super) async fn rewind(
        &self,
        event: &ChannelEvent,
        number: Option<i64>,
    ) -> anyhow::Result<()> {
        let (deps, key) = (self.deps, self.key());
        if let ChannelEvent::Button(press) = event {
            let out = &deps.outbound;
            out.notice(self.channel, key, Some(press), "⏪ Rewinding…")
                .await;
        }
        let asker = Asker {
            user: &event.user().id,
            inbox_id: self.row.id,
        };
        let reply = match deps.agents.checkpointer(&deps.store, key) {
            Some(checkpoints) => checkpoints.answer(number, asker).await,
            None => crate::checkpoint::Reply {
                text: crate::checkpoint::DISABLED.into(),
                buttons: Vec::new(),
            },
        };
        self.draft()
            .with_buttons(reply.buttons)
            .finish(&reply.text)
            .await?;
        self.done().await
    }
}
