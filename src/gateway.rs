//! Wiring: config + channels + provider + store into a running gateway, and its orderly
//! shutdown. `Gateway::start` takes its listener, so tests bind 127.0.0.1:0 and read the
//! real port back; `RunningGateway::shutdown` is what SIGTERM triggers.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use switchboard_channel::{Channel, EventSink};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::agent::{ContextProvider, Tool};
use crate::config::Config;
use crate::conversation::{Deps, Inbox, Registry, expiry_event, time_left};
use crate::draft::DraftSettings;
use crate::http::{self, HealthState};
use crate::metrics::Metrics;
use crate::policy::Policy;
use crate::provider::{self, Provider};
use crate::scrub::Scrubber;
use crate::store::{self, Store};
use crate::tools::Toolbox;

/// How often stored-but-unclaimed events are looked for (expired leases, other replicas).
const SWEEP_EVERY: Duration = Duration::from_secs(30);
/// After the grace period, how long aborted turns get to hand their events back.
const ABORT_GRACE: Duration = Duration::from_secs(3);

/// A gateway being assembled.
pub struct Gateway {
    config: Config,
    channels: Vec<Arc<dyn Channel>>,
    provider: Option<Arc<dyn Provider>>,
    store: Option<Arc<dyn Store>>,
    tools: Vec<Arc<dyn Tool>>,
    context: Vec<Arc<dyn ContextProvider>>,
}

impl Gateway {
    /// Start from a loaded config.
    pub fn new(config: Config) -> Self {
        Self {
            config,
            channels: Vec::new(),
            provider: None,
            store: None,
            tools: Vec::new(),
            context: Vec::new(),
        }
    }

    /// Add a channel instance.
    pub fn channel(mut self, channel: Arc<dyn Channel>) -> Self {
        self.channels.push(channel);
        self
    }

    /// Use this provider instead of the one `[provider]` describes.
    pub fn provider(mut self, provider: Arc<dyn Provider>) -> Self {
        self.provider = Some(provider);
        self
    }

    /// Use this store instead of opening `database_url`.
    pub fn store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// Offer a tool to the agent.
    pub fn tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// Add a context provider (runs before every turn).
    pub fn context(mut self, provider: Arc<dyn ContextProvider>) -> Self {
        self.context.push(provider);
        self
    }

    /// Open the database, start channels, recover unfinished events and serve HTTP on
    /// `listener`.
    pub async fn start(self, listener: TcpListener) -> anyhow::Result<RunningGateway> {
        let config = self.config;
        let store = match self.store {
            Some(store) => store,
            None => store::connect(&config.gateway.database_url)
                .await
                .with_context(|| {
                    format!(
                        "opening the database {}",
                        redact_url(&config.gateway.database_url)
                    )
                })?,
        };
        let provider = match self.provider {
            Some(p) => p,
            None => provider::from_config(&config.provider)?,
        };
        let shutdown = CancellationToken::new();
        let (expiry_tx, expiry_rx) = tokio::sync::mpsc::unbounded_channel();
        let deps = Arc::new(Deps {
            store: Arc::clone(&store),
            provider,
            toolbox: Toolbox::new(&config.tools, &config.sandbox, &config.gateway.data_dir),
            extra_tools: self.tools,
            context: self.context,
            max_iterations: config.agent.max_tool_iterations,
            native_tools: config.provider.native_tools,
            scrubber: Arc::new(Scrubber::new(config.secret_values())),
            policy: Arc::new(
                Policy::new(&config.policy).map_err(|e| anyhow::anyhow!("[policy]: {e}"))?,
            ),
            approvers: config.policy.approvers.clone(),
            approval_timeout: Duration::from_secs(config.policy.approval_timeout_secs.max(1)),
            expiry: expiry_tx,
            metrics: Arc::new(Metrics::new()),
            memory: config.memory.clone(),
            governor: Arc::new(crate::governor::Governor::new()),
            channels: self
                .channels
                .iter()
                .map(|c| (c.name().to_owned(), Arc::clone(c)))
                .collect::<HashMap<_, _>>(),
            system_prompt: config.agent.system_prompt.clone(),
            history_limit: config.agent.history_limit,
            draft: DraftSettings {
                chunk_min_chars: config.streaming.chunk_min_chars,
                min_interval: Duration::from_millis(config.streaming.progress_min_interval_ms),
            },
            owner: config.gateway.instance_id.clone(),
            lease: Duration::from_secs(config.gateway.inbox_lease_secs),
            idle: Duration::from_secs(config.gateway.conversation_idle_secs.max(1)),
            draining: shutdown.child_token(),
            abort: CancellationToken::new(),
        });
        let turns = TaskTracker::new();
        let registry = Registry::new(Arc::clone(&deps), turns.clone());
        let sink: Arc<dyn EventSink> = Inbox::new(Arc::clone(&registry));

        let background = TaskTracker::new();
        let mut routes = Vec::new();
        for channel in &self.channels {
            routes.extend(channel.routes(Arc::clone(&sink)));
            let (channel, sink, stop) = (
                Arc::clone(channel),
                Arc::clone(&sink),
                shutdown.child_token(),
            );
            background.spawn(async move {
                if let Err(err) = channel.start(sink, stop).await {
                    tracing::error!(channel = channel.name(), error = %err, "channel stopped");
                }
            });
        }
        for approval in store.pending_approvals().await? {
            let _ = deps.expiry.send(approval);
        }
        background.spawn(expire_approvals(
            expiry_rx,
            Arc::clone(&sink),
            shutdown.child_token(),
        ));
        let recovered = registry.sweep().await?;
        if recovered > 0 {
            tracing::info!(
                conversations = recovered,
                "resuming unfinished events from the inbox"
            );
        }
        background.spawn(sweep_loop(Arc::clone(&registry), shutdown.child_token()));

        let addr = listener.local_addr()?;
        let app = http::router(
            HealthState {
                store: Arc::clone(&store),
                channels: self.channels.clone(),
                metrics: Arc::clone(&deps.metrics),
                registry: Arc::clone(&registry),
                sandbox: Arc::clone(deps.toolbox.sandbox()),
            },
            routes,
            config.gateway.max_body_bytes,
        );
        let stop = shutdown.child_token();
        background.spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(stop.cancelled_owned())
                .await;
            if let Err(err) = served {
                tracing::error!(error = %err, "HTTP server failed");
            }
        });
        tracing::info!(%addr, channels = self.channels.len(), "gateway ready");
        Ok(RunningGateway {
            addr,
            shutdown,
            deps,
            registry,
            turns,
            background,
            grace: Duration::from_secs(config.gateway.shutdown_grace_secs),
        })
    }
}

