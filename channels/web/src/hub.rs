//! The hub: every live session of one web channel, shared by the `Channel` methods (the
//! core's sends and edits) and the socket tasks (the tabs). It loads a session's saved
//! transcript on first use, saves changes shortly after they happen, and keeps only a
//! bounded number of idle sessions in memory.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::config::WebConfig;
use crate::files::Files;
use crate::gate::Gate;
use crate::persist::Store;
use crate::session::{Session, Socket};

/// How long after a change a session is saved (changes in between are saved together).
const SAVE_DELAY: Duration = Duration::from_millis(250);
/// Sessions kept in memory; past this, idle ones (no open tab, saved) are dropped.
const MAX_SESSIONS: usize = 1024;
/// Frames queued per socket before it counts as too slow and is closed (the tab resyncs).
const SOCKET_QUEUE: usize = 256;

/// One web channel's sessions.
pub(crate) struct Hub {
    pub(crate) name: String,
    pub(crate) config: WebConfig,
    /// Who may open the page and the socket (the configured token, the generated one's
    /// file, or anyone for a public chat).
    pub(crate) gate: Gate,
    /// A std Mutex: held for in-memory updates only, never across an await.
    sessions: Mutex<HashMap<String, Session>>,
    store: Option<Store>,
    /// Uploads and files the agent sent, under `<history_dir>/files`; `None` without one.
    pub(crate) files: Option<Files>,
    next_socket: AtomicU64,
}

/// A socket's end of its registration.
pub(crate) struct Attached {
    pub(crate) socket: u64,
    pub(crate) rx: mpsc::Receiver<String>,
    pub(crate) evicted: CancellationToken,
}

