//! `FakeDiscord`: the handle a test holds. It starts the fake (REST + gateway on one port),
//! injects what users do (messages, button presses), breaks things on purpose (429s, dropped
//! sockets, a gateway that refuses connections) and reads back what the bot did.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use serde_json::{Value, json};
use tokio::time::Instant;
use tokio_util::sync::DropGuard;

use super::FAKE_TOKEN;
use super::gateway::{dispatch, upgrade};
use super::payloads::{ButtonClick, FakeUser, IncomingMessage, message_json};
use super::rest::{handle, shape};
use super::world::{
    DiscordCall, Failure, FakeMessage, GatewayOp, Interaction, InteractionCallback, Outgoing,
    Shared, World,
};

/// Discord's own heartbeat interval, the fake's default.
const DEFAULT_HEARTBEAT: Duration = Duration::from_millis(41_250);

/// A fake Discord (REST under `/api/v10`, gateway at `/gateway`) on 127.0.0.1; stops when dropped.
pub struct FakeDiscord {
    addr: SocketAddr,
    shared: Arc<Shared>,
    _stop: DropGuard,
}

impl FakeDiscord {
    /// Start a fake accepting [`FAKE_TOKEN`] with Discord's heartbeat interval.
    pub async fn start() -> Self {
        Self::start_with(FAKE_TOKEN, DEFAULT_HEARTBEAT).await
    }

