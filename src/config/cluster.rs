//! `[cluster]`: timings of several replicas sharing one PostgreSQL database (heartbeats,
//! conversation leases, the fallback poll). Ignored on SQLite, where one process owns the
//! file. Every expiry is decided by the database's clock; these only say how long.

use std::time::Duration;

use serde::Deserialize;

/// `[cluster]`.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct ClusterConfig {
    /// How often this instance refreshes its heartbeat row.
    pub heartbeat_ms: u64,
    /// How long a conversation lease lasts without renewal: after a replica dies, its
    /// conversations are taken over within about this long.
    pub lease_ttl_ms: u64,
    /// How often a held conversation lease is renewed (well under the TTL).
    pub renew_ms: u64,
    /// The fallback poll for waiting events, should a `NOTIFY` be missed (jittered).
    pub poll_ms: u64,
    /// Wake replicas through `LISTEN/NOTIFY` (`true`); `false` leaves only the poll (for
    /// a connection pooler that cannot hold a `LISTEN`, and to measure the difference).
    pub listen: bool,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        Self {
            heartbeat_ms: 5_000,
            lease_ttl_ms: 15_000,
            renew_ms: 3_000,
            poll_ms: 10_000,
            listen: true,
        }
    }
}

impl ClusterConfig {
    /// The lease TTL.
    pub fn lease_ttl(&self) -> Duration {
        Duration::from_millis(self.lease_ttl_ms)
    }

    /// The renewal interval.
    pub fn renew(&self) -> Duration {
        Duration::from_millis(self.renew_ms)
    }

    /// The heartbeat interval.
    pub fn heartbeat(&self) -> Duration {
        Duration::from_millis(self.heartbeat_ms)
    }

    /// The fallback poll interval.
    pub fn poll(&self) -> Duration {
        Duration::from_millis(self.poll_ms)
    }

    /// How long after the start of its last successful renewal a holder still trusts its
    /// lease: the TTL minus a margin (a third of it) for clock drift and a slow answer, so
    /// a holder stops before the database would give the conversation to another.
    pub fn trust(&self) -> Duration {
        self.lease_ttl() - self.lease_ttl() / 3
    }

    /// What is wrong with these values, keyed like the file, if anything.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut found = Vec::new();
        if self.lease_ttl_ms < 300 {
            found.push(("cluster.lease_ttl_ms", "must be at least 300".into()));
        }
        if self.renew_ms == 0 || self.renew_ms * 3 > self.lease_ttl_ms {
            found.push((
                "cluster.renew_ms",
                "must be above 0 and at most a third of lease_ttl_ms".into(),
            ));
        }
        if self.heartbeat_ms == 0 {
            found.push(("cluster.heartbeat_ms", "must be above 0".into()));
        }
        if self.poll_ms == 0 {
            found.push(("cluster.poll_ms", "must be above 0".into()));
        }
        found
    }
}
