//! The `Channel` implementation the gateway holds. Email has no streaming and no edits: the
//! answer is one mail sent when the turn is done (`AnswerDelivery::Whole`), and
//! `max_message_len` is large enough that an answer is never split over several mails.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use switchboard_channel::{
    AnswerDelivery, Attachment, Channel, ChannelError, ConversationKey, EventSink, FileError,
    Health, LengthUnit, Limits, MessageRef, Outbound, OutboundFile,
};
use tokio_rustls::TlsConnector;
use tokio_util::sync::CancellationToken;

use crate::auth::Verifier;
use crate::config::EmailConfig;
use crate::health::HealthState;
use crate::inbound::{RateLimit, thread_key};
use crate::outbound::Smtp;
use crate::shared::Inner;
use crate::state::{Choice, State};

/// Longest answer, in characters: one mail, never split.
pub const MAX_MESSAGE_CHARS: usize = 1_000_000;

/// One mailbox the gateway answers from.
pub struct EmailChannel {
    inner: Arc<Inner>,
}

impl EmailChannel {
    /// Build channel `name` from its settings, keeping its state in `dir`; the error names
    /// the setting to fix.
    pub fn new(name: &str, config: EmailConfig, dir: PathBuf) -> Result<Self, String> {
        if let Some(first) = config.problems().first() {
            return Err(format!("channels.{name}.{first}"));
        }
        let extra = crate::tls::extra_roots(config.tls_ca_file.as_deref())
            .map_err(|e| format!("channels.{name}.{e}"))?;
        let inner = Inner {
            name: name.to_owned(),
            state: State::open(&dir).map_err(|e| format!("channels.{name}: state: {e}"))?,
            verifier: Verifier::new(&config).map_err(|e| format!("channels.{name}: {e}"))?,
            limit: RateLimit::new(config.max_mails_per_hour),
            tls: crate::tls::connector(&extra).map_err(|e| format!("channels.{name}.{e}"))?,
            smtp: Smtp::new(&config, &extra).map_err(|e| format!("channels.{name}.{e}"))?,
            health: HealthState::default(),
            files: Mutex::new(HashMap::new()),
            config,
        };
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// Log in to both servers once and say what was found (`switchboard check --probe`).
    pub async fn probe(&self) -> Result<String, String> {
        probe_with(&self.inner.config, &self.inner.tls, &self.inner.smtp).await
    }
}

/// Log in to both servers of `config` once and say what was found, without building the
/// channel (no state is opened): `switchboard check --probe`.
pub async fn probe(config: &EmailConfig) -> Result<String, String> {
    let extra = crate::tls::extra_roots(config.tls_ca_file.as_deref())?;
    let tls = crate::tls::connector(&extra)?;
    let smtp = Smtp::new(config, &extra)?;
    probe_with(config, &tls, &smtp).await
}

async fn probe_with(
    config: &EmailConfig,
    tls: &TlsConnector,
    smtp: &Smtp,
) -> Result<String, String> {
    let mut session = crate::imap::connect(&config.imap, tls)
        .await
        .map_err(|e| e.to_string())?;
    let idle = crate::imap::has_idle(&mut session)
        .await
        .map_err(|e| e.to_string())?;
    let mailbox = session
        .examine(config.mailbox())
        .await
        .map_err(|e| format!("IMAP mailbox {}: {e}", config.mailbox()))?;
    let _ = session.logout().await;
    smtp.probe().await.map_err(|e| format!("SMTP: {e}"))?;
    Ok(format!(
        "IMAP {} logged in, {} holds {} mails ({}); SMTP {} accepted the login",
        config.imap.host,
        config.mailbox(),
        mailbox.exists,
        if idle { "IDLE" } else { "no IDLE: polled" },
        config.smtp.host,
    ))
}

#[async_trait]
impl Channel for EmailChannel {
    fn name(&self) -> &str {
        &self.inner.name
    }

