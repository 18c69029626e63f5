//! `FakeTelegram`: an in-process Bot API at `/bot<token>/<method>` with the real envelope
//! (`{"ok":true,"result":…}` / `{"ok":false,"error_code":…,"description":…}`), taking JSON,
//! form and multipart bodies as teloxide sends them. It records every call, queues injected
//! updates for a long-polling `getUpdates`, and answers scripted failures on demand.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Uri};
use axum::response::Response;
use axum::routing::{any, get};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::DropGuard;

use super::FAKE_BOT_TOKEN;
use super::files::{self, DownloadMode, SentFile, StoredFile};
use super::methods;
use super::reply::{Reply, envelope};
use super::updates::{Click, UserMessage};

/// A scripted answer for the next call of one method.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// 429 `Too Many Requests: retry after N` with `parameters.retry_after = N`.
    RetryAfter(u32),
    /// 409 `Conflict: terminated by other getUpdates request; …`.
    Conflict,
    /// A 5xx with Telegram's JSON envelope (`Internal Server Error`, `Bad Gateway`, …).
    ServerError(u16),
    /// Any other error: status code and description.
    Error(u16, String),
}

/// One recorded Bot API call.
#[derive(Clone, Debug)]
pub struct TelegramCall {
    /// The method name as called, e.g. `sendMessage`.
    pub method: String,
    /// Its parameters: the JSON body, or form fields as a JSON object (strings).
    pub params: Value,
    /// When the call arrived (tokio time).
    pub at: Instant,
    /// `Ok(())` when answered `"ok": true`, else the error description.
    pub outcome: Result<(), String>,
}

/// A message the bot posted, as it currently stands.
#[derive(Clone, Debug, PartialEq)]
pub struct FakeMessage {
    /// Chat it is in.
    pub chat_id: i64,
    /// Its id.
    pub message_id: i32,
    /// Forum topic it was posted in.
    pub thread_id: Option<i32>,
    /// What the user sees: tags removed, entities decoded.
    pub text: String,
    /// The text as the bot sent it (HTML when `parse_mode` is `HTML`).
    pub raw: String,
    /// The `parse_mode` it was sent with.
    pub parse_mode: Option<String>,
    /// Its inline keyboard, as sent.
    pub reply_markup: Option<Value>,
    /// How many successful edits it had.
    pub edits: u32,
    /// Whether the bot deleted it.
    pub deleted: bool,
}

/// One `sendMessageDraft` call that was accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FakeDraft {
    /// The private chat.
    pub chat_id: i64,
    /// The draft id.
    pub draft_id: i64,
    /// The visible text.
    pub text: String,
}

/// What the fake did with an injected message or click.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Injected {
    /// The update's id.
    pub update_id: i64,
    /// The message id (the carrying message's, for a click).
    pub message_id: i32,
    /// The callback query id, for a click.
    pub query_id: Option<String>,
}

#[derive(Default)]
pub(super) struct World {
    pub(super) calls: Vec<TelegramCall>,
    pub(super) failures: HashMap<String, VecDeque<Failure>>,
    pub(super) conflict: bool,
    pub(super) webhook: Option<(String, Option<String>)>,
    /// Updates not yet confirmed by an offset, oldest first.
    pub(super) updates: VecDeque<(i64, Value)>,
    pub(super) confirmed_offset: i64,
    pub(super) next_update_id: i64,
    pub(super) next_message_id: i32,
    pub(super) next_query_id: u64,
    pub(super) chats: HashSet<i64>,
    pub(super) messages: BTreeMap<(i64, i32), FakeMessage>,
    pub(super) open_queries: HashSet<String>,
    pub(super) drafts: Vec<FakeDraft>,
    /// Bumped by every getUpdates; an older long poll that sees a newer one ends with 409.
    pub(super) poll_generation: u64,
    /// Files users sent, by file id.
    pub(super) files: HashMap<String, StoredFile>,
    /// Files the bot uploaded.
    pub(super) sent_files: Vec<SentFile>,
    /// Requests to the download route so far.
    pub(super) downloads: usize,
    /// How the download route answers.
    pub(super) download_mode: DownloadMode,
}

