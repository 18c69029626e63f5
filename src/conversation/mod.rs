//! Conversation actors: one task per live `ConversationKey`, created on demand when the inbox
//! wakes it, running one turn at a time, and retiring after it has been idle. The actor's
//! queue is the durable inbox itself, so a full or lost wake-up never loses an event.

mod actor;
mod approval;
mod audit;
mod commands;
mod turn;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use dashmap::DashMap;
use switchboard_channel::{Channel, ChannelEvent, ConversationKey, Delivery, EventSink, SinkError};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::agent::{AgentLoop, ContextProvider, Tool};
use crate::config::MemoryConfig;
use crate::draft::DraftSettings;
use crate::governor::Governor;
use crate::ids::InboxKind;
use crate::memory::{Recall, memory_tools, scope_for};
use crate::metrics::Metrics;
use crate::policy::Policy;
use crate::provider::Provider;
use crate::scrub::Scrubber;
use crate::store::{Approval, Insert, Store, StoreError, now_ms};
use crate::tools::Toolbox;

pub use approval::{ApprovalButton, SYSTEM_USER, expiry_event, time_left};
pub use commands::Command;

/// Everything a turn needs, shared by all actors.
pub struct Deps {
    /// Durable state.
    pub store: Arc<dyn Store>,
    /// The LLM.
    pub provider: Arc<dyn Provider>,
    /// Built-in tools, made per conversation.
    pub toolbox: Toolbox,
    /// Tools added programmatically (`Gateway::tool`), offered in every conversation.
    pub extra_tools: Vec<Arc<dyn Tool>>,
    /// Context providers run before each turn.
    pub context: Vec<Arc<dyn ContextProvider>>,
    /// LLM round-trips per turn.
    pub max_iterations: usize,
    /// Native tool calling, or tools described in the prompt.
    pub native_tools: bool,
    /// Redacts credentials from tool output, chat and history.
    pub scrubber: Arc<Scrubber>,
    /// The policy gate every tool call passes.
    pub policy: Arc<Policy>,
    /// Per channel: user ids who may approve anything (besides the requester).
    pub approvers: BTreeMap<String, Vec<String>>,
    /// How long an approval waits.
    pub approval_timeout: Duration,
    /// New approvals, for the expiry scheduler.
    pub expiry: mpsc::UnboundedSender<Approval>,
    /// Prometheus metrics.
    pub metrics: Arc<Metrics>,
    /// `[memory]`.
    pub memory: MemoryConfig,
    /// Per-chat outbound budgets.
    pub governor: Arc<Governor>,
    /// Channels by instance name.
    pub channels: HashMap<String, Arc<dyn Channel>>,
    /// First message of every conversation.
    pub system_prompt: String,
    /// Stored messages loaded per turn.
    pub history_limit: usize,
    /// Draft pacing.
    pub draft: DraftSettings,
    /// This process's lease owner name.
    pub owner: String,
    /// How long a claim lasts.
    pub lease: Duration,
    /// Idle time before an actor retires.
    pub idle: Duration,
    /// Fired at shutdown: actors stop claiming new events.
    pub draining: CancellationToken,
    /// Fired when the shutdown grace period is over: running turns stop and are handed back.
    pub abort: CancellationToken,
}

impl Deps {
    /// The agent loop for one conversation: its workspace's tools plus the extra ones, gated
    /// by the policy with this conversation's "always allow" rules.
    pub async fn agent_for(
        &self,
        key: &ConversationKey,
        user_id: &str,
    ) -> Result<AgentLoop, StoreError> {
        let gate = approval::PolicyGate {
            policy: Arc::clone(&self.policy),
            extra_allow: self.store.allow_rules(key).await?,
        };
        let mut builder = AgentLoop::builder();
        for provider in &self.context {
            builder = builder.context(Arc::clone(provider));
        }
        if self.memory.enabled {
            let scope = scope_for(&self.memory, key, user_id);
            builder = builder
                .context(Arc::new(Recall {
                    store: Arc::clone(&self.store),
                    scope: scope.clone(),
                    limit: self.memory.recall_limit,
                    max_chars: self.memory.recall_max_chars,
                }))
                .tools(memory_tools(&self.store, &scope));
        }
        Ok(builder
            .tools(self.toolbox.for_conversation(key))
            .tools(self.extra_tools.iter().cloned())
            .max_iterations(self.max_iterations)
            .scrubber(Arc::clone(&self.scrubber))
            .native_tools(self.native_tools)
            .gate(Arc::new(gate))
            .build())
    }
}

/// A live actor as the registry sees it.
struct Handle {
    /// Distinguishes this actor from a successor under the same key.
    id: u64,
    /// Capacity 1: one pending wake-up is as good as many.
    wake: mpsc::Sender<()>,
    /// Cancels the running turn (`/stop`). A std Mutex: held only to swap a token.
    current: Arc<Mutex<Option<CancellationToken>>>,
}

