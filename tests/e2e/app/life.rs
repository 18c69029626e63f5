//! One life of a test gateway: what it is assembled from, started in this test's runtime
//! (stopped gracefully) or on a runtime of its own (killed without any graceful step).

use std::net::SocketAddr;
use std::sync::Arc;

use switchboard::agent::Tool;
use switchboard::clock::Clock;
use switchboard::config::Config;
use switchboard::{Gateway, RunningGateway, channels};
use switchboard_channel::Channel;
use switchboard_standins::FakeChannel;
use tokio::net::TcpListener;

/// What each start of a test gateway is assembled from; the same parts make every life, so
/// a restarted gateway is the one that stopped.
#[derive(Clone)]
pub struct Parts {
    pub config: Config,
    /// The in-process channel; it outlives the gateway, so a restart keeps its transcript.
    pub fake: Arc<FakeChannel>,
    pub tools: Vec<Arc<dyn Tool>>,
    pub clock: Clock,
}

impl Parts {
    /// Start on `listener`: the fake channel, every channel the config describes (built
    /// afresh, as the binary builds them), the tools. Returns the built channels too.
    pub async fn start(self, listener: TcpListener) -> (RunningGateway, Vec<Arc<dyn Channel>>) {
        let built = channels::from_config(&self.config).expect("channels build");
        let mut gateway = Gateway::new(self.config)
            .channel(self.fake)
            .clock(self.clock);
        for channel in &built {
            gateway = gateway.channel(Arc::clone(channel));
        }
        for tool in self.tools {
            gateway = gateway.tool(tool);
        }
        let running = gateway.start(listener).await.expect("gateway starts");
        (running, built)
    }
}

/// A listener on `addr` (port 0 for a fresh one).
pub async fn bind(addr: SocketAddr) -> TcpListener {
    TcpListener::bind(addr).await.expect("bind a loopback port")
}

/// A loopback address with port 0: the system picks a free port.
pub fn any_port() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

/// A loopback port free at the moment of asking, for a gateway started as its own process.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind(any_port())
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// A gateway running on its own runtime, so a test can kill it without any graceful step,
/// the way `kill -9` would.
pub struct Killable {
    runtime: tokio::runtime::Runtime,
}

impl Killable {
    /// Start `parts` on a fresh runtime, listening on `addr`; returns the address it serves
    /// HTTP on and the channels it built.
    pub(super) async fn spawn(
        parts: Parts,
        addr: SocketAddr,
    ) -> (Self, SocketAddr, Vec<Arc<dyn Channel>>) {
        let listener = std::net::TcpListener::bind(addr).expect("bind a loopback port");
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel();
        runtime.spawn(async move {
            let listener = TcpListener::from_std(listener).unwrap();
            let (gateway, built) = parts.start(listener).await;
            let _ = tx.send(built);
            // Keep it alive until the runtime is killed.
            std::future::pending::<()>().await;
            drop(gateway);
        });
        let built = rx.await.expect("gateway started");
        (Self { runtime }, addr, built)
    }

    /// Drop every task mid-flight: no shutdown, no inbox release.
    pub fn kill(self) {
        self.runtime.shutdown_background();
    }
}