pub(super) struct Shared {
    pub(super) token: String,
    pub(super) world: Mutex<World>,
    /// Woken when updates are queued or a newer getUpdates arrives.
    pub(super) updates_ready: Notify,
}

impl Shared {
    pub(super) fn world(&self) -> std::sync::MutexGuard<'_, World> {
        self.world.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A fake Telegram Bot API on 127.0.0.1; stops when dropped.
pub struct FakeTelegram {
    addr: SocketAddr,
    pub(super) shared: Arc<Shared>,
    _stop: DropGuard,
}

impl FakeTelegram {
    /// Start a fake accepting [`FAKE_BOT_TOKEN`].
    pub async fn start() -> Self {
        Self::start_with_token(FAKE_BOT_TOKEN).await
    }

    /// Start a fake accepting `token`.
    pub async fn start_with_token(token: &str) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let shared = Arc::new(Shared {
            token: token.to_owned(),
            world: Mutex::new(World {
                next_update_id: 10_000,
                next_message_id: 1,
                ..World::default()
            }),
            updates_ready: Notify::new(),
        });
        let app = Router::new()
            .route("/{bot}/{method}", any(handle))
            .route("/file/{bot}/{*path}", get(files::download))
            .with_state(Arc::clone(&shared));
        let stop = crate::serve_until_dropped(listener, app);
        Self {
            addr,
            shared,
            _stop: stop,
        }
    }

    /// Base URL to give the client as `api_url`.
    pub fn api_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Queue a user's message for `getUpdates`.
    pub fn inject(&self, msg: &UserMessage) -> Injected {
        let (update, injected) = self.update_for(msg);
        self.queue(injected.update_id, update);
        injected
    }

    /// The update a user's message makes, with fresh ids, without queueing it (for webhooks).
    pub fn update_for(&self, msg: &UserMessage) -> (Value, Injected) {
        let mut world = self.shared.world();
        world.chats.insert(msg.chat_id());
        let message_id = next_message_id(&mut world);
        let update_id = next_update_id(&mut world);
        let update = json!({ "update_id": update_id, "message": msg.to_json(message_id) });
        let injected = Injected {
            update_id,
            message_id,
            query_id: None,
        };
        (update, injected)
    }

    /// Queue a button press for `getUpdates`.
    pub fn click(&self, click: &Click) -> Injected {
        let (update, injected) = self.click_update(click);
        self.queue(injected.update_id, update);
        injected
    }

    /// The update a button press makes, without queueing it.
    pub fn click_update(&self, click: &Click) -> (Value, Injected) {
        let mut world = self.shared.world();
        world.next_query_id += 1;
        let query_id = format!("4{:017}", world.next_query_id);
        world.open_queries.insert(query_id.clone());
        let update_id = next_update_id(&mut world);
        let update = json!({ "update_id": update_id, "callback_query": click.to_json(&query_id) });
        let injected = Injected {
            update_id,
            message_id: click.message_id,
            query_id: Some(query_id),
        };
        (update, injected)
    }

    /// Queue any update JSON (its `update_id` must be new and increasing).
    pub fn queue(&self, update_id: i64, update: Value) {
        self.shared.world().updates.push_back((update_id, update));
        self.shared.updates_ready.notify_waiters();
    }

    /// Let the bot post in `chat_id` without a user writing there first.
    pub fn add_chat(&self, chat_id: i64) {
        self.shared.world().chats.insert(chat_id);
    }

    /// Answer the next call of `method` with `failure` (queued, one call each).
    pub fn fail_next(&self, method: &str, failure: Failure) {
        let mut world = self.shared.world();
        let method = methods::canonical(method);
        world.failures.entry(method).or_default().push_back(failure);
    }