/// The live conversation registry.
pub struct Registry {
    actors: DashMap<ConversationKey, Handle>,
    deps: Arc<Deps>,
    tasks: TaskTracker,
    next_id: AtomicU64,
}

impl Registry {
    /// A registry whose actors run on `tasks`.
    pub fn new(deps: Arc<Deps>, tasks: TaskTracker) -> Arc<Self> {
        Arc::new(Self {
            actors: DashMap::new(),
            deps,
            tasks,
            next_id: AtomicU64::new(1),
        })
    }

    /// Make sure an actor for `key` runs and looks at the inbox.
    pub fn wake(self: &Arc<Self>, key: &ConversationKey) {
        if self.deps.draining.is_cancelled() {
            return; // stored events wait for the next start
        }
        let entry = self.actors.entry(key.clone()).or_insert_with(|| {
            let (tx, rx) = mpsc::channel(1);
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            let current = Arc::new(Mutex::new(None));
            self.tasks.spawn(actor::run(
                Arc::clone(self),
                key.clone(),
                id,
                rx,
                Arc::clone(&current),
            ));
            Handle {
                id,
                wake: tx,
                current,
            }
        });
        let _ = entry.wake.try_send(());
    }

    /// Cancel the turn running in `key`, if any. Returns whether one was running.
    pub fn cancel_turn(&self, key: &ConversationKey) -> bool {
        let Some(handle) = self.actors.get(key) else {
            return false;
        };
        let current = handle.current.lock().expect("poisoned").take();
        current.map(|t| t.cancel()).is_some()
    }

    /// Conversations with a live actor.
    pub fn active(&self) -> usize {
        self.actors.len()
    }

    /// Remove actor `id` of `key` if nothing woke it meanwhile. Runs under the map's shard
    /// lock, so a concurrent `wake` either lands before (and the actor stays) or creates a
    /// successor after.
    fn retire(&self, key: &ConversationKey, id: u64, rx: &mpsc::Receiver<()>) -> bool {
        self.actors
            .remove_if(key, |_, h| h.id == id && rx.is_empty())
            .is_some()
    }

    /// Wake every conversation with claimable events (start-up recovery, expired leases).
    pub async fn sweep(self: &Arc<Self>) -> Result<usize, crate::store::StoreError> {
        let keys = self
            .deps
            .store
            .claimable_conversations(&self.deps.owner, now_ms())
            .await?;
        for key in &keys {
            self.wake(key);
        }
        Ok(keys.len())
    }
}

/// The `EventSink` channels deliver into: store first, then wake the conversation.
pub struct Inbox {
    registry: Arc<Registry>,
}

impl Inbox {
    /// A sink feeding `registry`.
    pub fn new(registry: Arc<Registry>) -> Arc<Self> {
        Arc::new(Self { registry })
    }
}

/// `Control` for events that may be handled while a conversation waits for an approval
/// (button presses, `/stop`, `/approve`, `/deny`), `Message` otherwise.
pub fn inbox_kind(event: &ChannelEvent) -> InboxKind {
    match event {
        ChannelEvent::Button(_) => InboxKind::Control,
        ChannelEvent::Message(m) => match Command::parse(&m.text) {
            Some(Command::Stop | Command::Approve(_) | Command::Deny(_)) => InboxKind::Control,
            _ => InboxKind::Message,
        },
    }
}

impl Inbox {
    fn count(&self, event: &ChannelEvent, outcome: &str) {
        let channel = event.key().channel.as_str();
        self.registry
            .deps
            .metrics
            .inbound
            .with_label_values(&[channel, outcome])
            .inc();
    }
}

#[async_trait]
impl EventSink for Inbox {
    async fn deliver(&self, event: ChannelEvent) -> Result<Delivery, SinkError> {
        let inserted = self
            .registry
            .deps
            .store
            .insert_event(&event, inbox_kind(&event), now_ms())
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "inbox insert failed; the platform will redeliver");
                self.count(&event, "error");
                SinkError(e.to_string())
            })?;
        match inserted {
            Insert::Duplicate => {
                self.count(&event, "duplicate");
                tracing::debug!(event_id = event.event_id(), "duplicate event dropped");
                Ok(Delivery::Duplicate)
            }
            Insert::Stored(_) => {
                self.count(&event, "stored");
                if let ChannelEvent::Message(m) = &event
                    && Command::parse(&m.text) == Some(Command::Stop)
                {
                    // /stop must not wait behind the turn it is meant to stop.
                    self.registry.cancel_turn(event.key());
                }
                self.registry.wake(event.key());
                Ok(Delivery::Stored)
            }
        }
    }
}
