//! Conversation actors: one task per live `ConversationKey`, created on demand when the inbox
//! wakes it, running one turn at a time, and retiring after it has been idle. The actor's
//! queue is the durable inbox itself, so a full or lost wake-up never loses an event.
//!
//! Layout, in the order an event meets it:
//! - `inbox`: [`Inbox`], the sink channels deliver into; it lets in only what
//!   [`crate::access`] admits, classifies each event once ([`crate::command::Intent`]) and
//!   stores it with its inbox kind.
//! - `registry`: [`Registry`], the live actors by conversation.
//! - `actor`: one actor's loop: claim, run a turn, repeat, retire.
//! - `turn`: one claimed event processed to completion.
//! - the parts a turn uses, each owning its behaviour: `agents` ([`Agents`], [`TurnSettings`]),
//!   `approval` ([`Approvals`], [`Expiries`]), `outbound` ([`Outbox`]), `lifecycle`
//!   ([`Lifecycle`]); `audit` records tool calls as they happen; `sub_tasks` builds the
//!   children of a `delegate` call.

mod actor;
mod agents;
mod approval;
mod audit;
mod inbox;
mod lifecycle;
mod outbound;
mod registry;
mod sub_tasks;
mod turn;

use std::sync::Arc;

pub use crate::profile::TurnSettings;
pub use crate::tools::FilePoster;
pub use agents::Agents;
pub use approval::{Approvals, Expiries, OPERATOR_USER, SYSTEM_USER};
pub use inbox::Inbox;
pub use lifecycle::Lifecycle;
pub use outbound::{ChannelRoutes, Channels, Outbox, Route};
pub use registry::Registry;

use crate::access::Access;
use crate::metrics::Metrics;
use crate::store::Store;

/// The parts every conversation shares, wired once by `Gateway::start`.
pub struct Deps {
    /// Durable state: the inbox, history, approvals, audit, memory.
    pub store: Arc<dyn Store>,
    /// Who may talk to the bot and who may approve, decided before the inbox.
    pub access: Arc<Access>,
    /// Builds each conversation's agent loop; holds the turn settings.
    pub agents: Agents,
    /// Approval requests, their answers and their expiry.
    pub approvals: Approvals,
    /// Every text sent to a channel.
    pub outbound: Outbox,
    /// Leases, idleness, shutdown.
    pub lifecycle: Lifecycle,
    /// Prometheus metrics.
    pub metrics: Arc<Metrics>,
    /// Scheduled tasks: `/schedules`, `/tz` and the `schedule` tool's service.
    pub schedules: Arc<crate::schedule::Schedules>,
}

impl Deps {
    /// This process's part in a shared database, for the cluster's heartbeat and wake-ups.
    pub fn replica(&self) -> crate::cluster::Replica {
        crate::cluster::Replica {
            store: self.store.clone(),
            owner: self.lifecycle.owner().to_owned(),
            metrics: Arc::clone(&self.metrics),
        }
    }
}
