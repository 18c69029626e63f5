//! What a bot's Matrix stores hold, read without the homeserver and through the same
//! opening as the running channel (the SDK's SQLite stores, `store_passphrase`, the saved
//! session). The upgrade suite checks with it that stores an earlier release wrote still
//! open with the same device, identity keys, rooms and sync token: an SDK upgrade that
//! lost them would make the bot a new device that cannot read its encrypted rooms, or
//! answer a room's history again.

use std::path::PathBuf;

use switchboard_channel::ChannelError;

use crate::client::Client;
use crate::config::MatrixConfig;

/// A bot's device as its stores describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreState {
    pub user_id: String,
    pub device_id: String,
    /// The device's Ed25519 identity key (base64), from the crypto store.
    pub ed25519: String,
    /// The device's Curve25519 identity key (base64), from the crypto store.
    pub curve25519: String,
    /// Rooms the state store knows the bot is in.
    pub joined_rooms: usize,
    /// The sync token the receive loop saved last, if it saved one.
    pub sync_token: Option<String>,
}

/// Open the stores in `dir` (`<data_dir>/matrix/<name>`) as channel `name` would, from its
/// saved session only: never a log-in, so nothing is asked of the homeserver.
pub async fn inspect(
    name: &str,
    config: MatrixConfig,
    dir: PathBuf,
) -> Result<StoreState, ChannelError> {
    if !dir.join("session.json").is_file() {
        return Err(ChannelError::Fatal(format!(
            "{} holds no saved Matrix session",
            dir.display()
        )));
    }
    let client = Client::new(name, config, dir).map_err(ChannelError::Fatal)?;
    let sdk = client.sdk().await?;
    let encryption = sdk.encryption();
    let missing = |what: &str| ChannelError::Fatal(format!("the crypto store has no {what}"));
    Ok(StoreState {
        user_id: client.user_id.to_string(),
        device_id: sdk
            .device_id()
            .map(ToString::to_string)
            .ok_or_else(|| missing("device"))?,
        ed25519: encryption
            .ed25519_key()
            .await
            .ok_or_else(|| missing("Ed25519 key"))?,
        curve25519: encryption
            .curve25519_key()
            .await
            .ok_or_else(|| missing("Curve25519 key"))?
            .to_base64(),
        joined_rooms: sdk.joined_rooms().len(),
        sync_token: crate::sync::saved_token(sdk).await?,
    })
}
