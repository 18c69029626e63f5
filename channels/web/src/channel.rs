//! `WebChannel`: the `Channel` implementation the core holds. Inbound it mounts the page and
//! the socket (see `routes`) and, outside the gateway's body limit, the upload and download
//! routes (see `upload`); outbound every send, edit and delete lands in the session's
//! transcript and goes to each of its open tabs, so a tab that connects later catches up.
//! A file the agent sends becomes a message with a download link.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use switchboard_channel::{
    Attachment, ButtonPress, Channel, ChannelError, ConversationKey, EventSink, FileError, Health,
    LengthUnit, Limits, MessageRef, Outbound, OutboundFile, VoiceNote,
};
use tokio_util::sync::CancellationToken;

use crate::config::{WebConfig, WebConfigError};
use crate::files::FileLink;
use crate::hub::Hub;
use crate::ids::valid_session_id;
use crate::protocol::{Role, ServerFrame};
use crate::session::Message;
use crate::{routes, upload};

/// Longest message the core may send, in characters (a browser has no platform limit; this
/// keeps one message a readable size and a transcript file small).
pub const MAX_MESSAGE_CHARS: usize = 32_000;

/// The built-in web chat: one page, one WebSocket per open tab.
pub struct WebChannel {
    hub: Arc<Hub>,
    /// Cancelled when the gateway stops, so open sockets close with 1001 and pages reconnect.
    closing: CancellationToken,
}

impl WebChannel {
    /// Keep `file` for `key`'s session and post a message linking it (`voice_ms`: with a
    /// player).
    async fn post_file(
        &self,
        key: &ConversationKey,
        file: &OutboundFile,
        voice_ms: Option<u64>,
    ) -> Result<MessageRef, FileError> {
        let session = self
            .session(key)
            .map_err(|e| FileError::Fatal(e.to_string()))?;
        let files = self.hub.files.as_ref().ok_or(FileError::Unsupported)?;
        let stored = files
            .put(session, &file.name, file.mime.as_deref(), &file.bytes)
            .await
            .map_err(|e| FileError::Transient(format!("could not keep the file: {e}")))?;
        let meta = files.meta(&stored).await;
        let link = FileLink {
            id: stored,
            name: meta.map_or_else(|| file.name.clone(), |m| m.name),
            size: file.bytes.len() as u64,
            voice_ms,
        };
        let id = uuid::Uuid::new_v4().simple().to_string();
        let message = Message::new(id.clone(), Role::Bot, file.caption.clone(), Vec::new())
            .with_files(vec![link]);
        let keep = self.hub.config.history_messages;
        self.hub.with(session, |s| s.push(message, keep)).await;
        Ok(MessageRef::new(id))
    }

    /// A channel named `name` for `config`, served by a gateway listening on `listen`.
    ///
    /// Refuses a configuration without an access token or a `token_file` (unless it is a
    /// public chat on loopback), since anyone who could reach it would be talking to the
    /// agent as its operator; with a `token_file`, the generated token is read (or made) now.
    pub fn new(name: &str, config: WebConfig, listen: SocketAddr) -> Result<Self, WebConfigError> {
        config.check(name, listen)?;
        let gate = crate::gate::gate(name, &config, listen)?;
        Ok(Self {
            hub: Arc::new(Hub::new(name, config, gate)),
            closing: CancellationToken::new(),
        })
    }

    /// The page's URL path (always ending in `/`); the socket is this plus `ws`.
    pub fn page_path(&self) -> String {
        self.hub.config.base()
    }

    /// The session named by a conversation key, or `NotFound` for anything that is not one
    /// of ours (it would name a file otherwise).
    fn session<'a>(&self, key: &'a ConversationKey) -> Result<&'a str, ChannelError> {
        if valid_session_id(&key.chat) {
            Ok(&key.chat)
        } else {
            Err(ChannelError::NotFound(format!(
                "no web chat session {:?}",
                key.chat
            )))
        }
    }
}

fn message_gone(msg_ref: &MessageRef) -> ChannelError {
    ChannelError::NotFound(format!("no web chat message {}", msg_ref.id))
}

#[async_trait]
impl Channel for WebChannel {
    fn name(&self) -> &str {
        &self.hub.name
    }

