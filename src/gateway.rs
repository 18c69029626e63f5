//! Wiring: config + channels + provider + store into a running gateway, and its orderly
//! shutdown. `Gateway::start` takes its listener, so tests bind 127.0.0.1:0 and read the
//! real port back; `RunningGateway::shutdown` is what SIGTERM triggers.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::serve::ListenerExt;
use switchboard_channel::{Channel, EventSink};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::access::Access;
use crate::admin::Admin;
use crate::agent::{ContextProvider, Tool};
use crate::clock::Clock;
use crate::config::Config;
use crate::conversation::{
    Agents, Approvals, Channels, Deps, Expiries, Inbox, Lifecycle, Outbox, Registry,
};
use crate::draft::DraftSettings;
use crate::governor::Governor;
use crate::http::{self, HealthState};
use crate::leader::{LeaderSettings, Leaders};
use crate::memory::{Embedder, Semantic};
use crate::metrics::Metrics;
use crate::profile::Profiles;
use crate::provider::{self, Provider};
use crate::schedule::{Schedules, ticker};
use crate::store::{self, Store};
use crate::tools::Toolbox;

/// How often stored-but-unclaimed events are looked for (expired leases, other replicas).
const SWEEP_EVERY: Duration = Duration::from_secs(30);
/// After the grace period, how long aborted turns get to hand their events back.
const ABORT_GRACE: Duration = Duration::from_secs(3);

/// A gateway being assembled.
pub struct Gateway {
    config: Config,
    /// The channels, held only as the outbox's handle (start, health, names; no writes).
    channels: Channels,
    provider: Option<Arc<dyn Provider>>,
    store: Option<Arc<dyn Store>>,
    tools: Vec<Arc<dyn Tool>>,
    context: Vec<Arc<dyn ContextProvider>>,
    /// Where "now" comes from (the system clock unless a test says otherwise).
    clock: Clock,
    /// Runs Telegram/Discord receive loops on one replica only (PostgreSQL).
    leaders: Leaders,
}

impl Gateway {
    /// Start from a loaded config.
    pub fn new(config: Config) -> Self {
        let leaders = Leaders::new(
            &config.gateway.database_url,
            LeaderSettings {
                ttl: config.cluster.lease_ttl(),
                renew_every: config.cluster.renew(),
            },
        );
        Self {
            leaders,
            config,
            channels: Channels::default(),
            provider: None,
            store: None,
            tools: Vec::new(),
            context: Vec::new(),
            clock: Clock::wall(),
        }
    }