impl Hub {
    pub(crate) fn new(name: &str, config: WebConfig, gate: Gate) -> Self {
        let store = config
            .history_dir
            .clone()
            .map(|dir| Store::new(dir, config.redactor.clone()));
        let files = (config.history_dir)
            .as_ref()
            .map(|dir| Files::new(dir.join("files")));
        Self {
            name: name.to_owned(),
            config,
            gate,
            sessions: Mutex::new(HashMap::new()),
            store,
            files,
            next_socket: AtomicU64::new(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Session>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Run `change` on session `id` (loading its saved transcript first if it is not in
    /// memory) and schedule a save if it changed anything.
    pub(crate) async fn with<R>(
        self: &Arc<Self>,
        id: &str,
        change: impl FnOnce(&mut Session) -> R,
    ) -> R {
        let loaded = if self.lock().contains_key(id) {
            None
        } else {
            match &self.store {
                Some(store) => {
                    let on_disk = store.modified(id).await;
                    Some((store.load(id).await, on_disk))
                }
                None => Some((Vec::new(), None)),
            }
        };
        let (result, save) = {
            let mut sessions = self.lock();
            let session = sessions.entry(id.to_owned()).or_insert_with(|| {
                let (messages, on_disk) = loaded.unwrap_or_default();
                let mut session = Session::new(messages);
                session.on_disk = on_disk;
                session
            });
            let result = change(session);
            let save = self.store.is_some() && session.dirty && !session.flush_scheduled;
            if save {
                session.flush_scheduled = true;
            }
            if sessions.len() > MAX_SESSIONS {
                evict_idle(&mut sessions, self.store.is_some());
            }
            (result, save)
        };
        if save {
            let hub = Arc::clone(self);
            let id = id.to_owned();
            tokio::spawn(async move {
                tokio::time::sleep(SAVE_DELAY).await;
                hub.save(&id).await;
            });
        }
        result
    }

    /// Whether a tab of session `id` has its socket open on this process.
    pub(crate) fn has_socket(&self, id: &str) -> bool {
        self.lock().get(id).is_some_and(|s| !s.sockets.is_empty())
    }

    /// Forget the in-memory copy of session `id` when another process (a replica sharing
    /// `data_dir`) saved it since this one last loaded or saved it, and this copy has no
    /// open tab and nothing unsaved: the next use loads the newer file.
    async fn drop_if_stale(&self, id: &str) {
        let Some(store) = &self.store else {
            return;
        };
        let ours = match self.lock().get(id) {
            Some(s) if s.sockets.is_empty() && !s.dirty && !s.flush_scheduled => s.on_disk,
            _ => return,
        };
        let theirs = store.modified(id).await;
        if theirs != ours {
            let mut sessions = self.lock();
            if sessions
                .get(id)
                .is_some_and(|s| s.sockets.is_empty() && !s.dirty)
            {
                sessions.remove(id);
            }
        }
    }

    /// Register a new socket of session `id`; its queue starts with the session's sync frame
    /// (reloaded first when another replica has written the transcript meanwhile, so a tab
    /// that reconnects elsewhere resyncs).
    pub(crate) async fn attach(self: &Arc<Self>, id: &str) -> Attached {
        self.drop_if_stale(id).await;
        let socket = self.next_socket.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel(SOCKET_QUEUE);
        let evicted = CancellationToken::new();
        let max_chars = self.config.max_message_chars;
        let registered = Socket {
            id: socket,
            tx,
            evicted: evicted.clone(),
        };
        self.with(id, move |session| {
            let sync = session.sync_frame(max_chars);
            let _ = registered.tx.try_send(sync);
            session.sockets.push(registered);
        })
        .await;
        Attached {
            socket,
            rx,
            evicted,
        }
    }

    /// Forget a closed socket.
    pub(crate) fn detach(&self, id: &str, socket: u64) {
        if let Some(session) = self.lock().get_mut(id) {
            session.sockets.retain(|s| s.id != socket);
        }
    }

    /// Open sockets across all sessions, for the health detail.
    pub(crate) fn open_sockets(&self) -> usize {
        self.lock().values().map(|s| s.sockets.len()).sum()
    }

    /// Save session `id` if it changed since its last save.
    async fn save(&self, id: &str) {
        let Some(store) = &self.store else {
            return;
        };
        let _order = store.write_lock.lock().await;
        let bytes = {
            let mut sessions = self.lock();
            let Some(session) = sessions.get_mut(id) else {
                return;
            };
            session.flush_scheduled = false;
            if !session.dirty {
                return;
            }
            session.dirty = false;
            store.encode(session.messages.iter())
        };
        if let Err(e) = store.save(id, bytes).await {
            tracing::warn!(channel = %self.name, error = %e, "could not save a web chat transcript");
            if let Some(session) = self.lock().get_mut(id) {
                session.dirty = true;
            }
            return;
        }
        let on_disk = store.modified(id).await;
        if let Some(session) = self.lock().get_mut(id) {
            session.on_disk = on_disk;
        }
    }

    /// Save every changed session now (at shutdown).
    pub(crate) async fn save_all(&self) {
        let dirty: Vec<String> = self
            .lock()
            .iter()
            .filter(|(_, s)| s.dirty)
            .map(|(id, _)| id.clone())
            .collect();
        for id in dirty {
            self.save(&id).await;
        }
    }
}

/// Drop idle sessions, least recently active first, until the map is back under its cap.
/// With a store only saved sessions go (they load again on the next visit); without one an
/// idle session's transcript is lost, which is the price of memory-only history.
fn evict_idle(sessions: &mut HashMap<String, Session>, saved_only: bool) {
    let mut idle: Vec<(tokio::time::Instant, String)> = sessions
        .iter()
        .filter(|(_, s)| s.sockets.is_empty() && !(saved_only && (s.dirty || s.flush_scheduled)))
        .map(|(id, s)| (s.last_active, id.clone()))
        .collect();
    idle.sort();
    let excess = sessions.len().saturating_sub(MAX_SESSIONS);
    for (_, id) in idle.into_iter().take(excess) {
        sessions.remove(&id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Role;
    use crate::session::Message;
    use switchboard_standins::eventually;

    fn hub(dir: Option<&std::path::Path>) -> Arc<Hub> {
        let config = WebConfig {
            history_dir: dir.map(ToOwned::to_owned),
            ..WebConfig::default()
        };
        Arc::new(Hub::new("web", config, Gate::Open))
    }

    fn bot(id: &str) -> Message {
        Message::new(id.into(), Role::Bot, "hi".into(), Vec::new())
    }

    #[tokio::test]
    async fn a_new_socket_starts_with_the_sessions_messages() {
        let hub = hub(None);
        hub.with("s1", |s| s.push(bot("m1"), 10)).await;
        let mut attached = hub.attach("s1").await;
        let sync: serde_json::Value =
            serde_json::from_str(&attached.rx.recv().await.unwrap()).unwrap();
        assert_eq!(sync["type"], "sync");
        assert_eq!(sync["messages"][0]["id"], "m1");
        assert_eq!(hub.open_sockets(), 1);
        hub.detach("s1", attached.socket);
        assert_eq!(hub.open_sockets(), 0);
    }

    #[tokio::test]
    async fn changes_are_saved_and_load_into_a_fresh_hub() {
        let dir = tempfile::tempdir().unwrap();
        let first = hub(Some(dir.path()));
        first.with("s1", |s| s.push(bot("m1"), 10)).await;
        first.save_all().await;
        let second = hub(Some(dir.path()));
        let ids = second
            .with("s1", |s| {
                s.messages.iter().map(|m| m.id.clone()).collect::<Vec<_>>()
            })
            .await;
        assert_eq!(ids, ["m1"]);
    }

    #[tokio::test]
    async fn a_change_is_saved_shortly_after_without_an_explicit_save() {
        let dir = tempfile::tempdir().unwrap();
        let first = hub(Some(dir.path()));
        first.with("s1", |s| s.push(bot("m1"), 10)).await;
        let file = dir.path().join("s1.json");
        assert!(!file.exists(), "saved only after the delay");
        eventually(
            Duration::from_secs(2),
            "the session to be saved",
            async || {
                if file.exists() { Ok(()) } else { Err(()) }
            },
        )
        .await;
    }

    #[test]
    fn eviction_drops_the_oldest_idle_saved_sessions_only() {
        let mut sessions = HashMap::new();
        for i in 0..MAX_SESSIONS + 2 {
            sessions.insert(format!("s{i}"), Session::new(Vec::new()));
        }
        sessions.get_mut("s0").unwrap().dirty = true;
        evict_idle(&mut sessions, true);
        assert_eq!(sessions.len(), MAX_SESSIONS);
        assert!(sessions.contains_key("s0"), "unsaved changes stay");
    }
}
