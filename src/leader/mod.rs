//! Leader leases: receive loops that must run on exactly one replica (the Telegram long
//! poll or webhook registration, the Discord gateway with all its shards) run only on the
//! holder of their role's lease in the `leaders` table. A channel says it needs one through
//! [`Channel::leader_role`]; [`Leaders::wrap`] puts it behind [`LedChannel`], whose `start`
//! is the election loop (`elect.rs`) and whose health reads "standby" on other replicas.
//! Outbound calls and webhook routes are untouched: every replica sends and accepts.
//!
//! On SQLite (one process) there is nothing to elect: channels are not wrapped and behave
//! exactly as without this module.
//!
//! Layout: `lease.rs` (the SQL), `elect.rs` (standby → lead → release), `sink.rs` (the
//! sink a leader's loop gets: cursor and step-down under its term), this file (wiring and
//! the wrapper channel).

mod elect;
mod lease;
mod sink;
#[cfg(test)]
mod tests;

use std::str::FromStr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use switchboard_channel::{
    ButtonPress, Channel, ChannelError, ConversationKey, EventSink, Health, Limits, MessageRef,
    Outbound,
};
use tokio::sync::{Notify, OnceCell};
use tokio_util::sync::CancellationToken;

use lease::Lease;

/// How long a leader's lease lasts and how often it is renewed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaderSettings {
    /// A lease not renewed for this long is taken over by a standby.
    pub ttl: Duration,
    /// How often the leader renews, and a standby looks for a free lease.
    pub renew_every: Duration,
}

impl Default for LeaderSettings {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(15),
            renew_every: Duration::from_secs(5),
        }
    }
}

impl LeaderSettings {
    /// How long after sending its last successful renewal a leader trusts its lease: a
    /// fifth of the TTL short of the database's expiry, so it stops before anyone takes over.
    fn trust(&self) -> Duration {
        self.ttl.saturating_sub(self.ttl / 5)
    }
}

/// Where this replica stands for one role.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Role {
    /// Not leading; `holder` leads, when known.
    Standby {
        /// The leading replica's instance id.
        holder: Option<String>,
    },
    /// Leading under this term.
    Leading {
        /// The lease's term.
        term: i64,
    },
}

/// What every elected channel of one gateway shares.
struct Elected {
    /// The PostgreSQL URL the `leaders` table lives in.
    url: String,
    /// This replica's instance id, known once the gateway resolved it (at start).
    holder: std::sync::OnceLock<String>,
    settings: LeaderSettings,
    /// A small pool of its own, opened at the first start (leases must renew even when the
    /// store's pool is saturated by turns).
    pool: OnceCell<PgPool>,
    /// Woken when any replica announces a released lease (`NOTIFY switchboard_leaders`).
    released: Notify,
    /// Whether the release listener runs.
    listening: OnceCell<()>,
}

/// Wraps channels that need a leader, on PostgreSQL; a no-op on SQLite.
#[derive(Clone)]
pub struct Leaders(Option<Arc<Elected>>);

impl Leaders {
    /// Leaders for a gateway on `database_url`: elected on PostgreSQL, none on SQLite (the
    /// one process always leads).
    pub fn new(database_url: &str, settings: LeaderSettings) -> Self {
        let postgres =
            database_url.starts_with("postgres://") || database_url.starts_with("postgresql://");
        Self(postgres.then(|| {
            Arc::new(Elected {
                url: database_url.to_owned(),
                holder: std::sync::OnceLock::new(),
                settings,
                pool: OnceCell::new(),
                released: Notify::new(),
                listening: OnceCell::new(),
            })
        }))
    }

    /// This replica's resolved instance id, the holder its leases are taken as (set once,
    /// before the channels start).
    pub fn set_holder(&self, holder: &str) {
        if let Some(elected) = &self.0 {
            let _ = elected.holder.set(holder.to_owned());
        }
    }

    /// `channel`, run under its leader role when it has one and replicas are possible.
    pub fn wrap(&self, channel: Arc<dyn Channel>) -> Arc<dyn Channel> {
        match (&self.0, channel.leader_role()) {
            (Some(elected), Some(role)) => Arc::new(LedChannel {
                inner: channel,
                lease_role: role,
                elected: Arc::clone(elected),
                role: Arc::new(Mutex::new(Role::Standby { holder: None })),
            }),
            _ => channel,
        }
    }
}

impl Elected {
    async fn pool(&self) -> Result<PgPool, ChannelError> {
        self.pool
            .get_or_try_init(|| async {
                let ms = (self.settings.ttl / 3).as_millis().max(200).to_string();
                let options = PgConnectOptions::from_str(&self.url)
                    .map_err(|e| ChannelError::Fatal(format!("database_url: {e}")))?
                    .options([("statement_timeout", ms)]);
                Ok(PgPoolOptions::new()
                    .max_connections(3)
                    .acquire_timeout(self.settings.renew_every)
                    .connect_lazy_with(options))
            })
            .await
            .cloned()
    }

