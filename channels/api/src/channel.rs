//! The `Channel` trait: the one seam between the core and a chat platform. Adapters receive
//! platform events, hand them to an [`EventSink`] (which stores them durably) and only then
//! acknowledge them to the platform; the core calls back through `send`/`edit`/… to answer.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::attach::{Attachment, DEFAULT_MAX_ATTACHMENT_BYTES, FileError, OutboundFile, VoiceNote};
use crate::split::LengthUnit;
use crate::types::{ButtonPress, ChannelEvent, ConversationKey, MessageRef, Outbound};

/// What a platform allows, so the core can split, throttle and pick a transport.
#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    /// Longest message the platform accepts, in `length_unit`s of rendered text.
    pub max_message_len: usize,
    /// How the platform counts length (Telegram counts UTF-16 code units).
    pub length_unit: LengthUnit,
    /// Shortest gap between two edits of one message the platform tolerates.
    pub min_edit_interval: Duration,
    /// Sends + edits per chat the platform allows in `rate_window`.
    pub rate_per_window: u32,
    /// The window `rate_per_window` is counted over.
    pub rate_window: Duration,
    /// Whether `send` can attach buttons.
    pub supports_buttons: bool,
    /// How an answer reaches the chat: edited as it grows, sent in finished pieces, or sent
    /// whole at the end.
    pub delivery: AnswerDelivery,
}

/// How an answer reaches a platform, given what it lets a sent message do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerDelivery {
    /// One message edited as the answer grows; `max_edits` caps the edits one message takes
    /// (Signal): the draft stops updating one edit short of the cap, keeping the last for the
    /// final answer; with none left the answer is posted anew and the draft deleted.
    Edits {
        /// Most edits one message takes; `None` for no cap.
        max_edits: Option<u32>,
    },
    /// No edits: each final paragraph run goes out as its own message once about
    /// `min_chunk` characters wait, or at the turn's end; never inside a code fence
    /// (WhatsApp).
    Chunks {
        /// Characters of finished paragraphs that must wait before a piece goes out.
        min_chunk: usize,
    },
    /// No edits and no pieces: one message when the turn ends (email).
    Whole,
}

impl Default for AnswerDelivery {
    fn default() -> Self {
        Self::Edits { max_edits: None }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_message_len: 4000,
            length_unit: LengthUnit::Chars,
            min_edit_interval: Duration::from_millis(500),
            rate_per_window: 20,
            rate_window: Duration::from_secs(60),
            supports_buttons: false,
            delivery: AnswerDelivery::default(),
        }
    }
}

/// How a platform call failed, in terms the core can act on without knowing the platform.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ChannelError {
    /// The platform asked us to slow down; try again after this long.
    #[error("rate limited, retry after {retry_after:?}")]
    RateLimited {
        /// How long the platform asked us to wait.
        retry_after: Duration,
    },
    /// The rendered text is longer than the platform accepts.
    #[error("message too long")]
    TooLong,
    /// The message or chat is gone (deleted, bot removed).
    #[error("not found: {0}")]
    NotFound(String),
    /// A network error or 5xx; retrying later may work.
    #[error("transient platform error: {0}")]
    Transient(String),
    /// Retrying will not help (bad token, forbidden, malformed request).
    #[error("platform refused: {0}")]
    Fatal(String),
}

/// What happened to an event handed to the sink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// Stored durably for the first time; it will be processed.
    Stored,
    /// Seen before (a platform redelivery); dropped.
    Duplicate,
    /// Not let in (access refused, or answered with a pairing code); acknowledged and
    /// never stored.
    Refused,
}

/// Why the sink could not take an event. The channel must not acknowledge it, so the
/// platform redelivers it later.
#[derive(Debug, thiserror::Error)]
#[error("could not store event: {0}")]
pub struct SinkError(pub String);

/// Where a channel hands its normalized events. Implemented by the core's inbox.
#[async_trait]
pub trait EventSink: Send + Sync {
    /// Store the event durably (deduplicated by channel + event id) before returning.
    /// Only after `Ok` may the channel acknowledge the event to its platform.
    async fn deliver(&self, event: ChannelEvent) -> Result<Delivery, SinkError>;

    /// Whether conversation `key` has begun: an event of it was stored and let in before
    /// (it is answered, or waiting to be). A channel asks this before delivering a message
    /// that does not address the bot but may continue a conversation it takes part in (a
    /// reply in a Slack thread the bot was mentioned in). The default knows nothing.
    async fn knows_conversation(&self, _key: &ConversationKey) -> Result<bool, SinkError> {
        Ok(false)
    }

    /// Where a leader-only receive loop resumes (Telegram's next update offset), as the
    /// previous leader confirmed it with [`save_cursor`](Self::save_cursor); `None` when no
    /// position is known (a single process, or the first leader ever).
    async fn cursor(&self) -> Result<Option<i64>, SinkError> {
        Ok(None)
    }

    /// Record the receive loop's position after the events before it were delivered. It is
    /// written only while this replica still leads; an `Err` means it no longer does (or
    /// the database is away): the loop must not confirm the batch to its platform.
    async fn save_cursor(&self, _cursor: i64) -> Result<(), SinkError> {
        Ok(())
    }

    /// The platform says another receiver is running (Telegram's 409 Conflict): a replica
    /// gives up its leadership so the loop stops here. A single process ignores it.
    fn step_down(&self, _why: &str) {}
}

/// A channel's own view of whether it can receive, for `/readyz`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Health {
    /// True when the channel is receiving events.
    pub ready: bool,
    /// Human-readable state (e.g. "polling", "409 Conflict: another poller is running").
    pub detail: String,
    /// Last time the channel proved it can receive.
    pub last_ok: Option<SystemTime>,
}