    /// Add a channel instance.
    pub fn channel(mut self, channel: Arc<dyn Channel>) -> Self {
        self.channels.add(self.leaders.wrap(channel));
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

    /// Read time from `clock` instead of the system clock (tests move a manual clock to
    /// expire approvals and leases without waiting).
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Open the database, start channels, recover unfinished events and serve HTTP on
    /// `listener`.
    #[expect(
        clippy::too_many_lines,
        reason = "the start-up order in one place: every part is built, then the routes, then serving"
    )]
    pub async fn start(mut self, listener: TcpListener) -> anyhow::Result<RunningGateway> {
        let data_dir = &self.config.gateway.data_dir;
        crate::data_dir::create(data_dir).with_context(|| data_dir.display().to_string())?;
        // Before the scrubber is built, so the dashboard's token is redacted like the rest.
        crate::admin::token::prepare(&mut self.config)?;
        let config = &self.config;
        let lock = crate::backup::GatewayLock::running(&config.gateway.data_dir)?;
        if self.provider.is_none()
            && let Some(warning) = provider::key_warning(&config.provider)
        {
            tracing::warn!("{warning}");
        }
        // The sandbox's probe (an exec of this binary) runs while the database opens.
        let toolbox = toolbox(config);
        let store = match &self.store {
            Some(store) => Arc::clone(store),
            None => open_store(&config.gateway.database_url).await?,
        };
        let shutdown = CancellationToken::new();
        let (deps, expiries) = self.parts(Arc::clone(&store), toolbox, &shutdown)?;
        let deps = Arc::new(deps);
        let turns = TaskTracker::new();
        let background = TaskTracker::new();
        start_embedding(&deps, &store, &background, &shutdown).await?;
        let registry = Registry::new(Arc::clone(&deps), turns.clone());
        let sink: Arc<dyn EventSink> = Inbox::new(Arc::clone(&registry));
        self.leaders.set_holder(registry.deps().lifecycle.owner());
        let url = &config.gateway.database_url;
        let conversations: Arc<dyn crate::cluster::Conversations> = Arc::new(Arc::clone(&registry));
        let replica = deps.replica();
        crate::cluster::start(
            conversations,
            replica,
            url,
            config.cluster,
            &background,
            &shutdown,
        );

        let mut routes = self.channels.start_all(&sink, &background, &shutdown);
        deps.approvals.rearm().await?;
        background.spawn(expiries.run(Arc::clone(&sink), shutdown.child_token()));
        let recovered = registry.sweep().await?;
        if recovered > 0 {
            tracing::info!(
                conversations = recovered,
                "resuming unfinished events from the inbox"
            );
        }
        background.spawn(sweep_loop(Arc::clone(&registry), shutdown.child_token()));
        start_scheduler(&deps, config, &registry, &sink, &background, &shutdown).await?;

        let addr = listener.local_addr()?;
        let health = HealthState {
            store: Arc::clone(&store),
            channels: self.channels.clone(),
            metrics: Arc::clone(&deps.metrics),
            registry: Arc::clone(&registry),
            sandbox: Arc::clone(deps.agents.sandbox()),
            mcp: deps.agents.mcp().cloned(),
            metrics_token: config.gateway.metrics_token.expose().map(str::to_owned),
        };
        if config.admin.enabled {
            let (registry, sink) = (Arc::clone(&registry), Arc::clone(&sink));
            let (clock, closing) = (self.clock.clone(), shutdown.child_token());
            let admin = Admin::new(config, health.clone(), registry, sink, clock, closing);
            routes.limited.push(crate::admin::router(admin));
        }
        let app = http::router(health, routes, config.gateway.max_body_bytes);
        serve(listener, app, &background, &shutdown);
        tracing::info!(%addr, channels = ?self.channels.names(), version = crate::cli::VERSION, "gateway ready");
        Ok(RunningGateway {
            addr,
            shutdown,
            registry,
            turns,
            background,
            grace: Duration::from_secs(config.gateway.shutdown_grace_secs),
            _lock: lock,
        })
    }

    /// The parts conversations share, from the config and what the builder was given.
    fn parts(
        &self,
        store: Arc<dyn Store>,
        toolbox: Toolbox,
        shutdown: &CancellationToken,
    ) -> anyhow::Result<(Deps, Expiries)> {
        let config = &self.config;
        let scrubber = Arc::new(config.scrubber());
        let metrics = Arc::new(Metrics::new());
        let fallbacks = Some(metrics.llm_fallbacks.clone());
        let skills = crate::skills::Skills::load(config);
        let profiles = Profiles::from_config(config, &skills, self.provider.clone(), fallbacks)?;
        let schedules = self.schedules(&store);
        let toolbox = toolbox
            .with_schedules(Arc::clone(&schedules))
            .with_scrubber(Arc::clone(&scrubber));
        let mcp = mcp(config, toolbox.sandbox(), &metrics, shutdown);
        let speaker = speaker(config, toolbox.sandbox());
        let agents = Agents::new(profiles, toolbox, Arc::clone(&scrubber), self.clock.clone())
            .with_semantic(semantic(config, &metrics)?)
            .with_tools(self.tools.clone())
            .with_context(self.context.clone())
            .with_mcp(mcp)
            .with_delegation(config.delegation.limits())
            .with_checkpoints(self.checkpoints());
        let access = Arc::new(Access::new(config, store.clone(), self.clock.clone()));
        let (approvals, expiries) = Approvals::new(
            Arc::clone(&store),
            Duration::from_secs(config.policy.approval_timeout_secs.max(1)),
            Arc::clone(&access),
            self.clock.clone(),
            Arc::clone(&metrics),
        );
        let draft = DraftSettings {
            chunk_min_chars: config.streaming.chunk_min_chars,
            min_interval: Duration::from_millis(config.streaming.edit_min_interval_ms),
            first_send_hold: Duration::from_millis(config.streaming.first_send_hold_ms),
        };
        let outbound = Outbox::new(&self.channels, Arc::new(Governor::new()), scrubber, draft)
            .with_voice(speaker);
        let lifecycle = self.lifecycle(&store, &metrics, shutdown);
        let deps = Deps {
            store,
            access,
            agents,
            approvals,
            outbound,
            lifecycle,
            metrics,
            schedules,
        };
        Ok((deps, expiries))
    }
}

