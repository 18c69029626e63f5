//! A stand-in for signal-cli's HTTP daemon (`signal-cli -a <account> daemon --http …
//! --receive-mode on-connection`), as `signal-cli-jsonrpc(5)` and signal-cli's JSON output
//! describe it: `POST /api/v1/rpc` (JSON-RPC 2.0: `send` with `textStyle` and
//! `editTimestamp`, `remoteDelete`, `sendTyping`, `getAttachment`, `getUserStatus`, `version`,
//! `listAccounts`), `GET /api/v1/events` (SSE, one `receive` event per envelope, each with an
//! `id`; the last 1000 kept, sent again after a `Last-Event-ID`, all of them when the id is
//! unknown) and `GET /api/v1/check`.
//!
//! People's messages wait "at Signal's servers" until a stream is open (on-connection mode),
//! then become events. Failure modes: a failed call per method (rate limit with
//! `retryAfterSeconds`, a proof-required challenge token, a 503), numbers that are not
//! registered, streams dropped, and a daemon restart (streams dropped, kept events lost, and
//! the daemon away until it is back). Edits past Signal's cap are recorded but, like
//! Signal's apps, not shown.
//!
//! Files: `mod.rs` (the handle, people, envelopes), `server.rs` (the HTTP endpoints).

mod server;

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::mpsc;

/// The bot's number in every test.
pub const FAKE_ACCOUNT: &str = "+15550100000";
/// The bot's ACI, which `getUserStatus` of its number answers.
pub const FAKE_ACCOUNT_ACI: &str = "00000000-0000-4000-8000-000000000000";
/// Edits of one message Signal's apps show; later ones are dropped silently.
pub const EDITS_SHOWN: u32 = 10;

/// A person writing to the bot.
#[derive(Clone, Debug)]
pub struct Person {
    /// Their number.
    pub number: String,
    /// Their ACI.
    pub uuid: String,
    /// Their profile name.
    pub name: String,
}

impl Person {
    /// A person numbered `n` (`+1555020000n`).
    pub fn new(n: u32, name: &str) -> Self {
        Self {
            number: format!("+1555020{n:04}"),
            uuid: format!("00000000-0000-4000-8000-{n:012}"),
            name: name.to_owned(),
        }
    }
}

/// What a call should fail with, once.
#[derive(Clone, Debug)]
pub enum Failure {
    /// Signal's 429 as signal-cli reports it (code -5), with its wait.
    RateLimited(u64),
    /// A rate limit Signal lifts only after a captcha: a challenge token.
    ProofRequired,
    /// The daemon answers HTTP 503.
    Unavailable,
}

/// A message the bot sent, as the person's app shows it.
#[derive(Clone, Debug)]
pub struct Sent {
    /// Its timestamp (its id for edits, quotes and reactions).
    pub timestamp: u64,
    /// A number, or `group.<id>`.
    pub to: String,
    /// The text shown.
    pub text: String,
    /// Its `textStyle` entries as shown.
    pub styles: Vec<String>,
    /// Edits received, shown or not.
    pub edits: u32,
    /// Deleted by the bot.
    pub deleted: bool,
}

/// One JSON-RPC call as received.
#[derive(Clone, Debug)]
pub struct Call {
    /// The method.
    pub method: String,
    /// Its params.
    pub params: Value,
}

#[derive(Default)]
struct State {
    next_timestamp: u64,
    next_event: u64,
    /// Envelopes still at Signal's servers (no stream open).
    pending: VecDeque<Value>,
    /// The daemon's kept events: (id, envelope).
    kept: VecDeque<(u64, Value)>,
    streams: Vec<mpsc::UnboundedSender<(u64, Value)>>,
    /// Each opening of the event stream: its `Last-Event-ID`, if it sent one.
    opened: Vec<Option<String>>,
    sent: Vec<Sent>,
    calls: Vec<Call>,
    failures: HashMap<String, VecDeque<Failure>>,
    unregistered: HashSet<String>,
    attachments: HashMap<String, Vec<u8>>,
    down: bool,
    /// Bumped to end every open stream.
    generation: u64,
}