    /// Start a fake accepting `token`, announcing `heartbeat_interval` in HELLO.
    pub async fn start_with(token: &str, heartbeat_interval: Duration) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let shared = Arc::new(Shared {
            token: token.to_owned(),
            heartbeat_interval,
            ws_url: format!("ws://{addr}/gateway"),
            world: Mutex::new(World::default()),
        });
        let app = Router::new()
            .route("/gateway", get(upgrade))
            .route("/attachments/{channel}/{id}/{name}", get(super::files::cdn))
            .fallback(handle)
            .with_state(Arc::clone(&shared));
        let stop = crate::serve_until_dropped(listener, app);
        Self {
            addr,
            shared,
            _stop: stop,
        }
    }

    /// The host to configure as `api_url` (`http://127.0.0.1:<port>`).
    pub fn api_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Store a file a user attaches; returns the attachment object for
    /// [`IncomingMessage::with_attachment`](super::IncomingMessage::with_attachment).
    pub fn add_file(&self, name: &str, content_type: &str, bytes: &[u8]) -> serde_json::Value {
        super::files::add(&self.shared, &self.api_url(), name, content_type, bytes)
    }

    /// Files the bot posted with messages, oldest first.
    pub fn sent_files(&self) -> Vec<super::files::SentFile> {
        self.world().sent_files.clone()
    }

    /// Requests to the attachment CDN so far.
    pub fn cdn_downloads(&self) -> usize {
        self.world().cdn_downloads
    }

    fn world(&self) -> std::sync::MutexGuard<'_, World> {
        self.shared.world()
    }

    /// Wait until `check` gives `Some`, and return what it gave; panic after `timeout`.
    pub async fn wait_until<T>(
        &self,
        what: &str,
        timeout: Duration,
        check: impl Fn(&Self) -> Option<T>,
    ) -> T {
        crate::eventually(timeout, what, async || check(self).ok_or(())).await
    }

    // --- REST ---

    /// Every REST call so far, in arrival order.
    pub fn calls(&self) -> Vec<DiscordCall> {
        self.world().calls.clone()
    }

    /// The calls with `method` whose path (after `/api/v10`) starts with `prefix`.
    pub fn calls_to(&self, method: &str, prefix: &str) -> Vec<DiscordCall> {
        let world = self.world();
        let matches = |c: &&DiscordCall| c.method == method && c.path.starts_with(prefix);
        world.calls.iter().filter(matches).cloned().collect()
    }

    /// Wait for at least `n` calls matching [`FakeDiscord::calls_to`].
    pub async fn wait_for_calls(
        &self,
        method: &str,
        prefix: &str,
        n: usize,
        timeout: Duration,
    ) -> Vec<DiscordCall> {
        let what = format!("{n} {method} {prefix} calls");
        self.wait_until(&what, timeout, |fake| {
            let calls = fake.calls_to(method, prefix);
            (calls.len() >= n).then_some(calls)
        })
        .await
    }

    /// Answer the next `n` REST calls with `failure`.
    pub fn fail_next(&self, n: usize, failure: Failure) {
        self.world()
            .failures
            .extend(std::iter::repeat_n(failure, n));
    }

    /// The messages now in `channel`, oldest first.
    pub fn messages(&self, channel: &str) -> Vec<FakeMessage> {
        let world = self.world();
        let messages = world.messages.get(channel);
        messages
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Webhook follow-ups and ephemeral interaction replies, oldest first.
    pub fn followups(&self) -> Vec<FakeMessage> {
        self.world().followups.clone()
    }

    /// Make `GET /channels/{id}` know a guild text channel.
    pub fn add_text_channel(&self, guild: &str, id: &str) {
        let channel =
            json!({"id": id, "type": 0, "guild_id": guild, "name": format!("channel-{id}")});
        self.world().channels.insert(id.to_owned(), channel);
    }

    /// Make `GET /channels/{id}` know a public thread under `parent`.
    pub fn add_thread(&self, guild: &str, parent: &str, id: &str) {
        let thread = json!({"id": id, "type": 11, "guild_id": guild, "parent_id": parent, "name": format!("thread-{id}")});
        self.world().channels.insert(id.to_owned(), thread);
    }

    /// Every interaction callback so far.
    pub fn callbacks(&self) -> Vec<InteractionCallback> {
        self.world().callbacks.clone()
    }

    /// Wait for at least `n` interaction callbacks.
    pub async fn wait_for_callbacks(
        &self,
        n: usize,
        timeout: Duration,
    ) -> Vec<InteractionCallback> {
        self.wait_until(&format!("{n} interaction callbacks"), timeout, |fake| {
            let callbacks = fake.callbacks();
            (callbacks.len() >= n).then_some(callbacks)
        })
        .await
    }

    // --- gateway ---

    /// Wait until a client has identified (or resumed) and is connected.
    pub async fn wait_for_session(&self, timeout: Duration) {
        self.wait_until("a connected gateway session", timeout, |fake| {
            fake.connected().then_some(())
        })
        .await;
    }

    /// Whether a client is connected to a live session.
    pub fn connected(&self) -> bool {
        let world = self.world();
        world.gateway.session.is_some() && world.gateway.conn.is_some()
    }

    /// Every frame clients sent, in order.
    pub fn gateway_ops(&self) -> Vec<GatewayOp> {
        self.world().gateway.ops.clone()
    }

    /// The `d` of every frame with opcode `op` (2 identify, 6 resume, 1 heartbeat).
    pub fn ops(&self, op: u64) -> Vec<Value> {
        let world = self.world();
        world
            .gateway
            .ops
            .iter()
            .filter(|o| o.op == op)
            .map(|o| o.d.clone())
            .collect()
    }

    /// The query string of every gateway connection attempt (`v=10`, …).
    pub fn connection_queries(&self) -> Vec<String> {
        self.world().gateway.connects.clone()
    }

    /// Dispatch event `t` with `d`; its sequence number, or `None` before the first READY
    /// (it is then sent right after READY).
    pub fn dispatch(&self, t: &str, d: Value) -> Option<u64> {
        dispatch(&mut self.world().gateway, t, d)
    }

    /// A user writes `message`: MESSAGE_CREATE with a fresh id, which is returned.
    pub fn send_message(&self, message: &IncomingMessage) -> String {
        let id = self.world().next_snowflake().to_string();
        self.dispatch("MESSAGE_CREATE", message.json(&id));
        id
    }

    /// Post a message as the bot (as if sent earlier), e.g. one carrying buttons to press.
    pub fn post_as_bot(&self, channel: &str, content: &str, components: Value) -> String {
        let mut world = self.world();
        let id = world.next_snowflake();
        let message = FakeMessage {
            id: id.to_string(),
            channel_id: channel.to_owned(),
            content: content.to_owned(),
            components,
            allowed_mentions: Value::Null,
            flags: 0,
            edits: 0,
        };
        world
            .messages
            .entry(channel.to_owned())
            .or_default()
            .insert(id, message);
        id.to_string()
    }

    /// A user presses a button: INTERACTION_CREATE with a fresh id and token; the id is
    /// returned. The pressed message is taken from the fake's store when it is there.
    pub fn press_button(&self, click: &ButtonClick) -> String {
        let mut world = self.world();
        let id = world.next_snowflake().to_string();
        let token = format!("fake-interaction-token-{id}");
        let stored = click
            .message_id
            .parse::<u64>()
            .ok()
            .and_then(|m| world.messages.get(&click.channel_id)?.get(&m));
        let message = match stored {
            Some(message) => shape(message),
            None => message_json(
                &click.message_id,
                &click.channel_id,
                None,
                &FakeUser::the_bot(),
                "earlier",
            ),
        };
        let interaction = Interaction {
            token: token.clone(),
            channel_id: click.channel_id.clone(),
            message_id: click.message_id.clone(),
            dispatched_at: Instant::now(),
            acknowledged: false,
        };
        world.interactions.insert(id.clone(), interaction);
        dispatch(
            &mut world.gateway,
            "INTERACTION_CREATE",
            click.json(&id, &token, message),
        );
        id
    }

    /// Drop the connected client's socket without a close frame (a network failure).
    pub fn drop_connection(&self) {
        if let Some((_, tx)) = self.world().gateway.conn.take() {
            let _ = tx.send(Outgoing::Drop);
        }
    }

    /// While `down`, refuse gateway connections with 503 (REST keeps working).
    pub fn set_gateway_down(&self, down: bool) {
        self.world().gateway.down = down;
    }
}

impl Failure {
    /// A 429 asking to wait `secs` seconds.
    pub fn rate_limited(secs: f64) -> Self {
        Self::RateLimited { retry_after: secs }
    }
}