impl Gateway {
    /// Leases and shutdown for the actors; conversation leases when replicas share the
    /// database.
    fn lifecycle(
        &self,
        store: &Arc<dyn Store>,
        metrics: &Arc<Metrics>,
        shutdown: &CancellationToken,
    ) -> Lifecycle {
        let gateway = &self.config.gateway;
        let owner = crate::cluster::instance_id(gateway.instance_id.as_deref(), store.shared());
        let lifecycle = Lifecycle::new(
            owner.clone(),
            Duration::from_secs(gateway.inbox_lease_secs),
            Duration::from_secs(gateway.conversation_idle_secs.max(1)),
            self.clock.clone(),
            shutdown,
        );
        if !store.shared() {
            return lifecycle;
        }
        let (store, metrics) = (Arc::clone(store), Arc::clone(metrics));
        lifecycle.with_leases(crate::cluster::Leases::new(
            store,
            owner,
            self.config.cluster,
            metrics,
        ))
    }

    /// The scheduling service the `schedule` tool, the chat commands and the ticker share.
    fn schedules(&self, store: &Arc<dyn Store>) -> Arc<Schedules> {
        let settings = self.config.scheduler.clone();
        Schedules::new(settings, store.clone(), self.clock.clone())
    }

    /// Workspace checkpoints (`/rewind`), stored under `data_dir`.
    fn checkpoints(&self) -> crate::checkpoint::Checkpoints {
        let (config, clock) = (&self.config, self.clock.clone());
        crate::checkpoint::Checkpoints::new(config.checkpoints, &config.gateway.data_dir, clock)
    }
}

/// The speaker `[voice]` describes, its local command run in the tools' sandbox.
fn speaker(
    config: &Config,
    sandbox: &Arc<crate::sandbox::Sandbox>,
) -> Option<Arc<crate::voice::Speaker>> {
    let voice = config.voice.as_ref()?;
    let data_dir = &config.gateway.data_dir;
    Some(Arc::new(crate::voice::Speaker::new(
        voice,
        Arc::clone(sandbox),
        data_dir,
    )))
}

/// Recall by meaning, when `[memory.embeddings]` is set.
fn semantic(config: &Config, metrics: &Metrics) -> anyhow::Result<Option<Arc<Semantic>>> {
    let Some(embeddings) = &config.memory.embeddings else {
        return Ok(None);
    };
    let embedder = Embedder::new(embeddings, &config.provider)
        .context("[memory.embeddings]: building its HTTP client")?;
    let semantic = Semantic::new(embedder, embeddings.min_similarity)
        .with_metrics(metrics.memory_embedding_failures.clone());
    Ok(Some(Arc::new(semantic)))
}

/// With recall by meaning: make the database ready for its vectors (a PostgreSQL without
/// pgvector stops start-up here, naming it) and start the task that embeds saved memories.
async fn start_embedding(
    deps: &Deps,
    store: &Arc<dyn Store>,
    background: &TaskTracker,
    shutdown: &CancellationToken,
) -> anyhow::Result<()> {
    let Some(semantic) = deps.agents.semantic() else {
        return Ok(());
    };
    store
        .prepare_vectors(semantic.model())
        .await
        .context("[memory.embeddings]: preparing the database for vectors")?;
    let task = Arc::clone(semantic).run(Arc::clone(store) as _, shutdown.child_token());
    background.spawn(task);
    Ok(())
}

