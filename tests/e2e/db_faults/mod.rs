//! Database faults and hostile strings (#23): a write after delivery survives a dropped
//! connection, the gateway fails fast (and recovers by itself) while PostgreSQL is away,
//! text is stored exactly on both databases, and ids the inbox cannot key on are refused at
//! the edge. The database is taken away through a [`TcpProxy`]; the shared server is never
//! stopped.

mod outage;
mod store;
mod strings;

use std::net::SocketAddr;

use switchboard_standins::TcpProxy;

/// The `host:port` of a PostgreSQL URL made by `helpers::postgres_url`.
fn server_addr(url: &str) -> SocketAddr {
    let rest = url.split_once("://").expect("scheme").1;
    let authority = rest.split('/').next().expect("authority");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    host_port.parse().expect("host:port of the test server")
}

/// A proxy in front of the server `url` names, and `url` through it.
async fn proxied(url: &str) -> (TcpProxy, String) {
    let proxy = TcpProxy::start(server_addr(url)).await;
    let through = proxy.url_through(url);
    (proxy, through)
}