    fn limits(&self) -> Limits {
        Limits {
            max_message_len: MAX_MESSAGE_CHARS,
            length_unit: LengthUnit::Chars,
            min_edit_interval: Duration::from_secs(1),
            rate_per_window: 30,
            rate_window: Duration::from_secs(60),
            supports_buttons: true,
            delivery: AnswerDelivery::Whole,
        }
    }

    async fn start(
        &self,
        sink: Arc<dyn EventSink>,
        shutdown: CancellationToken,
    ) -> Result<(), ChannelError> {
        crate::receive::run(Arc::clone(&self.inner), sink, shutdown).await
    }

    /// One IMAP loop per mailbox: two replicas reading it would race on the cursor.
    fn leader_role(&self) -> Option<String> {
        Some(format!("email:{}", self.inner.name))
    }

    async fn send(
        &self,
        key: &ConversationKey,
        msg: &Outbound,
    ) -> Result<MessageRef, ChannelError> {
        let inner = &self.inner;
        let thread_key = thread_key(key);
        let thread = inner.state.thread(&thread_key);
        let files = inner
            .files
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key)
            .unwrap_or_default();
        let id = inner.smtp.new_id();
        let mail = inner.smtp.compose(
            &key.chat,
            thread.as_ref(),
            &id,
            &msg.text,
            &msg.buttons,
            &files,
        )?;
        if let Err(err) = inner.smtp.send(mail).await {
            if let ChannelError::Fatal(why) = &err {
                tracing::error!(channel = %inner.name, key = %key, "{why}; the answer is not retried");
                inner.health.refused(why.clone());
            } else if !files.is_empty() {
                // Kept for the retry.
                inner
                    .files
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(key.clone(), files);
            }
            return Err(err);
        }
        let choices = msg
            .buttons
            .iter()
            .map(|b| Choice {
                label: b.label.clone(),
                payload: b.payload.clone(),
            })
            .collect();
        if let Err(err) = inner.state.sent(&thread_key, &id, choices) {
            tracing::warn!(channel = %inner.name, error = %err, "could not record a sent mail; a reply to it may start a new thread");
        }
        Ok(MessageRef::new(id))
    }

    /// A mail cannot be changed once sent: an edit (a decided prompt) sends nothing.
    async fn edit(
        &self,
        _key: &ConversationKey,
        _msg_ref: &MessageRef,
        _msg: &Outbound,
    ) -> Result<(), ChannelError> {
        Ok(())
    }

    /// Intermediate text is not mailed: the answer goes out whole when the turn is done.
    async fn draft(
        &self,
        _key: &ConversationKey,
        _draft_id: u64,
        _msg: &Outbound,
    ) -> Result<bool, ChannelError> {
        Ok(true)
    }

    /// A sent mail cannot be taken back.
    async fn delete(
        &self,
        _key: &ConversationKey,
        _msg_ref: &MessageRef,
    ) -> Result<(), ChannelError> {
        Ok(())
    }

    fn max_attachment_bytes(&self) -> u64 {
        self.inner.config.max_attachment_bytes
    }

    async fn download(&self, file: &Attachment, max_bytes: u64) -> Result<Vec<u8>, FileError> {
        if file.size.is_some_and(|s| s > max_bytes) {
            return Err(FileError::TooLarge { limit: max_bytes });
        }
        if file.id.len() != 64 || !file.id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(FileError::Gone("not a file this channel kept".into()));
        }
        let path = self.inner.state.files().join(&file.id);
        let bytes = tokio::fs::read(&path)
            .await
            .map_err(|e| FileError::Gone(e.to_string()))?;
        if bytes.len() as u64 > max_bytes {
            return Err(FileError::TooLarge { limit: max_bytes });
        }
        Ok(bytes)
    }

    /// Files are attached to the turn's answer, which follows.
    async fn send_file(
        &self,
        key: &ConversationKey,
        file: &OutboundFile,
    ) -> Result<MessageRef, FileError> {
        let mut files = self
            .inner
            .files
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let list = files.entry(key.clone()).or_default();
        list.push(file.clone());
        Ok(MessageRef::new(format!("attached-{}", list.len())))
    }

    fn health(&self) -> Health {
        self.inner.health.health()
    }
}