/// The running stand-in.
#[derive(Clone)]
pub struct FakeSignal {
    state: Arc<Mutex<State>>,
    ends: Arc<tokio::sync::watch::Sender<u64>>,
    addr: SocketAddr,
}

impl FakeSignal {
    /// Start on 127.0.0.1:0.
    pub async fn start() -> Self {
        let state = Arc::new(Mutex::new(State {
            next_timestamp: 1_765_000_000_000,
            next_event: 1,
            ..State::default()
        }));
        let (ends, _) = tokio::sync::watch::channel(0);
        let mut fake = Self {
            state,
            ends: Arc::new(ends),
            addr: ([127, 0, 0, 1], 0).into(),
        };
        fake.addr = crate::serve(server::router(fake.clone())).await;
        fake
    }

    /// Where the daemon listens (`daemon_url`).
    pub fn daemon_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn timestamp(state: &mut State) -> u64 {
        state.next_timestamp += 1;
        state.next_timestamp
    }

    /// `from` sends a direct message; its timestamp.
    pub fn dm(&self, from: &Person, text: &str) -> u64 {
        self.data(from, json!({ "message": text }))
    }

    /// `from` writes `text` in group `group`, with `mentions` (`{start, length, number,
    /// uuid}`, UTF-16 units; the text holds U+FFFC where each is shown).
    pub fn group(&self, from: &Person, group: &str, text: &str, mentions: Value) -> u64 {
        self.data(
            from,
            json!({ "message": text, "mentions": mentions,
                    "groupInfo": { "groupId": group, "groupName": "Team", "revision": 3, "type": "DELIVER" } }),
        )
    }

    /// `from` sends a data message with these fields (timestamp added); its timestamp.
    pub fn data(&self, from: &Person, mut data: Value) -> u64 {
        let mut state = self.lock();
        let ts = Self::timestamp(&mut state);
        data["timestamp"] = json!(ts);
        data["expiresInSeconds"] = json!(0);
        data["viewOnce"] = json!(false);
        let envelope = Self::envelope(from, ts, "dataMessage", data);
        Self::arrive(&mut state, envelope);
        ts
    }

    /// `from` reacts with `emoji` to the bot's message `target`.
    pub fn react(&self, from: &Person, emoji: &str, target: u64) -> u64 {
        self.data(
            from,
            json!({ "reaction": { "emoji": emoji, "targetAuthor": FAKE_ACCOUNT, "targetAuthorNumber": FAKE_ACCOUNT,
                    "targetAuthorUuid": FAKE_ACCOUNT_ACI, "targetSentTimestamp": target, "isRemove": false } }),
        )
    }

    /// `from` replies `text` quoting message `target` by `author` (quoting `quoted`).
    pub fn reply(&self, from: &Person, text: &str, target: u64, author: &str, quoted: &str) -> u64 {
        self.data(
            from,
            json!({ "message": text, "quote": { "id": target, "author": author, "authorNumber": author,
                    "text": quoted, "attachments": [] } }),
        )
    }

    /// `from` edits their own message `target` to `text`.
    pub fn edit(&self, from: &Person, target: u64, text: &str) -> u64 {
        let mut state = self.lock();
        let ts = Self::timestamp(&mut state);
        let data = json!({ "targetSentTimestamp": target,
                           "dataMessage": { "timestamp": ts, "message": text, "expiresInSeconds": 0, "viewOnce": false } });
        Self::arrive(&mut state, Self::envelope(from, ts, "editMessage", data));
        ts
    }

    /// `from` deletes their own message `target`.
    pub fn delete(&self, from: &Person, target: u64) -> u64 {
        self.data(from, json!({ "remoteDelete": { "timestamp": target } }))
    }

