//! The Matrix channel against a real Synapse homeserver (`tests/matrix/synapse.sh`), with a
//! real Matrix client (matrix-sdk, its own SQLite stores and encryption) as the person.
//! Every test registers its own bot and people, so tests share one homeserver in parallel.
//!
//! The homeserver comes from `SWITCHBOARD_TEST_SYNAPSE` (+ `_SECRET`), which `.ci/run` sets by
//! starting one; without it the tests are skipped with a notice, unless
//! `SWITCHBOARD_REQUIRE_SYNAPSE=1` makes that a failure.

mod approvals;
mod dm;
mod encrypted;
mod files;
mod flood;
mod rooms;
mod unreachable;
mod voice;

use std::time::Duration;

use hmac::{Hmac, Mac};
use matrix_sdk::config::SyncSettings;
use matrix_sdk::room::MessagesOptions;
use matrix_sdk::ruma::api::client::room::create_room::v3::{Request as CreateRoom, RoomPreset};
use matrix_sdk::ruma::events::InitialStateEvent;
use matrix_sdk::ruma::events::room::encryption::RoomEncryptionEventContent;
use matrix_sdk::ruma::{OwnedEventId, OwnedRoomId, OwnedUserId, UInt};
use matrix_sdk::{Room, RoomMemberships};
use serde_json::{Value, json};
use switchboard_standins::eventually_every;

use crate::app::{Builder, TestApp};

/// Long enough for a sync round trip or two on a loaded machine.
pub const WAIT: Duration = Duration::from_secs(30);

/// How often a wait asks the homeserver again: each try is a request to a real Synapse.
pub const ASK_EVERY: Duration = Duration::from_millis(200);

/// The homeserver under test.
#[derive(Clone)]
pub struct Synapse {
    pub url: String,
    secret: String,
}

/// The homeserver, or `None` (with a notice) when none is configured and none is required.
pub fn synapse() -> Option<Synapse> {
    match (
        std::env::var("SWITCHBOARD_TEST_SYNAPSE"),
        std::env::var("SWITCHBOARD_TEST_SYNAPSE_SECRET"),
    ) {
        (Ok(url), Ok(secret)) => Some(Synapse { url, secret }),
        _ => {
            let required = std::env::var("SWITCHBOARD_REQUIRE_SYNAPSE").is_ok_and(|v| v == "1");
            assert!(
                !required,
                "Synapse is required (SWITCHBOARD_REQUIRE_SYNAPSE=1) but SWITCHBOARD_TEST_SYNAPSE is unset; \
                 run `eval \"$(tests/matrix/synapse.sh)\"` first"
            );
            eprintln!(
                "SKIPPED: no Synapse (set it up with `eval \"$(tests/matrix/synapse.sh)\"` to run the Matrix tests)"
            );
            None
        }
    }
}

/// A fresh account: its full id and password.
pub struct Account {
    pub id: OwnedUserId,
    pub password: String,
}

impl Synapse {
    pub fn new(url: String, secret: String) -> Self {
        Self { url, secret }
    }

    /// Register `@<prefix>_<random>:localhost` through the shared-secret admin API.
    pub async fn register(&self, prefix: &str) -> Account {
        let http = reqwest::Client::new();
        let url = format!("{}/_synapse/admin/v1/register", self.url);
        let nonce: Value = http.get(&url).send().await.unwrap().json().await.unwrap();
        let nonce = nonce["nonce"].as_str().unwrap().to_owned();
        let name = format!("{prefix}_{}", uuid::Uuid::new_v4().simple());
        let password = uuid::Uuid::new_v4().simple().to_string();
        let mut mac = Hmac::<sha1::Sha1>::new_from_slice(self.secret.as_bytes()).unwrap();
        mac.update(format!("{nonce}\0{name}\0{password}\0notadmin").as_bytes());
        let mac: String = mac
            .finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let response = http
            .post(&url)
            .json(&json!({"nonce": nonce, "username": name, "password": password, "admin": false, "mac": mac}))
            .send()
            .await
            .unwrap();
        assert!(
            response.status().is_success(),
            "{:?}",
            response.text().await
        );
        Account {
            id: format!("@{name}:localhost").try_into().unwrap(),
            password,
        }
    }
}

/// The bot's account and the `[channels.matrix]` table for it.
pub struct Bot {
    pub account: Account,
    pub table: String,
}

impl Bot {
    pub async fn new(hs: &Synapse, extra: &str) -> Self {
        let account = hs.register("bot").await;
        let table = format!(
            "[channels.matrix]\nkind = \"matrix\"\nhomeserver = \"{}\"\nuser_id = \"{}\"\npassword = \"{}\"\nsync_timeout_secs = 2\n{extra}",
            hs.url, account.id, account.password
        );
        Self { account, table }
    }

