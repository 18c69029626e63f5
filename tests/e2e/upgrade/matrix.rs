//! The Matrix SDK's stores across an upgrade: `tests/upgrade/<version>/matrix/` holds the
//! stores and saved session a bot of that version left (an encrypted direct room answered,
//! the stores encrypted with [`PASSPHRASE`]), and `matrix.json` the device, identity keys,
//! rooms and sync token they held then. Today's channel must open them offline with all of
//! that intact: a store the SDK could not read would make the bot a new device, unable to
//! read its encrypted rooms, answering from an empty sync token (that is, nothing it missed).
//!
//! The saved session's access token is replaced by a placeholder when the fixture is made:
//! it belonged to a throwaway test homeserver, and opening the stores never uses it.

use std::path::Path;

use serde_json::{Value, json};
use switchboard_matrix::MatrixConfig;
use switchboard_matrix::store::{StoreState, inspect};
use switchboard_standins::Reply;

use crate::matrix::{Bot, Person, synapse, wait_bot, wait_joined};

/// The stores' passphrase in the fixture (a test value, not a secret).
const PASSPHRASE: &str = "upgrade-fixture-store-passphrase";
/// What the saved session's access token becomes in the fixture.
const PLACEHOLDER_TOKEN: &str = "placeholder-token-of-a-deleted-test-homeserver";
/// The channel's name in the fixture's config (`[channels.matrix]`).
const CHANNEL: &str = "matrix";

/// The channel settings the fixture's stores are opened with: no homeserver is reached.
fn config(user_id: &str) -> MatrixConfig {
    let mut config = MatrixConfig::new("http://127.0.0.1:9", user_id, "unused-password");
    config.store_passphrase = switchboard_channel::Secret::new(PASSPHRASE);
    config
}

fn state_json(state: &StoreState) -> Value {
    json!({
        "user_id": state.user_id,
        "device_id": state.device_id,
        "ed25519": state.ed25519,
        "curve25519": state.curve25519,
        "joined_rooms": state.joined_rooms,
        "sync_token": state.sync_token,
    })
}

/// Copy the directory `from` into `to`, recursively.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[tokio::test]
async fn matrix_stores_of_every_earlier_release_open_with_their_device_keys_rooms_and_token() {
    let mut opened = 0;
    for version in std::fs::read_dir(super::root()).unwrap() {
        let version = version.unwrap().path();
        let Ok(expected) = std::fs::read_to_string(version.join("matrix.json")) else {
            continue;
        };
        let expected: Value = serde_json::from_str(&expected).unwrap();
        let data_dir = tempfile::tempdir().unwrap();
        let dir = data_dir.path().join("matrix").join(CHANNEL);
        copy_dir(&version.join("matrix"), &dir);
        let user_id = expected["user_id"].as_str().unwrap();
        let state = inspect(CHANNEL, config(user_id), dir)
            .await
            .unwrap_or_else(|e| panic!("{}: the stores do not open: {e}", version.display()));
        assert_eq!(state_json(&state), expected, "{}", version.display());
        opened += 1;
    }
    assert!(
        opened > 0,
        "no release's Matrix stores under tests/upgrade/"
    );
}

/// Writes `tests/upgrade/<this version>/matrix/` and `matrix.json` from a bot that answered
/// an encrypted direct room on a real Synapse (see `make.rs` for when to run it):
///
/// `eval "$(tests/matrix/synapse.sh)"; SWITCHBOARD_MAKE_UPGRADE_FIXTURES=1 cargo test --test e2e upgrade::matrix::make -- --ignored`
#[tokio::test]
#[ignore = "writes fixtures; run at a release's commit (see the module doc)"]
async fn make_matrix_store_fixture_for_this_version() {
    assert!(
        std::env::var_os("SWITCHBOARD_MAKE_UPGRADE_FIXTURES").is_some(),
        "set SWITCHBOARD_MAKE_UPGRADE_FIXTURES=1 to write tests/upgrade/<version>/matrix"
    );
    let hs = synapse().expect("a Synapse for the fixture");
    let alice = Person::new(&hs, "alice").await;
    let extra = format!(
        "allowed_users = [\"{}\"]\nstore_passphrase = \"{PASSPHRASE}\"\n",
        alice.id
    );
    let bot = Bot::new(&hs, &extra).await;
    let mut app = bot.app("").start().await;
    let room = alice.room(&bot.account.id, true, true, &[]).await;
    wait_joined(&room, &bot.account.id).await;
    app.llm.push(Reply::text("kept across the upgrade"));
    alice.say(&room, "hello before the upgrade").await;
    wait_bot(&room, &bot.account.id, |s| {
        s.iter()
            .any(|m| m.text == "kept across the upgrade" && m.encrypted)
    })
    .await;
    app.stop().await;

    let out = super::root().join(format!("v{}", env!("CARGO_PKG_VERSION")));
    let stores = out.join("matrix");
    let _ = std::fs::remove_dir_all(&stores);
    let from = app.config.gateway.data_dir.join("matrix").join(CHANNEL);
    copy_databases(&from, &stores).await;
    let session = std::fs::read_to_string(from.join("session.json")).unwrap();
    let mut session: Value = serde_json::from_str(&session).unwrap();
    let token = session
        .get_mut("access_token")
        .expect("the session's access token");
    *token = Value::from(PLACEHOLDER_TOKEN);
    std::fs::write(stores.join("session.json"), session.to_string()).unwrap();

    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("matrix").join(CHANNEL);
    copy_dir(&stores, &dir);
    let state = inspect(CHANNEL, config(bot.account.id.as_str()), dir)
        .await
        .unwrap();
    assert!(
        state.sync_token.is_some() && state.joined_rooms == 1,
        "{state:?}"
    );
    let text = serde_json::to_string_pretty(&state_json(&state)).unwrap();
    std::fs::write(out.join("matrix.json"), text + "\n").unwrap();
}

/// Copy the channel's directory `from` to `to`: each SQLite store through `VACUUM INTO` (one
/// file, whatever was still in its write-ahead log), other files as they are.
async fn copy_databases(from: &Path, to: &Path) {
    use sqlx::Connection;
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let (path, target) = (entry.path(), to.join(entry.file_name()));
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().unwrap().is_dir() {
            Box::pin(copy_databases(&path, &target)).await;
        } else if name.ends_with(".sqlite3") {
            let url = format!("sqlite://{}", path.display());
            let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
            sqlx::query(&format!("VACUUM INTO '{}'", target.display()))
                .execute(&mut conn)
                .await
                .unwrap();
        } else if !["-wal", "-shm", "session.json", "lock"]
            .iter()
            .any(|skip| name.ends_with(skip))
        {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}
