//! A TCP proxy a test puts between the gateway and its database, to take the database away
//! and bring it back without touching the shared server: [`TcpProxy::cut`] closes every
//! open connection (queries in flight fail as on a server restart) and closes each new one
//! as soon as it is accepted; [`TcpProxy::restore`] forwards again.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::{CancellationToken, DropGuard};

/// A running proxy to one target; it stops when dropped.
pub struct TcpProxy {
    addr: SocketAddr,
    state: Arc<State>,
    _stop: DropGuard,
}

struct State {
    target: SocketAddr,
    /// `Some(token)` while forwarding: cancelling it closes the connections it opened.
    /// `None` while cut.
    live: Mutex<Option<CancellationToken>>,
}

impl TcpProxy {
    /// Forward 127.0.0.1:<port> to `target`.
    pub async fn start(target: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let addr = listener.local_addr().expect("local addr");
        let state = Arc::new(State {
            target,
            live: Mutex::new(Some(CancellationToken::new())),
        });
        let stop = CancellationToken::new();
        tokio::spawn(accept_loop(listener, Arc::clone(&state), stop.clone()));
        Self {
            addr,
            state,
            _stop: stop.drop_guard(),
        }
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `url` (`scheme://user@host:port/db…`) with its host and port replaced by the proxy's.
    pub fn url_through(&self, url: &str) -> String {
        let (scheme, rest) = url.split_once("://").expect("a URL with a scheme");
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let user = authority
            .rsplit_once('@')
            .map(|(u, _)| format!("{u}@"))
            .unwrap_or_default();
        format!("{scheme}://{user}{}/{path}", self.addr)
    }

    /// Take the target away: open connections are closed, new ones closed on arrival.
    pub fn cut(&self) {
        if let Some(live) = self.state.live.lock().unwrap().take() {
            live.cancel();
        }
    }

    /// Forward again.
    pub fn restore(&self) {
        let mut live = self.state.live.lock().unwrap();
        if live.is_none() {
            *live = Some(CancellationToken::new());
        }
    }
}

async fn accept_loop(listener: TcpListener, state: Arc<State>, stop: CancellationToken) {
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((client, _)) = accepted else {
            continue;
        };
        let live = state.live.lock().unwrap().clone();
        match live {
            // Cut: the client sees its connection closed at once, like a server going away.
            None => drop(client),
            Some(live) => {
                let (target, stop) = (state.target, stop.clone());
                tokio::spawn(async move {
                    tokio::select! {
                        () = live.cancelled() => {}
                        () = stop.cancelled() => {}
                        () = pipe(client, target) => {}
                    }
                });
            }
        }
    }
}

/// Copy both ways until either side closes.
async fn pipe(mut client: TcpStream, target: SocketAddr) {
    let Ok(mut server) = TcpStream::connect(target).await else {
        return;
    };
    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
}