/// A started gateway.
pub struct RunningGateway {
    addr: SocketAddr,
    shutdown: CancellationToken,
    deps: Arc<Deps>,
    registry: Arc<Registry>,
    turns: TaskTracker,
    background: TaskTracker,
    grace: Duration,
}

impl RunningGateway {
    /// The address the HTTP server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The store it uses.
    pub fn store(&self) -> Arc<dyn Store> {
        Arc::clone(&self.deps.store)
    }

    /// The live conversation registry.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// Stop receiving, let running turns finish within the grace period, hand the rest back
    /// to the inbox, and wait for everything to end. Pending events stay pending.
    pub async fn shutdown(self) {
        self.shutdown.cancel();
        self.turns.close();
        if tokio::time::timeout(self.grace, self.turns.wait())
            .await
            .is_err()
        {
            tracing::warn!("grace period over; unfinished turns will resume at the next start");
            self.deps.abort.cancel();
            let _ = tokio::time::timeout(ABORT_GRACE, self.turns.wait()).await;
        }
        self.background.close();
        let _ = tokio::time::timeout(ABORT_GRACE, self.background.wait()).await;
        tracing::info!("gateway stopped");
    }
}

async fn sweep_loop(registry: Arc<Registry>, stop: CancellationToken) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(SWEEP_EVERY) => {}
        }
        if let Err(err) = registry.sweep().await {
            tracing::warn!(error = %err, "inbox sweep failed");
        }
    }
}

/// Deliver an expiry event into the inbox when each approval's time is up. Approvals arrive
/// as they are created, and all pending ones at start-up; an approval decided meanwhile
/// just ignores its expiry event.
async fn expire_approvals(
    mut approvals: tokio::sync::mpsc::UnboundedReceiver<crate::store::Approval>,
    sink: Arc<dyn EventSink>,
    stop: CancellationToken,
) {
    let timers = TaskTracker::new();
    loop {
        let approval = tokio::select! {
            () = stop.cancelled() => return,
            a = approvals.recv() => match a { Some(a) => a, None => return },
        };
        let (sink, stop) = (Arc::clone(&sink), stop.clone());
        timers.spawn(async move {
            tokio::select! {
                () = stop.cancelled() => {}
                () = tokio::time::sleep(time_left(&approval)) => {
                    if let Err(err) = sink.deliver(expiry_event(&approval)).await {
                        tracing::error!(error = %err, approval = %approval.id, "could not expire an approval");
                    }
                }
            }
        });
    }
}

/// A database URL fit for logs: any password replaced.
fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let creds = &url[scheme + 3..at];
            match creds.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}