    /// While on, every `getUpdates` answers 409 Conflict (another poller holds the updates).
    pub fn set_conflict(&self, on: bool) {
        self.shared.world().conflict = on;
        self.shared.updates_ready.notify_waiters();
    }

    /// Pretend a webhook is set (as another deployment would), so `getUpdates` answers 409.
    pub fn preset_webhook(&self, url: &str) {
        self.shared.world().webhook = Some((url.to_owned(), None));
        self.shared.updates_ready.notify_waiters();
    }

    /// The webhook URL and secret token currently set.
    pub fn webhook(&self) -> Option<(String, Option<String>)> {
        self.shared.world().webhook.clone()
    }

    /// Every call so far.
    pub fn calls(&self) -> Vec<TelegramCall> {
        self.shared.world().calls.clone()
    }

    /// Every call of `method` so far (any spelling: `sendMessage`, `SendMessage`).
    pub fn calls_to(&self, method: &str) -> Vec<TelegramCall> {
        let method = methods::canonical(method);
        let world = self.shared.world();
        world
            .calls
            .iter()
            .filter(|c| c.method == method)
            .cloned()
            .collect()
    }

    /// Wait (up to 10 s, then panic) until `method` was called at least `n` times.
    pub async fn wait_for_calls(&self, method: &str, n: usize) -> Vec<TelegramCall> {
        let what = format!("{n} {method} calls");
        crate::eventually(Duration::from_secs(10), &what, async || {
            let calls = self.calls_to(method);
            if calls.len() >= n {
                Ok(calls)
            } else {
                Err(calls)
            }
        })
        .await
    }

    /// The bot's messages in `chat_id`, oldest first (deleted ones included, marked).
    pub fn messages(&self, chat_id: i64) -> Vec<FakeMessage> {
        let world = self.shared.world();
        world
            .messages
            .values()
            .filter(|m| m.chat_id == chat_id)
            .cloned()
            .collect()
    }

    /// Accepted `sendMessageDraft` calls, oldest first.
    pub fn drafts(&self) -> Vec<FakeDraft> {
        self.shared.world().drafts.clone()
    }

    /// Ids of queued updates no `getUpdates` offset has confirmed yet.
    pub fn pending_updates(&self) -> Vec<i64> {
        self.shared
            .world()
            .updates
            .iter()
            .map(|(id, _)| *id)
            .collect()
    }

    /// The highest offset a `getUpdates` call has sent (updates below it are confirmed).
    pub fn confirmed_offset(&self) -> i64 {
        self.shared.world().confirmed_offset
    }
}

fn next_update_id(world: &mut World) -> i64 {
    world.next_update_id += 1;
    world.next_update_id
}

pub(super) fn next_message_id(world: &mut World) -> i32 {
    world.next_message_id += 1;
    world.next_message_id
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    Path((bot, method)): Path<(String, String)>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let at = Instant::now();
    let method = methods::canonical(&method);
    let params = super::params::parse(&headers, uri.query(), &body);
    let reply = if bot.strip_prefix("bot") != Some(shared.token.as_str()) {
        Reply::Err {
            code: 401,
            description: "Unauthorized".into(),
            retry_after: None,
        }
    } else {
        let scripted = shared
            .world()
            .failures
            .get_mut(&method)
            .and_then(VecDeque::pop_front);
        match scripted {
            Some(failure) => Reply::from_failure(failure),
            None => match files::call(&shared, &method, &params, &headers, &body) {
                Some(reply) => reply,
                None => methods::call(&shared, &method, &params).await,
            },
        }
    };
    let outcome = match &reply {
        Reply::Ok(_) => Ok(()),
        Reply::Err { description, .. } => Err(description.clone()),
    };
    shared.world().calls.push(TelegramCall {
        method,
        params,
        at,
        outcome,
    });
    envelope(reply)
}
