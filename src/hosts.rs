//! What `http_fetch` and the browser may reach: `allowed_hosts` entries (a name or a `*.`
//! suffix, an optional port, whether private addresses are allowed), and the check of
//! every address a name resolves to, made where the connection is opened (`http_fetch`'s
//! resolver, the browser's proxy), so a name pointing at loopback, a private network or a
//! cloud metadata service is refused however it was reached (a redirect included).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use serde::Deserialize;

/// Ports an entry without one allows.
pub const DEFAULT_PORTS: [u16; 2] = [443, 80];

/// One `allowed_hosts` entry: `"example.com"`, `"*.example.com"`, `"example.com:8443"`, or
/// `{ host = "localhost:8080", private = true }`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "EntryRepr")]
pub struct AllowedHost {
    /// The name, lowercase; a leading `*.` matches every subdomain.
    pattern: String,
    /// The one port allowed, or `None` for [`DEFAULT_PORTS`].
    port: Option<u16>,
    /// Loopback, private, link-local and metadata addresses are allowed for this name.
    private: bool,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum EntryRepr {
    Plain(String),
    Table {
        host: String,
        #[serde(default)]
        private: bool,
    },
}

impl TryFrom<EntryRepr> for AllowedHost {
    type Error = String;

    fn try_from(repr: EntryRepr) -> Result<Self, String> {
        let (text, private) = match repr {
            EntryRepr::Plain(text) => (text, false),
            EntryRepr::Table { host, private } => (host, private),
        };
        let (name, port) = match text.rsplit_once(':') {
            Some((name, port)) => {
                let port = port
                    .parse::<u16>()
                    .ok()
                    .filter(|p| *p != 0)
                    .ok_or_else(|| format!("{text:?}: the port must be 1 to 65535"))?;
                (name, Some(port))
            }
            None => (text.as_str(), None),
        };
        let pattern = name.trim_end_matches('.').to_ascii_lowercase();
        let bare = pattern.strip_prefix("*.").unwrap_or(&pattern);
        if bare.is_empty() || bare.contains(['*', '/', ' ', '[', ']']) {
            return Err(format!(
                "{text:?} is not a host: write \"example.com\", \"*.example.com\" or \"example.com:8443\""
            ));
        }
        Ok(Self {
            pattern,
            port,
            private,
        })
    }
}

impl AllowedHost {
    fn names(&self, host: &str) -> bool {
        match self.pattern.strip_prefix("*.") {
            Some(base) => host.ends_with(&format!(".{base}")),
            None => host == self.pattern,
        }
    }

    /// What this entry lets in that is close to every host, if anything: a wildcard over a
    /// whole top-level domain (`*.com`), or a wildcard that may reach private addresses.
    pub fn broad(&self) -> Option<String> {
        let base = self.pattern.strip_prefix("*.")?;
        if !base.contains('.') {
            return Some(format!(
                "\"{}\" allows every host under .{base}",
                self.pattern
            ));
        }
        self.private.then(|| {
            format!(
                "\"{}\" lets every subdomain of {base} reach private addresses",
                self.pattern
            )
        })
    }

    fn opens(&self, port: u16) -> bool {
        match self.port {
            Some(own) => own == port,
            None => DEFAULT_PORTS.contains(&port),
        }
    }
}

/// The allow-list, shared by the tool, its redirect policy and its resolver.
#[derive(Debug, Clone)]
pub struct Allowed {
    entries: Arc<Vec<AllowedHost>>,
    /// The tool whose `[tools.<tool>] allowed_hosts` this is, named in refusals.
    tool: &'static str,
}

impl Default for Allowed {
    fn default() -> Self {
        Self::new(Vec::new())
    }
}

impl Allowed {
    /// The list from `[tools.http_fetch] allowed_hosts`.
    pub fn new(entries: Vec<AllowedHost>) -> Self {
        Self::of_tool("http_fetch", entries)
    }

    /// The list from `[tools.<tool>] allowed_hosts`.
    pub fn of_tool(tool: &'static str, entries: Vec<AllowedHost>) -> Self {
        Self {
            entries: Arc::new(entries),
            tool,
        }
    }

    /// Whether the list allows every host (a `*.` entry cannot: it needs a base name).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether `host:port` may be fetched, or why not.
    pub fn check(&self, host: &str, port: u16) -> Result<(), String> {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let tool = self.tool;
        let named: Vec<&AllowedHost> = self.entries.iter().filter(|e| e.names(&host)).collect();
        if named.is_empty() {
            return Err(format!(
                "host {host} is not in [tools.{tool}] allowed_hosts"
            ));
        }
        if !named.iter().any(|e| e.opens(port)) {
            return Err(format!(
                "port {port} of {host} is not allowed: list it as \"{host}:{port}\" in [tools.{tool}] allowed_hosts (a bare name allows 443 and 80)"
            ));
        }
        Ok(())
    }

    /// Whether `addr`, which `host` names, may be connected to, or why not.
    pub fn check_addr(&self, host: &str, addr: IpAddr) -> Result<(), String> {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let private_ok = self.entries.iter().any(|e| e.private && e.names(&host));
        match (restricted(addr), private_ok) {
            (Some(kind), false) => Err(format!(
                "{host} resolves to {addr}, a {kind} address; {} reaches such an address only when its allowed_hosts entry says private = true",
                self.tool
            )),
            _ => Ok(()),
        }
    }
}

/// Whether `host` is allowed by `patterns` on a default port (`example.com`, or
/// `*.example.com`).
pub fn host_allowed(patterns: &Allowed, host: &str) -> bool {
    DEFAULT_PORTS
        .iter()
        .any(|p| patterns.check(host, *p).is_ok())
}

/// What kind of address tools must not reach by default, if `addr` is one.
pub fn restricted(addr: IpAddr) -> Option<&'static str> {
    match addr {
        IpAddr::V4(v4) => restricted_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => restricted_v4(v4),
            None => restricted_v6(v6),
        },
    }
}

