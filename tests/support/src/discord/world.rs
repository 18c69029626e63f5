//! The fake Discord's state, shared by its REST routes, its gateway connections and the
//! `FakeDiscord` handle tests hold: recorded calls, stored messages, pending interactions,
//! the gateway session with its sequence log, and scripted failures.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// A scripted answer for the next REST calls, whatever their route.
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    /// HTTP 429 with `retry_after` (seconds) in the JSON body and `Retry-After` rounded up.
    RateLimited {
        /// Seconds to wait.
        retry_after: f64,
    },
    /// HTTP 502 with an HTML body, as a broken proxy would answer.
    ServerError,
    /// HTTP 401 `{"message": "401: Unauthorized", "code": 0}`.
    Unauthorized,
    /// HTTP 403 with code 50013 Missing Permissions.
    Forbidden,
    /// Any other Discord JSON error.
    Error {
        /// HTTP status.
        status: u16,
        /// Discord error code.
        code: i64,
        /// Discord error message.
        message: String,
    },
}

/// One recorded REST call.
#[derive(Clone, Debug)]
pub struct DiscordCall {
    /// `GET`, `POST`, `PATCH`, `DELETE`.
    pub method: String,
    /// The path after `/api/v10`, e.g. `/channels/1/messages`.
    pub path: String,
    /// The JSON body (`Null` when there was none).
    pub body: Value,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
    /// When it arrived (tokio time).
    pub at: Instant,
    /// The HTTP status the fake answered.
    pub status: u16,
}

/// A message as it currently stands in the fake.
#[derive(Clone, Debug, PartialEq)]
pub struct FakeMessage {
    /// Snowflake id.
    pub id: String,
    /// The channel it is in.
    pub channel_id: String,
    /// Current text.
    pub content: String,
    /// Current action rows (`[]` when none).
    pub components: Value,
    /// The `allowed_mentions` of the last create or edit (`Null` when not sent).
    pub allowed_mentions: Value,
    /// Message flags (4: embeds suppressed, 64: ephemeral), as last created or edited.
    pub flags: u64,
    /// How many times it was edited.
    pub edits: u32,
}

impl FakeMessage {
    /// Whether Discord would show link embeds under it (`SUPPRESS_EMBEDS` not set).
    pub fn shows_embeds(&self) -> bool {
        self.flags & 4 == 0
    }
}

/// One interaction callback (`POST /interactions/{id}/{token}/callback`) as received.
#[derive(Clone, Debug)]
pub struct InteractionCallback {
    /// The interaction id.
    pub interaction_id: String,
    /// Response type: 4 message, 6 deferred update, 7 update message, …
    pub kind: u64,
    /// The response's `data` (`Null` when none).
    pub data: Value,
    /// Time from the INTERACTION_CREATE dispatch to this callback.
    pub after_dispatch: Duration,
    /// The HTTP status the fake answered (204 when accepted).
    pub status: u16,
}

/// One frame a client sent on the gateway.
#[derive(Clone, Debug)]
pub struct GatewayOp {
    /// Opcode: 1 heartbeat, 2 identify, 6 resume, …
    pub op: u64,
    /// Its `d`.
    pub d: Value,
    /// When it arrived.
    pub at: Instant,
}

/// A dispatched interaction, until it is answered and after.
pub(crate) struct Interaction {
    pub token: String,
    pub channel_id: String,
    pub message_id: String,
    pub dispatched_at: Instant,
    pub acknowledged: bool,
}

/// What a gateway connection task is told to do.
pub(crate) enum Outgoing {
    /// Send this text frame.
    Frame(String),
    /// Send a close frame with this code, then end.
    Close(u16),
    /// End without a close frame: the TCP connection just drops.
    Drop,
}

/// The gateway session: what RESUME continues and what its sequence log replays.
pub(crate) struct Session {
    pub id: String,
    pub seq: u64,
    pub log: Vec<(u64, String)>,
}

#[derive(Default)]
pub(crate) struct Gateway {
    pub session: Option<Session>,
    /// The connection that receives dispatches: its id and sender.
    pub conn: Option<(u64, mpsc::UnboundedSender<Outgoing>)>,
    pub next_conn: u64,
    pub sessions_started: u64,
    /// Refuse WebSocket upgrades with 503.
    pub down: bool,
    /// Dispatches injected before the first READY, sent right after it.
    pub pending: Vec<(String, Value)>,
    pub ops: Vec<GatewayOp>,
    /// The query string of every connection attempt.
    pub connects: Vec<String>,
}

#[derive(Default)]
pub(crate) struct World {
    pub calls: Vec<DiscordCall>,
    pub failures: VecDeque<Failure>,
    /// channel id → message id → message; ids grow, so map order is post order.
    pub messages: BTreeMap<String, BTreeMap<u64, FakeMessage>>,
    /// Channel objects `GET /channels/{id}` answers with.
    pub channels: HashMap<String, Value>,
    pub interactions: HashMap<String, Interaction>,
    pub callbacks: Vec<InteractionCallback>,
    /// Webhook follow-up messages (ephemeral ones have flag 64).
    pub followups: Vec<FakeMessage>,
    pub next_id: u64,
    pub gateway: Gateway,
    /// Attachment bytes the CDN serves, by attachment id.
    pub cdn: HashMap<String, Vec<u8>>,
    /// Requests to the CDN so far.
    pub cdn_downloads: usize,
    /// Files the bot posted with messages.
    pub sent_files: Vec<super::files::SentFile>,
}

impl World {
    /// A fresh snowflake.
    pub fn next_snowflake(&mut self) -> u64 {
        self.next_id += 1;
        1_300_000_000_000_000_000 + self.next_id
    }
}

pub(crate) struct Shared {
    pub token: String,
    pub heartbeat_interval: Duration,
    /// `ws://127.0.0.1:<port>/gateway`.
    pub ws_url: String,
    pub world: Mutex<World>,
}

impl Shared {
    pub fn world(&self) -> MutexGuard<'_, World> {
        self.world.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether an `Authorization` header carries the bot token.
    pub fn authorized(&self, header: Option<&str>) -> bool {
        header.and_then(|h| h.strip_prefix("Bot ")) == Some(self.token.as_str())
    }
}