impl Health {
    /// A channel that is receiving.
    pub fn ready(detail: impl Into<String>) -> Self {
        Self {
            ready: true,
            detail: detail.into(),
            last_ok: Some(SystemTime::now()),
        }
    }
}

/// One configured chat platform instance.
#[async_trait]
pub trait Channel: Send + Sync + 'static {
    /// The configured instance name; also `ConversationKey::channel` of its events.
    fn name(&self) -> &str;

    /// The platform's limits.
    fn limits(&self) -> Limits;

    /// Limits for one conversation, where they differ by chat (Telegram groups allow
    /// 20 messages a minute, private chats about one a second). Defaults to [`Channel::limits`].
    fn limits_for(&self, _key: &ConversationKey) -> Limits {
        self.limits()
    }

    /// Run the receive loop (long polling, gateway socket) until `shutdown` fires.
    /// Webhook-only channels return at once and serve [`Channel::routes`] instead.
    async fn start(
        &self,
        sink: Arc<dyn EventSink>,
        shutdown: CancellationToken,
    ) -> Result<(), ChannelError>;

    /// The leader role this channel's [`start`](Self::start) needs, when it must run on
    /// exactly one replica (a long poll, a gateway socket, registering a webhook):
    /// `Some("telegram:<name>")`. With several replicas only the role's leader runs `start`;
    /// `None` (the default) runs it everywhere.
    fn leader_role(&self) -> Option<String> {
        None
    }

    /// Whether this process reaches `key`'s chat directly. With several replicas a
    /// conversation's events are left, for one lease TTL, to the replica that does: a web
    /// chat's tab holds its socket open on one replica only, and a turn run elsewhere would
    /// update a transcript the tab does not see until it reconnects. Defaults to `true`
    /// (a platform's API is reached the same from every replica).
    fn reaches(&self, _key: &ConversationKey) -> bool {
        true
    }

    /// Webhook routes to mount on the shared HTTP server, if any.
    fn routes(&self, _sink: Arc<dyn EventSink>) -> Option<axum::Router> {
        None
    }

    /// Routes that take large bodies (file uploads), mounted on the shared HTTP server
    /// outside its request-body limit: each must enforce its own (and answer 413 above it).
    /// The default has none.
    fn upload_routes(&self, _sink: Arc<dyn EventSink>) -> Option<axum::Router> {
        None
    }

    /// Post a new message.
    async fn send(&self, key: &ConversationKey, msg: &Outbound)
    -> Result<MessageRef, ChannelError>;

    /// Replace the text (and buttons) of a message the bot posted.
    async fn edit(
        &self,
        key: &ConversationKey,
        msg_ref: &MessageRef,
        msg: &Outbound,
    ) -> Result<(), ChannelError>;

    /// Show `msg` as an ephemeral streaming draft identified by `draft_id` (Telegram's
    /// `sendMessageDraft`). `Ok(false)` means this channel or chat has no drafts: the caller
    /// streams by editing a real message instead. A draft is never the final answer, which
    /// is always posted with [`Channel::send`].
    async fn draft(
        &self,
        _key: &ConversationKey,
        _draft_id: u64,
        _msg: &Outbound,
    ) -> Result<bool, ChannelError> {
        Ok(false)
    }

    /// Delete a message the bot posted.
    async fn delete(&self, key: &ConversationKey, msg_ref: &MessageRef)
    -> Result<(), ChannelError>;

    /// Show "typing…" for a few seconds.
    async fn typing(&self, _key: &ConversationKey) -> Result<(), ChannelError> {
        Ok(())
    }

    /// Acknowledge a button press with a short notice ("Approved", "Expired").
    async fn answer_button(&self, _press: &ButtonPress, _text: &str) -> Result<(), ChannelError> {
        Ok(())
    }

    /// Answer a press so that only the presser sees it, leaving the message and its buttons
    /// for the person they are meant for (a refused approval). The default is
    /// [`answer_button`](Self::answer_button), which is already private on Telegram (a
    /// callback answer) and on Discord for texts starting with "Not yours" (ephemeral).
    async fn answer_privately(&self, press: &ButtonPress, text: &str) -> Result<(), ChannelError> {
        self.answer_button(press, text).await
    }

    /// Largest attachment (in bytes) the core downloads from this channel
    /// (`max_attachment_bytes` in its settings).
    fn max_attachment_bytes(&self) -> u64 {
        DEFAULT_MAX_ATTACHMENT_BYTES
    }

    /// Fetch the bytes of a file a person attached, refusing it above `max_bytes`. Called by
    /// the core after the event was stored, never while the platform waits for an
    /// acknowledgement. The default moves no files.
    async fn download(&self, _file: &Attachment, _max_bytes: u64) -> Result<Vec<u8>, FileError> {
        Err(FileError::Unsupported)
    }

    /// Post `file` in conversation `key` through the platform's upload API. The default
    /// moves no files.
    async fn send_file(
        &self,
        _key: &ConversationKey,
        _file: &OutboundFile,
    ) -> Result<MessageRef, FileError> {
        Err(FileError::Unsupported)
    }

    /// Post `voice` in conversation `key` as the platform's own voice note (a player with
    /// its duration, not a file to download). The default posts nothing: the text answer,
    /// sent anyway, stands alone.
    async fn send_voice(
        &self,
        _key: &ConversationKey,
        _voice: &VoiceNote,
    ) -> Result<MessageRef, FileError> {
        Err(FileError::Unsupported)
    }

    /// Whether the channel can currently receive.
    fn health(&self) -> Health {
        Health::ready("ok")
    }

    /// Messages the platform refused for good since start, by reason (WhatsApp's failed
    /// delivery statuses, a message outside its 24-hour window): exported as
    /// `switchboard_channel_undelivered{channel, reason}`. Most platforms report none.
    fn undelivered(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}