    /// The test app with this bot's channel (and `extra` TOML).
    pub fn app(&self, extra: &str) -> Builder {
        TestApp::builder().config(&format!("{}{extra}", self.table))
    }
}

/// A person with a real client: its own stores and device, syncing in the background.
pub struct Person {
    pub id: OwnedUserId,
    pub client: matrix_sdk::Client,
    sync: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

impl Drop for Person {
    fn drop(&mut self) {
        self.sync.abort();
    }
}

impl Person {
    pub async fn new(hs: &Synapse, prefix: &str) -> Self {
        let account = hs.register(prefix).await;
        let dir = tempfile::tempdir().unwrap();
        let client = matrix_sdk::Client::builder()
            .homeserver_url(&hs.url)
            .sqlite_store(dir.path(), None)
            .build()
            .await
            .unwrap();
        client
            .matrix_auth()
            .login_username(&account.id, &account.password)
            .send()
            .await
            .unwrap();
        client.sync_once(SyncSettings::default()).await.unwrap();
        let syncing = client.clone();
        let sync = tokio::spawn(async move {
            let _ = syncing
                .sync(SyncSettings::default().timeout(Duration::from_secs(1)))
                .await;
        });
        Self {
            id: account.id,
            client,
            sync,
            _dir: dir,
        }
    }

    /// A room with the bot invited: direct or not, encrypted or not, plus `others` invited.
    pub async fn room(
        &self,
        bot: &OwnedUserId,
        direct: bool,
        encrypted: bool,
        others: &[&OwnedUserId],
    ) -> Room {
        let mut request = CreateRoom::new();
        request.invite = std::iter::once(bot)
            .chain(others.iter().copied())
            .cloned()
            .collect();
        request.is_direct = direct;
        request.preset = Some(RoomPreset::TrustedPrivateChat);
        if encrypted {
            request.initial_state = vec![
                InitialStateEvent::new(RoomEncryptionEventContent::with_recommended_defaults())
                    .to_raw_any(),
            ];
        }
        self.client.create_room(request).await.unwrap()
    }

    /// Join a room someone invited this person to.
    pub async fn join(&self, room_id: &OwnedRoomId) -> Room {
        let what = format!("an invitation to {room_id}");
        eventually_every(WAIT, ASK_EVERY, &what, async || {
            if let Some(room) = self.client.get_room(room_id)
                && (room.join().await.is_ok() || room.state() == matrix_sdk::RoomState::Joined)
            {
                return Ok(room);
            }
            Err(())
        })
        .await
    }

    /// Send raw message content; its event id.
    pub async fn send(&self, room: &Room, content: Value) -> OwnedEventId {
        room.send_raw("m.room.message", content)
            .await
            .unwrap()
            .event_id
    }

    pub async fn say(&self, room: &Room, text: &str) -> OwnedEventId {
        self.send(room, json!({"msgtype": "m.text", "body": text}))
            .await
    }

