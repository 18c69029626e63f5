//! One webhook path for several business numbers. Meta posts every number of an app to the
//! app's one callback URL, so channels configured on the same path serve it together: the
//! first to mount its routes owns the path's router, the others join it, and each change is
//! handed to the channel whose `phone_number_id` it names. Hubs are kept per gateway (per
//! event sink), so two gateways in one process never share one.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use switchboard_channel::EventSink;

use crate::state::Inner;

/// The channels serving one path of one gateway.
pub(crate) struct Hub {
    pub path: String,
    pub sink: Arc<dyn EventSink>,
    channels: Mutex<Vec<Arc<Inner>>>,
}

/// Live hubs: (the sink's address, path) → hub. A hub lives as long as its router; a dead
/// entry is dropped at the next join.
static HUBS: Mutex<Vec<(usize, String, Weak<Hub>)>> = Mutex::new(Vec::new());

fn address(sink: &Arc<dyn EventSink>) -> usize {
    Arc::as_ptr(sink).cast::<()>() as usize
}

impl Hub {
    /// Add `inner` to its path's hub for `sink`: the new hub when it is the first on the path
    /// (its caller mounts the router), `None` when it joined one already mounted.
    pub(crate) fn join(sink: &Arc<dyn EventSink>, inner: &Arc<Inner>) -> Option<Arc<Hub>> {
        let path = inner.config.path(&inner.name);
        let mut hubs = HUBS.lock().unwrap_or_else(PoisonError::into_inner);
        hubs.retain(|(_, _, hub)| hub.strong_count() > 0);
        let at = address(sink);
        let existing = hubs
            .iter()
            .filter(|(a, p, _)| *a == at && *p == path)
            .find_map(|(_, _, hub)| hub.upgrade());
        if let Some(hub) = existing {
            hub.lock().push(Arc::clone(inner));
            return None;
        }
        let hub = Arc::new(Hub {
            path: path.clone(),
            sink: Arc::clone(sink),
            channels: Mutex::new(vec![Arc::clone(inner)]),
        });
        hubs.push((at, path, Arc::downgrade(&hub)));
        Some(hub)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Inner>>> {
        self.channels.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Every channel on this path.
    pub(crate) fn channels(&self) -> Vec<Arc<Inner>> {
        self.lock().clone()
    }
}