    fn limits(&self) -> Limits {
        Limits {
            max_message_len: MAX_MESSAGE_CHARS,
            length_unit: LengthUnit::Chars,
            min_edit_interval: Duration::from_millis(100),
            rate_per_window: 10,
            rate_window: Duration::from_secs(1),
            supports_buttons: true,
            ..Limits::default()
        }
    }

    async fn start(
        &self,
        _sink: Arc<dyn EventSink>,
        shutdown: CancellationToken,
    ) -> Result<(), ChannelError> {
        shutdown.cancelled().await;
        self.closing.cancel();
        self.hub.save_all().await;
        Ok(())
    }

    /// Only where a tab of the session has its socket open: the lease of a web
    /// conversation follows its socket to the replica holding it.
    fn reaches(&self, key: &ConversationKey) -> bool {
        self.session(key).is_ok_and(|id| self.hub.has_socket(id))
    }

    fn routes(&self, sink: Arc<dyn EventSink>) -> Option<axum::Router> {
        Some(routes::router(
            Arc::clone(&self.hub),
            sink,
            self.closing.clone(),
        ))
    }

    fn upload_routes(&self, _sink: Arc<dyn EventSink>) -> Option<axum::Router> {
        Some(upload::router(Arc::clone(&self.hub)))
    }

    fn max_attachment_bytes(&self) -> u64 {
        self.hub.config.max_attachment_bytes
    }

    /// Reads an upload kept under the channel's data directory (a restart keeps it).
    async fn download(&self, file: &Attachment, max_bytes: u64) -> Result<Vec<u8>, FileError> {
        let files = self.hub.files.as_ref().ok_or(FileError::Unsupported)?;
        files
            .read(&file.id, max_bytes)
            .await
            .map(|(_, bytes)| bytes)
    }

    /// Keeps the file for the session and posts a message with its caption and a download
    /// link (`<path>/files/<id>`, served to that session only).
    async fn send_file(
        &self,
        key: &ConversationKey,
        file: &OutboundFile,
    ) -> Result<MessageRef, FileError> {
        self.post_file(key, file, None).await
    }

    /// A spoken answer: kept like any file, shown with a player.
    async fn send_voice(
        &self,
        key: &ConversationKey,
        voice: &VoiceNote,
    ) -> Result<MessageRef, FileError> {
        let file = OutboundFile {
            name: VoiceNote::NAME.into(),
            bytes: voice.bytes.clone(),
            mime: Some(VoiceNote::MIME.into()),
            caption: String::new(),
        };
        self.post_file(key, &file, Some(voice.duration_ms)).await
    }

    async fn send(
        &self,
        key: &ConversationKey,
        msg: &Outbound,
    ) -> Result<MessageRef, ChannelError> {
        let session = self.session(key)?;
        let id = uuid::Uuid::new_v4().simple().to_string();
        let message = Message::new(id.clone(), Role::Bot, msg.text.clone(), msg.buttons.clone());
        let keep = self.hub.config.history_messages;
        self.hub.with(session, |s| s.push(message, keep)).await;
        Ok(MessageRef::new(id))
    }

    async fn edit(
        &self,
        key: &ConversationKey,
        msg_ref: &MessageRef,
        msg: &Outbound,
    ) -> Result<(), ChannelError> {
        let session = self.session(key)?;
        let found = self
            .hub
            .with(session, |s| {
                s.update(&msg_ref.id, |m| {
                    m.text.clone_from(&msg.text);
                    m.buttons.clone_from(&msg.buttons);
                    m.notice = None;
                })
            })
            .await;
        found.then_some(()).ok_or_else(|| message_gone(msg_ref))
    }

    async fn delete(
        &self,
        key: &ConversationKey,
        msg_ref: &MessageRef,
    ) -> Result<(), ChannelError> {
        let session = self.session(key)?;
        let found = self.hub.with(session, |s| s.remove(&msg_ref.id)).await;
        found.then_some(()).ok_or_else(|| message_gone(msg_ref))
    }

    async fn typing(&self, key: &ConversationKey) -> Result<(), ChannelError> {
        let session = self.session(key)?;
        let frame = ServerFrame::Typing.to_json();
        self.hub.with(session, |s| s.broadcast(&frame)).await;
        Ok(())
    }

