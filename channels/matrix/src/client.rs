//! The state the receive loop and the outbound calls share: the logged-in SDK client (made
//! on first use, from the saved session when there is one), receive health, and the bot's
//! recent prompts with their choices.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use matrix_sdk::ClientBuildError;
use matrix_sdk::Room;
use matrix_sdk::SessionMeta;
use matrix_sdk::authentication::matrix::{MatrixSession, MatrixSessionTokens};
use matrix_sdk::config::RequestConfig;
use matrix_sdk::ruma::{OwnedRoomId, OwnedUserId, RoomId};
use switchboard_channel::{ChannelError, ConversationKey, Health, Recent};
use tokio::sync::OnceCell;

use crate::choices::Choice;
use crate::config::MatrixConfig;
use crate::errors::from_sdk;

/// How many prompts' choices (and the bot's own reactions on them) are remembered.
const PROMPTS_KEPT: usize = 512;
/// How long the homeserver has to answer the check made before the stores open.
const REACH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// One Matrix account, logged in once per process.
pub(crate) struct Client {
    pub(crate) name: String,
    pub(crate) config: MatrixConfig,
    pub(crate) user_id: OwnedUserId,
    /// `<data_dir>/matrix/<name>`: `session.json` and the SDK's SQLite stores.
    dir: PathBuf,
    sdk: OnceCell<matrix_sdk::Client>,
    /// Asks whether the homeserver answers before the SDK is set up (see `reachable`).
    http: matrix_sdk::reqwest::Client,
    /// The lock on `dir`, held while this process uses the stores.
    lock: std::sync::OnceLock<std::fs::File>,
    pub(crate) health: Mutex<Status>,
    /// Prompts the bot posted: event id → the choices it offered and the ids of the
    /// reactions it put under it, so a press is read without a fetch and the bot's own
    /// reactions go when the choices do.
    pub(crate) prompts: Mutex<Recent<Prompt>>,
}

/// What the bot offered under one of its messages.
#[derive(Clone, Debug, Default)]
pub(crate) struct Prompt {
    /// The thread the prompt was posted in, for the press's conversation key.
    pub(crate) thread: Option<String>,
    pub(crate) choices: Vec<Choice>,
    pub(crate) reactions: Vec<String>,
}

/// Receive-side health for `/readyz`.
#[derive(Debug, Default)]
pub(crate) struct Status {
    pub(crate) last_ok: Option<SystemTime>,
    pub(crate) last_error: Option<String>,
    pub(crate) stopped: Option<String>,
}

impl Client {
    pub(crate) fn new(name: &str, config: MatrixConfig, dir: PathBuf) -> Result<Self, String> {
        let user_id = OwnedUserId::try_from(config.user_id.as_str())
            .map_err(|e| format!("channels.{name}.user_id {e}"))?;
        Ok(Self {
            name: name.to_owned(),
            config,
            user_id,
            dir,
            sdk: OnceCell::new(),
            http: matrix_sdk::reqwest::Client::new(),
            lock: std::sync::OnceLock::new(),
            health: Mutex::new(Status::default()),
            prompts: Mutex::new(Recent::new(PROMPTS_KEPT)),
        })
    }

    /// The logged-in client: the saved session restored, or a password login whose
    /// session is then saved (`session.json`, readable by the gateway's user only), so the
    /// bot keeps one device, and its encryption keys, across restarts.
    pub(crate) async fn sdk(&self) -> Result<&matrix_sdk::Client, ChannelError> {
        self.sdk
            .get_or_try_init(async || {
                self.reachable().await?;
                self.log_in().await
            })
            .await
    }

    /// The client from the stores and the saved session alone, the homeserver not asked
    /// (`store::inspect`); without a saved session this would log in, so callers check.
    pub(crate) async fn sdk_offline(&self) -> Result<&matrix_sdk::Client, ChannelError> {
        self.sdk.get_or_try_init(|| self.log_in()).await
    }

