//! What the receive loop and the send path share: the settings, the state file, the
//! verifier, the limit, both servers' clients, the health and the files a turn posted.

use std::collections::HashMap;
use std::sync::Mutex;

use switchboard_channel::{ConversationKey, OutboundFile};
use tokio_rustls::TlsConnector;

use crate::auth::Verifier;
use crate::config::EmailConfig;
use crate::health::HealthState;
use crate::inbound::{RateLimit, Reader};
use crate::outbound::Smtp;
use crate::state::State;

/// What the receive loop and the send path share.
pub(crate) struct Inner {
    pub(crate) name: String,
    pub(crate) config: EmailConfig,
    pub(crate) state: State,
    pub(crate) verifier: Verifier,
    pub(crate) limit: RateLimit,
    pub(crate) tls: TlsConnector,
    pub(crate) smtp: Smtp,
    pub(crate) health: HealthState,
    /// Files a turn posted, attached to its answer (one mail per answer). A std Mutex: every
    /// access is a short, await-free update.
    pub(crate) files: Mutex<HashMap<ConversationKey, Vec<OutboundFile>>>,
}

impl Inner {
    pub(crate) fn reader(&self) -> Reader<'_> {
        Reader {
            channel: &self.name,
            own: &self.config.address,
            state: &self.state,
            verifier: &self.verifier,
            limit: &self.limit,
            max_attachment_bytes: self.config.max_attachment_bytes,
        }
    }
}