fn restricted_v4(v4: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = v4.octets();
    if v4.is_loopback() {
        Some("loopback")
    } else if v4.is_link_local() {
        Some("link-local (cloud metadata)")
    } else if v4.is_private() || (a == 100 && (64..128).contains(&b)) {
        Some("private")
    } else if v4.is_unspecified() || a == 0 || v4.is_broadcast() || v4.is_multicast() {
        Some("non-routable")
    } else {
        None
    }
}

fn restricted_v6(v6: Ipv6Addr) -> Option<&'static str> {
    let first = v6.segments()[0];
    if v6.is_loopback() {
        Some("loopback")
    } else if first & 0xffc0 == 0xfe80 {
        Some("link-local")
    } else if first & 0xfe00 == 0xfc00 {
        Some("private")
    } else if v6.is_unspecified() || v6.is_multicast() {
        Some("non-routable")
    } else {
        None
    }
}

impl Allowed {
    /// Where `host:port` may be connected to: its check, then every address it resolves to
    /// (or the address it is) checked. The caller connects only to these addresses, so what
    /// was checked is what is reached.
    pub async fn addresses(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
        self.check(host, port)?;
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let found: Vec<SocketAddr> = match bare.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => tokio::net::lookup_host((bare, port))
                .await
                .map_err(|e| format!("{bare} does not resolve: {e}"))?
                .collect(),
        };
        for addr in &found {
            self.check_addr(bare, addr.ip())?;
        }
        if found.is_empty() {
            return Err(format!("{bare} resolves to no address"));
        }
        Ok(found)
    }
}

/// The client's resolver: the system's, then every address checked against the list.
pub struct CheckingResolver(pub Allowed);

impl reqwest::dns::Resolve for CheckingResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let allowed = self.0.clone();
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            for addr in &found {
                allowed.check_addr(&host, addr.ip())?;
            }
            let addrs: reqwest::dns::Addrs = Box::new(found.into_iter());
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(entries: &[&str]) -> Allowed {
        let parsed = entries
            .iter()
            .map(|e| AllowedHost::try_from(EntryRepr::Plain((*e).to_owned())).unwrap())
            .collect();
        Allowed::new(parsed)
    }

    #[test]
    fn hosts_match_exactly_or_by_wildcard_suffix_on_the_default_ports() {
        let allowed = list(&["example.com", "*.docs.rs"]);
        assert!(host_allowed(&allowed, "example.com"));
        assert!(host_allowed(&allowed, "EXAMPLE.com."));
        assert!(!host_allowed(&allowed, "evil-example.com"));
        assert!(host_allowed(&allowed, "api.docs.rs"));
        assert!(!host_allowed(&allowed, "docs.rs.evil.com"));
        assert!(!host_allowed(&Allowed::default(), "example.com"));
        assert!(
            allowed
                .check("example.com", 8080)
                .unwrap_err()
                .contains("port 8080")
        );
    }

    #[test]
    fn a_wildcard_over_a_top_level_domain_is_broad() {
        let parse = |e: &str| AllowedHost::try_from(EntryRepr::Plain(e.into())).unwrap();
        assert!(
            parse("*.com")
                .broad()
                .unwrap()
                .contains("every host under .com")
        );
        assert_eq!(parse("*.example.com").broad(), None);
        assert_eq!(parse("example.com").broad(), None);
    }

    #[test]
    fn a_port_in_the_entry_is_the_only_port_allowed() {
        let allowed = list(&["example.com:8443"]);
        assert!(allowed.check("example.com", 8443).is_ok());
        assert!(allowed.check("example.com", 443).is_err());
    }

    #[test]
    fn bad_entries_are_refused_with_the_shape_to_write() {
        for bad in ["", "*.", "example.com:0", "example.com:http", "a b"] {
            assert!(
                AllowedHost::try_from(EntryRepr::Plain(bad.into())).is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn loopback_private_link_local_and_metadata_addresses_are_restricted() {
        for addr in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.100.100.200",
            "0.0.0.0",
            "::1",
            "fe80::1",
            "fd00:ec2::254",
            "::ffff:127.0.0.1",
        ] {
            assert!(restricted(addr.parse().unwrap()).is_some(), "{addr}");
        }
        for addr in ["93.184.216.34", "2606:2800:220:1::1"] {
            assert_eq!(restricted(addr.parse().unwrap()), None, "{addr}");
        }
    }

    #[test]
    fn a_private_entry_lets_its_name_reach_private_addresses() {
        let entry = EntryRepr::Table {
            host: "localhost:8080".into(),
            private: true,
        };
        let allowed = Allowed::new(vec![AllowedHost::try_from(entry).unwrap()]);
        let loopback = "127.0.0.1".parse().unwrap();
        assert!(allowed.check_addr("localhost", loopback).is_ok());
        assert!(
            list(&["localhost"])
                .check_addr("localhost", loopback)
                .is_err()
        );
    }
}
