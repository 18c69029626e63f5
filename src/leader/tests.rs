//! The leader wrapper changes only who receives: everything a replica sends, and the files it
//! moves, reach the wrapped channel.

use std::sync::Arc;

use async_trait::async_trait;
use switchboard_channel::{
    Attachment, Channel, ChannelError, ConversationKey, EventSink, FileError, Limits, MessageRef,
    Outbound, OutboundFile,
};
use tokio_util::sync::CancellationToken;

use super::{LeaderSettings, Leaders};

/// A led channel that moves files.
struct Files;

#[async_trait]
impl Channel for Files {
    fn name(&self) -> &str {
        "files"
    }
    fn limits(&self) -> Limits {
        Limits::default()
    }
    fn leader_role(&self) -> Option<String> {
        Some("telegram:files".into())
    }
    async fn start(
        &self,
        _sink: Arc<dyn EventSink>,
        _stop: CancellationToken,
    ) -> Result<(), ChannelError> {
        Ok(())
    }
    async fn send(&self, _: &ConversationKey, _: &Outbound) -> Result<MessageRef, ChannelError> {
        Ok(MessageRef::new("sent"))
    }
    async fn edit(
        &self,
        _: &ConversationKey,
        _: &MessageRef,
        _: &Outbound,
    ) -> Result<(), ChannelError> {
        Ok(())
    }
    async fn delete(&self, _: &ConversationKey, _: &MessageRef) -> Result<(), ChannelError> {
        Ok(())
    }
    fn max_attachment_bytes(&self) -> u64 {
        7
    }
    async fn download(&self, _: &Attachment, max: u64) -> Result<Vec<u8>, FileError> {
        Ok(vec![1; usize::try_from(max).unwrap_or(0)])
    }
    async fn send_file(
        &self,
        _: &ConversationKey,
        file: &OutboundFile,
    ) -> Result<MessageRef, FileError> {
        Ok(MessageRef::new(file.name.clone()))
    }
}

#[tokio::test]
async fn a_led_channel_still_downloads_and_sends_files_on_every_replica() {
    // No database is reached: wrapping and file calls never touch the lease.
    let leaders = Leaders::new(
        "postgres://nobody@127.0.0.1:1/none",
        LeaderSettings::default(),
    );
    let led = leaders.wrap(Arc::new(Files));
    assert_eq!(led.leader_role().as_deref(), Some("telegram:files"));
    assert_eq!(led.max_attachment_bytes(), 7);
    let file: Attachment = serde_json::from_value(serde_json::json!({
        "kind": "document", "id": "f1", "name": "a.csv"
    }))
    .expect("an attachment reference");
    assert_eq!(
        led.download(&file, 3).await.expect("downloaded"),
        vec![1; 3]
    );
    let out = OutboundFile {
        name: "report.txt".into(),
        bytes: b"hello".to_vec(),
        mime: None,
        caption: String::new(),
    };
    let key = ConversationKey::new("files", "1");
    let posted = led.send_file(&key, &out).await.expect("posted");
    assert_eq!(posted.id, "report.txt");
}