    /// `from`'s app sends a typing indicator and a delivery receipt (never turns).
    pub fn typing_and_receipt(&self, from: &Person) {
        let mut state = self.lock();
        let ts = Self::timestamp(&mut state);
        let typing = Self::envelope(
            from,
            ts,
            "typingMessage",
            json!({ "action": "STARTED", "timestamp": ts }),
        );
        Self::arrive(&mut state, typing);
        let receipt = Self::envelope(
            from,
            ts + 1,
            "receiptMessage",
            json!({ "when": ts, "isDelivery": true, "isRead": false, "isViewed": false, "timestamps": [ts - 1] }),
        );
        Self::arrive(&mut state, receipt);
    }

    /// Keep `bytes` as attachment `id` for `getAttachment`; the JSON a message lists.
    pub fn attachment(
        &self,
        id: &str,
        content_type: &str,
        filename: Option<&str>,
        bytes: &[u8],
    ) -> Value {
        self.lock()
            .attachments
            .insert(id.to_owned(), bytes.to_vec());
        json!({ "contentType": content_type, "filename": filename, "id": id, "size": bytes.len() })
    }

    fn envelope(from: &Person, ts: u64, kind: &str, body: Value) -> Value {
        let mut envelope = json!({
            "source": from.number, "sourceNumber": from.number, "sourceUuid": from.uuid,
            "sourceName": from.name, "sourceDevice": 1, "timestamp": ts,
            "serverReceivedTimestamp": ts + 5, "serverDeliveredTimestamp": ts + 9,
        });
        envelope[kind] = body;
        json!({ "envelope": envelope, "account": FAKE_ACCOUNT })
    }

    /// An envelope reaches the daemon: an event at once while a stream is open, otherwise
    /// it waits at Signal's servers (on-connection mode).
    fn arrive(state: &mut State, envelope: Value) {
        state.streams.retain(|s| !s.is_closed());
        if state.down || state.streams.is_empty() {
            state.pending.push_back(envelope);
            return;
        }
        Self::keep_and_push(state, envelope);
    }

    fn keep_and_push(state: &mut State, envelope: Value) {
        let id = state.next_event;
        state.next_event += 1;
        state.kept.push_back((id, envelope.clone()));
        if state.kept.len() > 1000 {
            state.kept.pop_front();
        }
        for stream in &state.streams {
            let _ = stream.send((id, envelope.clone()));
        }
    }

    /// Fail the next call of `method` with `failure`.
    pub fn fail_next(&self, method: &str, failure: Failure) {
        self.lock()
            .failures
            .entry(method.to_owned())
            .or_default()
            .push_back(failure);
    }

    /// Each time the event stream was opened, the `Last-Event-ID` it was opened with.
    pub fn stream_opens(&self) -> Vec<Option<String>> {
        self.lock().opened.clone()
    }

    /// Sends to `number` fail as signal-cli reports an unregistered recipient.
    pub fn unregister(&self, number: &str) {
        self.lock().unregistered.insert(number.to_owned());
    }

    /// End every open event stream (the daemon keeps its events).
    pub fn drop_streams(&self) {
        let mut state = self.lock();
        state.streams.clear();
        state.generation += 1;
        self.ends.send_replace(state.generation);
    }

    /// The daemon dies: streams end, kept events are lost, every call fails until
    /// [`FakeSignal::back`].
    pub fn kill(&self) {
        self.lock().down = true;
        self.drop_streams();
        self.lock().kept.clear();
    }

    /// The daemon is back.
    pub fn back(&self) {
        self.lock().down = false;
    }

    /// Whether an event stream is open (a message becomes an event at once).
    pub fn listening(&self) -> bool {
        let mut state = self.lock();
        state.streams.retain(|s| !s.is_closed());
        !state.streams.is_empty()
    }

    /// The bot's messages to `to` (a number or `group.<id>`), in sending order.
    pub fn sent(&self, to: &str) -> Vec<Sent> {
        self.lock()
            .sent
            .iter()
            .filter(|s| s.to == to)
            .cloned()
            .collect()
    }

    /// Every call received.
    pub fn calls(&self) -> Vec<Call> {
        self.lock().calls.clone()
    }

    /// The calls of `method`.
    pub fn calls_to(&self, method: &str) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| c.method == method)
            .collect()
    }
}