    #[expect(
        clippy::too_many_lines,
        reason = "the SDK's log-in is one ordered sequence: store, client, session restore or password log-in, encryption keys"
    )]
    async fn log_in(&self) -> Result<matrix_sdk::Client, ChannelError> {
        std::fs::create_dir_all(&self.dir).map_err(|e| {
            ChannelError::Fatal(format!("cannot create {}: {e}", self.dir.display()))
        })?;
        self.lock_dir()?;
        let client = matrix_sdk::Client::builder()
            .homeserver_url(&self.config.homeserver)
            .sqlite_store(
                self.dir.join("store"),
                self.config.store_passphrase.expose(),
            )
            // No retries inside the SDK: a 429 or a 5xx reaches the core as a `ChannelError`,
            // whose pacing and retries are the same for every platform (and the sync loop
            // backs off by itself).
            .request_config(RequestConfig::new().disable_retry())
            .build()
            .await
            .map_err(|e| self.build_error(e))?;
        let session_file = self.dir.join("session.json");
        match read_session(&session_file)? {
            Some(session) if session.meta.user_id == self.user_id => {
                client
                    .matrix_auth()
                    .restore_session(session)
                    .await
                    .map_err(|e| from_sdk(&e))?;
                tracing::info!(channel = %self.name, user = %self.user_id, "Matrix session restored");
            }
            other => {
                if other.is_some() {
                    return Err(ChannelError::Fatal(format!(
                        "{} belongs to another account than {}; move it away to log in as the new one",
                        session_file.display(),
                        self.user_id
                    )));
                }
                let session = match self.config.access_token.expose() {
                    Some(token) => {
                        let session = self.token_session(token).await?;
                        client
                            .matrix_auth()
                            .restore_session(session.clone())
                            .await
                            .map_err(|e| from_sdk(&e))?;
                        tracing::info!(channel = %self.name, user = %self.user_id, device = %session.meta.device_id, "logged in to Matrix with the access token");
                        session
                    }
                    None => {
                        let password = self.config.password.expose().unwrap_or_default();
                        let mut login = client
                            .matrix_auth()
                            .login_username(&self.user_id, password)
                            .initial_device_display_name(&self.config.device_name);
                        if let Some(device) = &self.config.device_id {
                            login = login.device_id(device);
                        }
                        let response = login.send().await.map_err(|e| from_sdk(&e))?;
                        tracing::info!(channel = %self.name, user = %self.user_id, device = %response.device_id, "logged in to Matrix");
                        client
                            .matrix_auth()
                            .session()
                            .ok_or_else(|| ChannelError::Fatal("login gave no session".into()))?
                    }
                };
                write_session(&session_file, &session)?;
            }
        }
        Ok(client)
    }

    /// The session of `access_token`: its device is `device_id` when set, else the one the
    /// homeserver names for the token (`whoami`), which must belong to `user_id`.
    async fn token_session(&self, token: &str) -> Result<MatrixSession, ChannelError> {
        let device_id = match &self.config.device_id {
            Some(device) => device.clone(),
            None => {
                let url = format!(
                    "{}/_matrix/client/v3/account/whoami",
                    self.config.homeserver.trim_end_matches('/')
                );
                let response = matrix_sdk::reqwest::Client::new()
                    .get(url)
                    .bearer_auth(token)
                    .send()
                    .await
                    .map_err(|e| ChannelError::Transient(e.without_url().to_string()))?;
                let status = response.status();
                if status.as_u16() == 401 || status.as_u16() == 403 {
                    return Err(ChannelError::Fatal(format!(
                        "channels.{}.access_token is not accepted by the homeserver (HTTP {status})",
                        self.name
                    )));
                }
                let bytes = response
                    .bytes()
                    .await
                    .map_err(|e| ChannelError::Transient(e.without_url().to_string()))?;
                let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
                if body["user_id"].as_str() != Some(self.user_id.as_str()) {
                    return Err(ChannelError::Fatal(format!(
                        "channels.{}.access_token belongs to {}, not {}",
                        self.name, body["user_id"], self.user_id
                    )));
                }
                body["device_id"].as_str().map(str::to_owned).ok_or_else(|| {
                    ChannelError::Fatal(format!(
                        "the homeserver does not say which device channels.{}.access_token belongs to; set device_id",
                        self.name
                    ))
                })?
            }
        };
        Ok(MatrixSession {
            meta: SessionMeta {
                user_id: self.user_id.clone(),
                device_id: device_id.into(),
            },
            tokens: MatrixSessionTokens {
                access_token: token.to_owned(),
                refresh_token: None,
            },
        })
    }

    /// Whether the homeserver answers at all, asked before the SDK opens its stores: while
    /// it is down, each retry of the receive loop then costs one request, not the stores'
    /// pools, caches and threads set up and torn down again.
    async fn reachable(&self) -> Result<(), ChannelError> {
        let url = format!(
            "{}/_matrix/client/versions",
            self.config.homeserver.trim_end_matches('/')
        );
        let response = self
            .http
            .get(&url)
            .timeout(REACH_TIMEOUT)
            .send()
            .await
            .map_err(|e| ChannelError::Transient(format!("the homeserver does not answer: {e}")))?;
        if response.status().is_server_error() {
            return Err(ChannelError::Transient(format!(
                "the homeserver answers {}",
                response.status()
            )));
        }
        Ok(())
    }

    /// A homeserver out of reach is retried; a store that does not open is not.
    fn build_error(&self, err: ClientBuildError) -> ChannelError {
        match err {
            ClientBuildError::Http(http) => crate::errors::from_http(&http),
            ClientBuildError::AutoDiscovery(e) => {
                ChannelError::Transient(format!("reaching the homeserver: {e}"))
            }
            ClientBuildError::SqliteStore(e) => ChannelError::Fatal(format!(
                "cannot open the Matrix store in {} ({e}); a changed store_passphrase cannot open \
                 the old store: restore it, or move the folder away to start as a new device",
                self.dir.display()
            )),
            other => ChannelError::Fatal(format!("cannot set up the Matrix client: {other}")),
        }
    }

    /// Take the account folder's lock: the SDK's stores (above all the encryption sessions)
    /// must not be used by two processes at once, e.g. two replicas sharing `data_dir`.
    fn lock_dir(&self) -> Result<(), ChannelError> {
        if self.lock.get().is_some() {
            return Ok(());
        }
        let path = self.dir.join("lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| ChannelError::Fatal(format!("cannot open {}: {e}", path.display())))?;
        rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).map_err(
            |_| {
                ChannelError::Transient(format!(
                    "the Matrix account {} is in use by another gateway process (it holds {}); \
                     run the Matrix channel on one gateway only",
                    self.user_id,
                    path.display()
                ))
            },
        )?;
        let _ = self.lock.set(file);
        Ok(())
    }

    /// The joined room a conversation lives in.
    pub(crate) async fn room(&self, key: &ConversationKey) -> Result<Room, ChannelError> {
        let id = RoomId::parse(&key.chat)
            .map_err(|_| ChannelError::NotFound(format!("{} is not a room id", key.chat)))?;
        self.room_by_id(&id).await
    }

    pub(crate) async fn room_by_id(&self, id: &OwnedRoomId) -> Result<Room, ChannelError> {
        self.sdk()
            .await?
            .get_room(id)
            .ok_or_else(|| ChannelError::NotFound(format!("the bot is not in room {id}")))
    }

    pub(crate) fn with_status<T>(&self, f: impl FnOnce(&mut Status) -> T) -> T {
        f(&mut self
            .health
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    pub(crate) fn with_prompts<T>(&self, f: impl FnOnce(&mut Recent<Prompt>) -> T) -> T {
        f(&mut self
            .prompts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    pub(crate) fn receive_ok(&self) {
        self.with_status(|s| {
            s.last_ok = Some(SystemTime::now());
            s.last_error = None;
        });
    }

    pub(crate) fn receive_failed(&self, why: String) {
        self.with_status(|s| s.last_error = Some(why));
    }

    pub(crate) fn health(&self) -> Health {
        self.with_status(|s| match (&s.stopped, &s.last_error, s.last_ok) {
            (Some(why), _, _) => Health {
                ready: false,
                detail: format!("stopped: {why}"),
                last_ok: s.last_ok,
            },
            (None, Some(why), _) => Health {
                ready: false,
                detail: why.clone(),
                last_ok: s.last_ok,
            },
            (None, None, Some(_)) => Health {
                ready: true,
                detail: "syncing".into(),
                last_ok: s.last_ok,
            },
            (None, None, None) => Health {
                ready: false,
                detail: "not synced yet".into(),
                last_ok: None,
            },
        })
    }
}

fn read_session(path: &Path) -> Result<Option<MatrixSession>, ChannelError> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            ChannelError::Fatal(format!(
                "{} is not a saved Matrix session ({e}); move it away to log in again",
                path.display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ChannelError::Fatal(format!(
            "cannot read {}: {e}",
            path.display()
        ))),
    }
}

/// Written to a temporary file created 0600 and renamed over, so the access token inside is
/// never readable by others, not even half-written.
fn write_session(path: &Path, session: &MatrixSession) -> Result<(), ChannelError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let fail = |e: std::io::Error| {
        ChannelError::Fatal(format!(
            "cannot save the Matrix session to {}: {e}",
            path.display()
        ))
    };
    let tmp = path.with_extension("json.tmp");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(fail)?;
    let json = serde_json::to_vec(session).map_err(|e| ChannelError::Fatal(e.to_string()))?;
    file.write_all(&json).map_err(fail)?;
    file.sync_all().map_err(fail)?;
    std::fs::rename(&tmp, path).map_err(fail)
}
