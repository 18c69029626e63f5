//! `[leaders]`: the leader leases that let exactly one replica run each Telegram poller and
//! Discord gateway (PostgreSQL only; a single SQLite process always leads).

use std::time::Duration;

use serde::Deserialize;

use crate::leader::LeaderSettings;

/// `[leaders]`.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct LeadersConfig {
    /// A leader lease not renewed for this long (by the database's clock) is taken over by
    /// another replica: the longest a receive loop is down after its leader dies.
    pub ttl_ms: u64,
    /// How often the leader renews its lease, and a standby looks for a free one.
    pub renew_ms: u64,
}

impl Default for LeadersConfig {
    fn default() -> Self {
        let settings = LeaderSettings::default();
        Self {
            ttl_ms: u64::try_from(settings.ttl.as_millis()).unwrap_or(15_000),
            renew_ms: u64::try_from(settings.renew_every.as_millis()).unwrap_or(5_000),
        }
    }
}

impl LeadersConfig {
    /// The settings the leader module runs with; a renew interval is kept below a third
    /// of the TTL so a leader renews at least twice within its trust window.
    pub fn settings(&self) -> LeaderSettings {
        let ttl = Duration::from_millis(self.ttl_ms.max(300));
        let renew_every = Duration::from_millis(self.renew_ms.max(50)).min(ttl / 3);
        LeaderSettings { ttl, renew_every }
    }
}