    pub async fn react(&self, room: &Room, target: &str, key: &str) -> OwnedEventId {
        let content =
            json!({"m.relates_to": {"rel_type": "m.annotation", "event_id": target, "key": key}});
        room.send_raw("m.reaction", content).await.unwrap().event_id
    }
}

/// Wait until `who` has joined `room` (the bot accepting its invitation).
pub async fn wait_joined(room: &Room, who: &OwnedUserId) {
    let what = format!("{who} to join {}", room.room_id());
    eventually_every(WAIT, ASK_EVERY, &what, async || {
        let members = room
            .members(RoomMemberships::JOIN)
            .await
            .unwrap_or_default();
        if members.iter().any(|m| m.user_id() == who) {
            Ok(())
        } else {
            Err(members
                .iter()
                .map(|m| m.user_id().to_owned())
                .collect::<Vec<_>>())
        }
    })
    .await;
}

/// One of the bot's messages as a person sees it now: edits applied, redactions gone.
#[derive(Clone, Debug)]
pub struct Seen {
    pub id: String,
    pub text: String,
    pub edits: usize,
    pub content: Value,
    /// Whether it travelled encrypted.
    pub encrypted: bool,
}

/// The bot's visible messages in `room`, oldest first (decrypted in an encrypted room).
pub async fn bot_messages(room: &Room, bot: &OwnedUserId) -> Vec<Seen> {
    let mut options = MessagesOptions::backward();
    options.limit = UInt::from(200u32);
    let Ok(page) = room.messages(options).await else {
        return Vec::new();
    };
    let mut events: Vec<(Value, bool)> = page
        .chunk
        .iter()
        .filter_map(|e| {
            let json = e.raw().deserialize_as::<Value>().ok()?;
            Some((json, e.encryption_info().is_some()))
        })
        .collect();
    events.reverse();
    let mut seen: Vec<Seen> = Vec::new();
    for (event, encrypted) in events
        .iter()
        .filter(|(e, _)| e["sender"] == bot.as_str() && e["type"] == "m.room.message")
    {
        let content = &event["content"];
        if content.get("body").is_none() {
            continue; // redacted
        }
        if content["m.relates_to"]["rel_type"] == "m.replace" {
            let target = content["m.relates_to"]["event_id"]
                .as_str()
                .unwrap_or_default();
            if let Some(original) = seen.iter_mut().find(|s| s.id == target) {
                original.text = content["m.new_content"]["body"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                original.content = content["m.new_content"].clone();
                original.edits += 1;
            }
            continue;
        }
        seen.push(Seen {
            id: event["event_id"].as_str().unwrap_or_default().to_owned(),
            text: content["body"].as_str().unwrap_or_default().to_owned(),
            edits: 0,
            content: content.clone(),
            encrypted: *encrypted,
        });
    }
    seen
}

/// The reaction keys `who` has under `target` (not redacted).
pub async fn reactions(room: &Room, target: &str, who: &OwnedUserId) -> Vec<String> {
    use matrix_sdk::ruma::api::client::relations::get_relating_events_with_rel_type::v1::Request;
    use matrix_sdk::ruma::events::relation::RelationType;
    let request = Request::new(
        room.room_id().to_owned(),
        target.try_into().unwrap(),
        RelationType::Annotation,
    );
    let response = room.client().send(request).await.unwrap();
    response
        .chunk
        .iter()
        .filter_map(|raw| raw.deserialize_as::<Value>().ok())
        .filter(|e| e["sender"] == who.as_str())
        .filter_map(|e| {
            e["content"]["m.relates_to"]["key"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

/// Wait until the bot's messages in `room` satisfy `done`.
pub async fn wait_bot(room: &Room, bot: &OwnedUserId, done: impl Fn(&[Seen]) -> bool) -> Vec<Seen> {
    eventually_every(WAIT, ASK_EVERY, "the bot's messages", async || {
        let seen = bot_messages(room, bot).await;
        if done(&seen) { Ok(seen) } else { Err(seen) }
    })
    .await
}

/// Wait for the bot's message that offers choices (an approval prompt) and return it.
pub async fn wait_prompt(room: &Room, bot: &OwnedUserId) -> Seen {
    let offers = |m: &Seen| m.content.get("ch.switchboard.choices").is_some();
    let seen = wait_bot(room, bot, |s| s.iter().any(offers)).await;
    seen.into_iter().find(offers).expect("found above")
}

/// A room of alice, bob and a bot that lets both in (rooms open), with `extra` TOML for
/// the app given alice's id; everyone has joined. Returns the app, the bot, alice with her
/// view of the room, and bob with his.
pub async fn group(
    hs: &Synapse,
    extra: impl FnOnce(&str) -> String,
) -> (TestApp, Bot, (Person, Room), (Person, Room)) {
    let alice = Person::new(hs, "alice").await;
    let bob = Person::new(hs, "bob").await;
    let bot = Bot::new(
        hs,
        &format!(
            "allowed_users = [\"{}\", \"{}\"]\ngroup_policy = \"open\"\n",
            alice.id, bob.id
        ),
    )
    .await;
    let app = bot.app(&extra(alice.id.as_str())).start().await;
    let room = alice.room(&bot.account.id, false, false, &[&bob.id]).await;
    let bobs = bob.join(&room.room_id().to_owned()).await;
    wait_joined(&room, &bot.account.id).await;
    (app, bot, (alice, room), (bob, bobs))
}

/// A running app with a bot, and a person already in a direct room with it.
pub struct Dm {
    pub app: TestApp,
    pub bot: Bot,
    pub alice: Person,
    pub room: Room,
}

/// A bot that lets `alice` in, and a direct room of hers it has joined; `extra` is TOML
/// for the app, given alice's id.
pub async fn dm(hs: &Synapse, encrypted: bool, extra: impl FnOnce(&str) -> String) -> Dm {
    dm_built(hs, encrypted, extra, |b| b).await
}

/// [`dm`], with the app's builder adjusted (a killable first life).
pub async fn dm_built(
    hs: &Synapse,
    encrypted: bool,
    extra: impl FnOnce(&str) -> String,
    adjust: impl FnOnce(Builder) -> Builder,
) -> Dm {
    let alice = Person::new(hs, "alice").await;
    let bot = Bot::new(hs, &format!("allowed_users = [\"{}\"]\n", alice.id)).await;
    let app = adjust(bot.app(&extra(alice.id.as_str()))).start().await;
    let room = alice.room(&bot.account.id, true, encrypted, &[]).await;
    wait_joined(&room, &bot.account.id).await;
    Dm {
        app,
        bot,
        alice,
        room,
    }
}
