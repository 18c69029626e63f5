//! The `Channel` implementation the gateway holds: settings in, the event stream started from
//! `start` (on the leader only), and answers out through the daemon's JSON-RPC `send` (an edit
//! is a `send` with `editTimestamp`), `remoteDelete`, `sendTyping` and `getAttachment`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine;
use serde_json::json;
use switchboard_channel::{
    AnswerDelivery, Attachment, ButtonPress, Channel, ChannelError, ConversationKey, EventSink,
    FileError, Health, Launcher, LengthUnit, Limits, MessageRef, Outbound, OutboundFile,
};
use tokio_util::sync::CancellationToken;

use crate::config::SignalConfig;
use crate::rpc::Failure;
use crate::shared::{GROUP, Shared};

/// Longest text one message carries, in UTF-16 code units. Signal's apps send a longer body
/// as a "long text" attachment; staying under it keeps each part an ordinary message.
pub const MAX_MESSAGE_UTF16: usize = 2000;

/// Edits one message takes. Signal's apps accept 10 edits of a message within 24 hours
/// (Signal-Desktop's `MESSAGE_MAX_EDIT_COUNT`) and drop later ones silently, with no error
/// from signal-cli; one is kept in hand because the apps count the original in the same
/// history. The draft continues in a new message once a message's edits are spent.
pub const MAX_EDITS: u32 = 9;

/// One configured Signal account, behind its signal-cli daemon.
pub struct SignalChannel {
    shared: Arc<Shared>,
    /// Starts signal-cli itself when `command` is set (see `daemon.rs`).
    launcher: Option<Launcher>,
}

impl SignalChannel {
    /// Build channel `name` from its settings; the error names the setting to fix.
    pub fn new(name: &str, config: SignalConfig, data_dir: &Path) -> Result<Self, String> {
        if config.account.is_empty() {
            return Err(format!("channels.{name}.account is not set"));
        }
        if let Some(first) = config.problems().first() {
            return Err(format!("channels.{name}.{first}"));
        }
        Ok(Self {
            shared: Arc::new(Shared::new(name, config, data_dir)?),
            launcher: None,
        })
    }

    /// Run the settings' `command` (signal-cli's daemon) through `launcher` while the
    /// channel receives, restarting it when it exits.
    #[must_use]
    pub fn supervising(mut self, launcher: Launcher) -> Self {
        self.launcher = Some(launcher);
        self
    }
}

fn timestamp(msg_ref: &MessageRef) -> Result<u64, ChannelError> {
    msg_ref.id.parse().map_err(|_| {
        ChannelError::NotFound(format!("not a Signal message timestamp: {}", msg_ref.id))
    })
}

#[async_trait]
impl Channel for SignalChannel {
    fn name(&self) -> &str {
        &self.shared.name
    }

    fn limits(&self) -> Limits {
        Limits {
            max_message_len: MAX_MESSAGE_UTF16,
            length_unit: LengthUnit::Utf16,
            // Few edits per message: each one should show a real step forward.
            min_edit_interval: Duration::from_secs(2),
            rate_per_window: 30,
            rate_window: Duration::from_secs(60),
            supports_buttons: true,
            delivery: AnswerDelivery::Edits {
                max_edits: Some(MAX_EDITS),
            },
        }
    }

    async fn start(
        &self,
        sink: Arc<dyn EventSink>,
        shutdown: CancellationToken,
    ) -> Result<(), ChannelError> {
        let events = crate::events::run(Arc::clone(&self.shared), sink, shutdown.clone());
        let command = self.shared.config.command.clone();
        match &self.launcher {
            Some(launcher) if !command.is_empty() => {
                let daemon = crate::daemon::supervise(
                    Arc::clone(&self.shared),
                    launcher.clone(),
                    command,
                    shutdown,
                );
                tokio::join!(daemon, events).1
            }
            _ => events.await,
        }
    }

    /// One reader of the daemon's stream: with several replicas, only the leader.
    fn leader_role(&self) -> Option<String> {
        Some(format!("signal:{}", self.shared.name))
    }