    /// Replaces the pressed message's buttons with `text`, in every tab and in the saved
    /// transcript, so a reload shows the outcome instead of live buttons.
    async fn answer_button(&self, press: &ButtonPress, text: &str) -> Result<(), ChannelError> {
        let session = self.session(&press.key)?;
        let Some(pressed) = &press.message else {
            return Ok(());
        };
        let found = self
            .hub
            .with(session, |s| {
                s.update(&pressed.id, |m| {
                    m.buttons.clear();
                    m.notice = Some(text.to_owned());
                })
            })
            .await;
        found.then_some(()).ok_or_else(|| message_gone(pressed))
    }

    fn health(&self) -> Health {
        Health::ready(format!(
            "serving {} with {} open socket(s)",
            self.page_path(),
            self.hub.open_sockets()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_channel::Button;

    fn channel() -> WebChannel {
        let config = WebConfig {
            access_token: "a-test-token-0123456789".into(),
            ..WebConfig::default()
        };
        WebChannel::new("web", config, "127.0.0.1:0".parse().unwrap()).unwrap()
    }

    fn key() -> ConversationKey {
        ConversationKey::new("web", "0123456789abcdef0123456789abcdef")
    }

    #[tokio::test]
    async fn sends_edits_and_deletes_change_the_transcript_a_tab_gets() {
        let web = channel();
        let first = web.send(&key(), &Outbound::text("one")).await.unwrap();
        let second = web.send(&key(), &Outbound::text("two")).await.unwrap();
        web.edit(&key(), &first, &Outbound::text("**uno**"))
            .await
            .unwrap();
        web.delete(&key(), &second).await.unwrap();
        let mut tab = web.hub.attach(&key().chat).await;
        let sync: serde_json::Value = serde_json::from_str(&tab.rx.recv().await.unwrap()).unwrap();
        let messages = sync["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 1);
        assert_eq!(messages[0]["id"], first.id.as_str());
        assert_eq!(messages[0]["html"], "<p><strong>uno</strong></p>");
    }

    #[tokio::test]
    async fn edits_and_deletes_of_unknown_messages_are_not_found() {
        let web = channel();
        let ghost = MessageRef::new("ghost");
        let edit = web.edit(&key(), &ghost, &Outbound::text("x")).await;
        assert!(matches!(edit, Err(ChannelError::NotFound(_))));
        let delete = web.delete(&key(), &ghost).await;
        assert!(matches!(delete, Err(ChannelError::NotFound(_))));
    }

    #[tokio::test]
    async fn a_key_that_is_not_a_session_id_is_refused() {
        let web = channel();
        let bad = ConversationKey::new("web", "../../etc/passwd");
        let sent = web.send(&bad, &Outbound::text("x")).await;
        assert!(matches!(sent, Err(ChannelError::NotFound(_))));
    }

    #[tokio::test]
    async fn answering_a_button_replaces_the_buttons_with_the_notice() {
        let web = channel();
        let msg = Outbound {
            text: "Run it?".into(),
            buttons: vec![Button {
                label: "Yes".into(),
                payload: "yes".into(),
            }],
        };
        let posted = web.send(&key(), &msg).await.unwrap();
        let press = ButtonPress {
            key: key(),
            event_id: "e1".into(),
            user: switchboard_channel::UserRef {
                id: "u".into(),
                name: None,
            },
            payload: "yes".into(),
            message: Some(posted.clone()),
            reply_token: None,
            place: switchboard_channel::Place::Direct,
        };
        web.answer_button(&press, "This button is no longer active.")
            .await
            .unwrap();
        let (buttons, notice) = web
            .hub
            .with(&key().chat, |s| {
                let m = &s.messages[0];
                (m.buttons.len(), m.notice.clone())
            })
            .await;
        assert_eq!(buttons, 0);
        assert_eq!(notice.as_deref(), Some("This button is no longer active."));
    }

    #[test]
    fn limits_allow_long_messages_fast_edits_and_buttons() {
        let limits = channel().limits();
        assert_eq!(limits.max_message_len, 32_000);
        assert_eq!(limits.min_edit_interval, Duration::from_millis(100));
        assert!(limits.supports_buttons);
    }
}