/// The `[mcp]` servers, stopped when `shutdown` fires.
fn mcp(
    config: &Config,
    sandbox: &Arc<crate::sandbox::Sandbox>,
    metrics: &Arc<Metrics>,
    shutdown: &CancellationToken,
) -> Arc<crate::mcp::Mcp> {
    let data_dir = &config.gateway.data_dir;
    let mcp = crate::mcp::Mcp::new(&config.mcp, Arc::clone(sandbox), data_dir);
    let mcp = Arc::new(mcp.with_metrics(Arc::clone(metrics)));
    mcp.stop_on(shutdown);
    mcp
}

/// The built-in tools. Made before the database opens, so the sandbox's probe (an exec of
/// this binary) overlaps it. It makes every tool some profile offers; each profile filters.
fn toolbox(config: &Config) -> Toolbox {
    let tools = crate::config::ToolsConfig {
        enabled: crate::profile::offered_tools(config),
        ..config.tools.clone()
    };
    Toolbox::new(&tools, &config.sandbox, &config.gateway.data_dir)
}

/// Open the database `url` names.
async fn open_store(url: &str) -> anyhow::Result<Arc<dyn Store>> {
    store::connect(url)
        .await
        .with_context(|| format!("opening the database {}", redact_url(url)))
}

/// Serve HTTP on `listener` until `shutdown`.
fn serve(
    listener: TcpListener,
    app: axum::Router,
    background: &TaskTracker,
    shutdown: &CancellationToken,
) {
    let stop = shutdown.child_token();
    background.spawn(async move {
        // The peer address, so /metrics can tell loopback scrapes from others.
        let app = app.into_make_service_with_connect_info::<SocketAddr>();
        // Nagle off: a streamed draft's WebSocket frames and an SSE or chunked answer are
        // small writes, each of which would otherwise wait for the peer's delayed ACK.
        let listener = listener.tap_io(|tcp| {
            if let Err(err) = tcp.set_nodelay(true) {
                tracing::debug!(error = %err, "could not set TCP_NODELAY");
            }
        });
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(stop.cancelled_owned())
            .await;
        if let Err(err) = served {
            tracing::error!(error = %err, "HTTP server failed");
        }
    });
}

/// A started gateway.
pub struct RunningGateway {
    addr: SocketAddr,
    shutdown: CancellationToken,
    registry: Arc<Registry>,
    turns: TaskTracker,
    background: TaskTracker,
    grace: Duration,
    /// Held until the gateway is dropped, so `switchboard restore` refuses to overwrite its
    /// database while it runs.
    _lock: crate::backup::GatewayLock,
}

impl RunningGateway {
    /// The address the HTTP server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The store it uses.
    pub fn store(&self) -> Arc<dyn Store> {
        Arc::clone(&self.registry.deps().store)
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
            self.registry.deps().lifecycle.abort();
            let _ = tokio::time::timeout(ABORT_GRACE, self.turns.wait()).await;
        }
        let deps = self.registry.deps();
        crate::cluster::leave(deps.store.as_ref(), deps.lifecycle.owner()).await;
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

/// Load conversations' zones, store the operator's jobs and start the ticker that fires due
/// scheduled tasks into the inbox.
async fn start_scheduler(
    deps: &Deps,
    config: &Config,
    registry: &Arc<Registry>,
    sink: &Arc<dyn EventSink>,
    background: &TaskTracker,
    shutdown: &CancellationToken,
) -> anyhow::Result<()> {
    let schedules = Arc::clone(&deps.schedules);
    schedules.load_zones().await?;
    schedules.sync_operator_jobs(&config.schedules).await?;
    background.spawn(ticker::run(
        schedules,
        Arc::new(Arc::clone(registry)),
        Arc::clone(sink),
        shutdown.child_token(),
    ));
    Ok(())
}