    async fn send(
        &self,
        key: &ConversationKey,
        msg: &Outbound,
    ) -> Result<MessageRef, ChannelError> {
        let sent = self.shared.post(key, msg, None).await?;
        Ok(MessageRef::new(sent.to_string()))
    }

    async fn edit(
        &self,
        key: &ConversationKey,
        msg_ref: &MessageRef,
        msg: &Outbound,
    ) -> Result<(), ChannelError> {
        self.shared
            .post(key, msg, Some(timestamp(msg_ref)?))
            .await
            .map(|_| ())
    }

    async fn delete(
        &self,
        key: &ConversationKey,
        msg_ref: &MessageRef,
    ) -> Result<(), ChannelError> {
        let params = json!({ "targetTimestamp": timestamp(msg_ref)? });
        self.shared
            .call(key, "remoteDelete", params)
            .await
            .map(|_| ())
    }

    async fn typing(&self, key: &ConversationKey) -> Result<(), ChannelError> {
        self.shared
            .call(key, "sendTyping", json!({}))
            .await
            .map(|_| ())
    }

    /// Signal has no private answers: the notice goes to the conversation, quoting nothing.
    async fn answer_button(&self, press: &ButtonPress, text: &str) -> Result<(), ChannelError> {
        self.send(&press.key, &Outbound::text(text))
            .await
            .map(|_| ())
    }

    fn max_attachment_bytes(&self) -> u64 {
        self.shared.config.max_attachment_bytes
    }

    async fn download(&self, file: &Attachment, max_bytes: u64) -> Result<Vec<u8>, FileError> {
        if file.size.is_some_and(|s| s > max_bytes) {
            return Err(FileError::TooLarge { limit: max_bytes });
        }
        let (chat, id) = file
            .id
            .split_once('|')
            .ok_or_else(|| FileError::Gone("not a Signal attachment reference".into()))?;
        let mut params = json!({ "id": id });
        match chat.strip_prefix(GROUP) {
            Some(group) => params["groupId"] = json!(group),
            None => params["recipient"] = json!(chat),
        }
        let result = self
            .shared
            .rpc
            .call("getAttachment", params)
            .await
            .map_err(|f| match f {
                Failure::Transient(why) => FileError::Transient(why),
                other => FileError::Gone(format!("{other:?}")),
            })?;
        let data = result["data"]
            .as_str()
            .ok_or_else(|| FileError::Gone("no data".into()))?;
        // Base64 is 4/3 of the bytes: refuse before decoding what is plainly too large.
        if (data.len() as u64) / 4 * 3 > max_bytes + 3 {
            return Err(FileError::TooLarge { limit: max_bytes });
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| FileError::Fatal(format!("unreadable attachment from signal-cli: {e}")))?;
        if bytes.len() as u64 > max_bytes {
            return Err(FileError::TooLarge { limit: max_bytes });
        }
        Ok(bytes)
    }

    async fn send_file(
        &self,
        key: &ConversationKey,
        file: &OutboundFile,
    ) -> Result<MessageRef, FileError> {
        let mime = file.mime.as_deref().unwrap_or("application/octet-stream");
        let name: String = file
            .name
            .chars()
            .filter(|c| !matches!(c, ';' | ',' | '\n' | '\r'))
            .collect();
        let data = base64::engine::general_purpose::STANDARD.encode(&file.bytes);
        let params = json!({
            "message": file.caption,
            "attachment": [format!("data:{mime};filename={name};base64,{data}")],
        });
        let result = self
            .shared
            .call(key, "send", params)
            .await
            .map_err(|e| match e {
                ChannelError::Transient(why) => FileError::Transient(why),
                other => FileError::Fatal(other.to_string()),
            })?;
        let sent = result["timestamp"].as_u64().unwrap_or_default();
        Ok(MessageRef::new(sent.to_string()))
    }

    fn health(&self) -> Health {
        self.shared.health()
    }
}