    /// Listen for released leases (once per gateway) until `stop`; a lost connection is
    /// reopened by sqlx, and standbys also look on their own interval.
    async fn listen(self: &Arc<Self>, pool: &PgPool, stop: &CancellationToken) {
        let this = Arc::clone(self);
        let (pool, stop) = (pool.clone(), stop.clone());
        self.listening
            .get_or_init(|| async move {
                tokio::spawn(async move {
                    let Ok(mut listener) = PgListener::connect_with(&pool).await else {
                        return;
                    };
                    if listener.listen("switchboard_leaders").await.is_err() {
                        return;
                    }
                    loop {
                        tokio::select! {
                            () = stop.cancelled() => return,
                            got = listener.recv() => if got.is_ok() { this.released.notify_waiters() },
                        }
                    }
                });
            })
            .await;
    }
}

/// A channel whose receive loop runs only while this replica holds its leader role.
pub struct LedChannel {
    inner: Arc<dyn Channel>,
    /// The role's name (`telegram:<channel>`).
    lease_role: String,
    elected: Arc<Elected>,
    /// Where this replica stands, for `health`.
    role: Arc<Mutex<Role>>,
}

#[async_trait]
impl Channel for LedChannel {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn limits(&self) -> Limits {
        self.inner.limits()
    }

    fn limits_for(&self, key: &ConversationKey) -> Limits {
        self.inner.limits_for(key)
    }

    fn leader_role(&self) -> Option<String> {
        Some(self.lease_role.clone())
    }

    async fn start(
        &self,
        sink: Arc<dyn EventSink>,
        shutdown: CancellationToken,
    ) -> Result<(), ChannelError> {
        let pool = self.elected.pool().await?;
        self.elected.listen(&pool, &shutdown).await;
        let lease = Lease::new(
            pool,
            self.lease_role.clone(),
            self.elected
                .holder
                .get()
                .cloned()
                .unwrap_or_else(|| "default".to_owned()),
            self.elected.settings.ttl,
        );
        elect::run(
            Arc::clone(&self.inner),
            Arc::clone(&self.elected),
            lease,
            Arc::clone(&self.role),
            sink,
            shutdown,
        )
        .await
    }

    fn routes(&self, sink: Arc<dyn EventSink>) -> Option<axum::Router> {
        self.inner.routes(sink)
    }

    fn upload_routes(&self, sink: Arc<dyn EventSink>) -> Option<axum::Router> {
        self.inner.upload_routes(sink)
    }

    async fn send(
        &self,
        key: &ConversationKey,
        msg: &Outbound,
    ) -> Result<MessageRef, ChannelError> {
        self.inner.send(key, msg).await
    }

    async fn edit(
        &self,
        key: &ConversationKey,
        msg_ref: &MessageRef,
        msg: &Outbound,
    ) -> Result<(), ChannelError> {
        self.inner.edit(key, msg_ref, msg).await
    }

    async fn draft(
        &self,
        key: &ConversationKey,
        draft_id: u64,
        msg: &Outbound,
    ) -> Result<bool, ChannelError> {
        self.inner.draft(key, draft_id, msg).await
    }

    async fn delete(
        &self,
        key: &ConversationKey,
        msg_ref: &MessageRef,
    ) -> Result<(), ChannelError> {
        self.inner.delete(key, msg_ref).await
    }

    async fn typing(&self, key: &ConversationKey) -> Result<(), ChannelError> {
        self.inner.typing(key).await
    }

    async fn answer_button(&self, press: &ButtonPress, text: &str) -> Result<(), ChannelError> {
        self.inner.answer_button(press, text).await
    }

    async fn answer_privately(&self, press: &ButtonPress, text: &str) -> Result<(), ChannelError> {
        self.inner.answer_privately(press, text).await
    }

    fn max_attachment_bytes(&self) -> u64 {
        self.inner.max_attachment_bytes()
    }

    async fn download(
        &self,
        file: &switchboard_channel::Attachment,
        max_bytes: u64,
    ) -> Result<Vec<u8>, switchboard_channel::FileError> {
        self.inner.download(file, max_bytes).await
    }

    async fn send_file(
        &self,
        key: &ConversationKey,
        file: &switchboard_channel::OutboundFile,
    ) -> Result<MessageRef, switchboard_channel::FileError> {
        self.inner.send_file(key, file).await
    }

    fn undelivered(&self) -> Vec<(&'static str, u64)> {
        self.inner.undelivered()
    }

    /// The channel's own health while leading; on a standby replica, ready (it serves
    /// webhooks and sends) with a detail naming the leader.
    fn health(&self) -> Health {
        let role = self
            .role
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match role {
            Role::Leading { .. } => self.inner.health(),
            Role::Standby { holder } => Health {
                ready: true,
                detail: match holder {
                    Some(holder) => format!("standby: {} is led by {holder}", self.lease_role),
                    None => format!("standby: {} has no leader yet", self.lease_role),
                },
                last_ok: None,
            },
        }
    }
}
