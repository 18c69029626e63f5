//! Receive path: `/sync` → read each timeline event → `EventSink::deliver` → only then save
//! the batch's `next_batch` token, so a message is confirmed only once it is stored. The
//! token lives in the SDK's own state store (beside the room state and keys it belongs
//! with), written by this loop alone.
//!
//! **When the SDK is ahead.** The SDK keeps a sync position of its own, moved as soon as
//! it has taken a response in, before anything is stored, and it hands out nothing for a
//! response whose `next_batch` equals that position ("the same sync response twice"). So
//! a batch the inbox refused (a full disk) or a gateway killed between the two cannot be
//! read again by syncing from the older token: the homeserver answers with the same
//! `next_batch` and the SDK drops it. Whenever the SDK's position is not the saved token,
//! the loop reads that stretch again through `/messages` (from the saved token to the
//! SDK's, decrypted by the SDK like a sync), stores it, and only then saves the SDK's
//! position as its own. The inbox drops what it already has.
//!
//! The very first sync (no token saved) answers nothing: it only learns where "now" is, so
//! a new bot does not answer a room's history. Invites are accepted when the inviter or the
//! room could be let in at all; the core still decides who is answered.

use std::sync::Arc;
use std::time::Duration;

use matrix_sdk::Room;
use matrix_sdk::config::SyncSettings;
use matrix_sdk::deserialized_responses::TimelineEvent;
use matrix_sdk::room::MessagesOptions;
use matrix_sdk::ruma::api::client::filter::{FilterDefinition, LazyLoadOptions};
use matrix_sdk::ruma::api::client::sync::sync_events::v3::Filter;
use matrix_sdk::ruma::{OwnedRoomId, UInt};
use matrix_sdk::sync::SyncResponse;
use serde_json::Value;
use switchboard_channel::{Backoff, ChannelError, DmPolicy, EventSink, GroupPolicy, Place};
use tokio_util::sync::CancellationToken;

use crate::client::Client;
use crate::errors::{from_sdk, is_unknown_token};
use crate::inbound::{Reader, Triage};

/// Where the loop's token is kept in the SDK's state store.
const CURSOR_KEY: &[u8] = b"switchboard.next_batch";
/// Timeline events per room per sync: enough that a short outage loses nothing.
const TIMELINE_LIMIT: u32 = 100;
const BACKOFF_MIN: Duration = Duration::from_millis(500);
const BACKOFF_MAX: Duration = Duration::from_secs(30);

/// Sync until `shutdown` fires; `Err` only when retrying cannot help (a refused login).
pub(crate) async fn run(
    client: Arc<Client>,
    sink: Arc<dyn EventSink>,
    shutdown: CancellationToken,
) -> Result<(), ChannelError> {
    let mut syncer = Syncer {
        client,
        sink,
        token: None,
        sdk_at: None,
        resumed: false,
    };
    let mut backoff = Backoff::new(BACKOFF_MIN, BACKOFF_MAX);
    loop {
        let step = tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            step = syncer.step() => step,
        };
        let wait = match step {
            Ok(()) => {
                backoff.reset();
                continue;
            }
            Err(ChannelError::RateLimited { retry_after }) => retry_after,
            Err(err @ ChannelError::Fatal(_)) => {
                tracing::error!(channel = %syncer.client.name, error = %err, "Matrix receive stopped");
                syncer
                    .client
                    .with_status(|s| s.stopped = Some(err.to_string()));
                return Err(err);
            }
            Err(err) => {
                tracing::warn!(channel = %syncer.client.name, error = %err, "Matrix sync failed; retrying");
                syncer.client.receive_failed(err.to_string());
                backoff.next_delay()
            }
        };
        tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// The token this loop saved after the last batch it stored, if any.
pub(crate) async fn saved_token(sdk: &matrix_sdk::Client) -> Result<Option<String>, ChannelError> {
    let saved = sdk
        .store()
        .get_custom_value(CURSOR_KEY)
        .await
        .map_err(|e| ChannelError::Transient(format!("reading the sync token: {e}")))?;
    Ok(saved.and_then(|bytes| String::from_utf8(bytes).ok()))
}

/// The position the SDK itself has taken sync responses in up to.
async fn sdk_position(sdk: &matrix_sdk::Client) -> Result<Option<String>, ChannelError> {
    use matrix_sdk_base::store::StateStoreDataKey;
    let value = sdk
        .store()
        .get_kv_data(StateStoreDataKey::SyncToken)
        .await
        .map_err(|e| ChannelError::Transient(format!("reading the SDK's sync position: {e}")))?;
    Ok(value.and_then(matrix_sdk_base::store::StateStoreDataValue::into_sync_token))
}

struct Syncer {
    client: Arc<Client>,
    sink: Arc<dyn EventSink>,
    /// The token of the first batch not yet stored.
    token: Option<String>,
    /// Where the SDK has taken responses in up to (see the module's notes).
    sdk_at: Option<String>,
    resumed: bool,
}

impl Syncer {
    async fn step(&mut self) -> Result<(), ChannelError> {
        let client = Arc::clone(&self.client);
        let sdk = client.sdk().await?;
        if !self.resumed {
            self.token = saved_token(sdk).await?;
            self.sdk_at = sdk_position(sdk).await?;
            self.resumed = true;
        }
        if let (Some(ours), Some(sdks)) = (&self.token, &self.sdk_at)
            && ours != sdks
        {
            let (from, to) = (ours.clone(), sdks.clone());
            self.catch_up(sdk, &from, &to).await?;
            return self.save(sdk, to).await;
        }
        let first = self.token.is_none();
        let mut settings = SyncSettings::new()
            .filter(Filter::FilterDefinition(filter()))
            .timeout(if first {
                Duration::ZERO
            } else {
                Duration::from_secs(u64::from(self.client.config.sync_timeout_secs))
            });
        if let Some(token) = &self.token {
            settings = settings.token(token.clone());
        }
        let response = match sdk.sync_once(settings).await {
            Ok(response) => response,
            Err(err) if is_unknown_token(&err) => {
                return Err(ChannelError::Fatal(format!(
                    "the homeserver no longer accepts the bot's session (device logged out?): {err}; \
                     move data_dir/matrix/{}/ away to log in again (encrypted history is lost with its keys)",
                    self.client.name
                )));
            }
            Err(err) => return Err(from_sdk(&err)),
        };
        self.sdk_at = Some(response.next_batch.clone());
        self.client.receive_ok();
        self.invites(&response).await;
        if first {
            tracing::info!(channel = %self.client.name, "first Matrix sync: earlier messages are not answered");
        } else {
            self.deliver(&response).await?;
        }
        self.save(sdk, response.next_batch).await
    }

    /// Confirm everything up to `token`: it is saved, and the next sync starts there.
    async fn save(&mut self, sdk: &matrix_sdk::Client, token: String) -> Result<(), ChannelError> {
        sdk.store()
            .set_custom_value(CURSOR_KEY, token.clone().into_bytes())
            .await
            .map_err(|e| ChannelError::Transient(format!("saving the sync token: {e}")))?;
        self.token = Some(token);
        Ok(())
    }

    /// Read every joined room's events from `from` to `to` through `/messages` and store
    /// them, oldest first: the stretch the SDK has taken in but the inbox has not.
    async fn catch_up(
        &self,
        sdk: &matrix_sdk::Client,
        from: &str,
        to: &str,
    ) -> Result<(), ChannelError> {
        tracing::info!(channel = %self.client.name, "reading again what the inbox did not store");
        // A failure here is for the next try, never the end of receiving.
        let retry = |e: matrix_sdk::Error| match from_sdk(&e) {
            ChannelError::Fatal(why) => ChannelError::Transient(why),
            other => other,
        };
        for room in sdk.joined_rooms() {
            let reader = Reader {
                client: &self.client,
                sink: self.sink.as_ref(),
                room: &room,
                place: place(&room).await,
            };
            let mut page_from = from.to_owned();
            loop {
                let mut options = MessagesOptions::forward().from(page_from.as_str());
                options.to = Some(to.to_owned());
                options.limit = UInt::from(TIMELINE_LIMIT);
                let page = room.messages(options).await.map_err(retry)?;
                self.deliver_events(&reader, &page.chunk).await?;
                match page.end {
                    Some(end) if !page.chunk.is_empty() && end != page_from => page_from = end,
                    _ => break,
                }
            }
        }
        Ok(())
    }

    /// Hand every joined room's new events to the sink, in order; the first that cannot
    /// be stored ends the batch unconfirmed.
    async fn deliver(&self, response: &SyncResponse) -> Result<(), ChannelError> {
        for (room_id, update) in &response.rooms.join {
            if update.timeline.limited {
                tracing::warn!(channel = %self.client.name, room = %room_id, "more than {TIMELINE_LIMIT} events arrived in one room while the gateway was away; only the latest are read");
            }
            let Ok(room) = self.client.room_by_id(room_id).await else {
                continue;
            };
            let reader = Reader {
                client: &self.client,
                sink: self.sink.as_ref(),
                room: &room,
                place: place(&room).await,
            };
            self.deliver_events(&reader, &update.timeline.events)
                .await?;
        }
        Ok(())
    }

    /// Hand `events` of one room to the sink, in order; the first that cannot be stored
    /// ends them unconfirmed.
    async fn deliver_events(
        &self,
        reader: &Reader<'_>,
        events: &[TimelineEvent],
    ) -> Result<(), ChannelError> {
        for event in events {
            let Ok(json) = event.raw().deserialize_as::<Value>() else {
                continue;
            };
            match reader.read(&json).await {
                Triage::Deliver(event) => {
                    if let Err(bad) = event.check_ids() {
                        tracing::warn!(channel = %self.client.name, reason = %bad, "skipped a Matrix event with a bad id");
                        continue;
                    }
                    if let Err(err) = self.sink.deliver(*event).await {
                        tracing::warn!(channel = %self.client.name, error = %err, "could not store a Matrix event; it is read again");
                        return Err(ChannelError::Transient(err.to_string()));
                    }
                }
                Triage::Skip(why) => {
                    tracing::debug!(channel = %self.client.name, room = %reader.room.room_id(), "skipped {why}");
                }
            }
        }
        Ok(())
    }

    /// Join the rooms the bot is invited to when the inviter, or the room, could be let
    /// in; decline the rest so they do not pile up.
    async fn invites(&self, response: &SyncResponse) {
        for room_id in response.rooms.invite.keys() {
            let Ok(room) = self.client.room_by_id(room_id).await else {
                continue;
            };
            let (inviter, direct) = match room.invite_details().await {
                Ok(details) => (
                    details.inviter.map(|m| m.user_id().to_string()),
                    details
                        .invitee
                        .event()
                        .original_content()
                        .and_then(|c| c.is_direct)
                        .unwrap_or(false),
                ),
                Err(_) => (None, false),
            };
            let join = self.may_join(room_id, inviter.as_deref(), direct);
            let result = if join {
                room.join().await
            } else {
                room.leave().await
            };
            match result {
                Ok(()) if join => {
                    tracing::info!(channel = %self.client.name, room = %room_id, inviter = ?inviter, "joined a Matrix room on invitation");
                }
                Ok(()) => {
                    tracing::info!(channel = %self.client.name, room = %room_id, inviter = ?inviter, "declined a Matrix invitation: neither the inviter nor the room is allowed (allowed_users, allowed_groups, dm_policy)");
                }
                Err(err) => {
                    tracing::warn!(channel = %self.client.name, room = %room_id, error = %err, "could not answer a Matrix invitation");
                }
            }
        }
    }

    /// A listed inviter is always followed; otherwise a direct chat when strangers may pair
    /// (or are let in), a room when rooms are open or this one is allowed.
    fn may_join(&self, room_id: &OwnedRoomId, inviter: Option<&str>, direct: bool) -> bool {
        let config = &self.client.config;
        let listed =
            inviter.is_some_and(|who| config.allowed_users.iter().any(|u| u == "*" || u == who));
        let room_allowed = match config.group_policy {
            GroupPolicy::Open => true,
            GroupPolicy::Allowlist => config.allowed_rooms.iter().any(|g| g == room_id.as_str()),
            GroupPolicy::Disabled => false,
        };
        listed
            || (direct && config.dm_policy.unwrap_or_default() != DmPolicy::Allowlist)
            || (!direct && room_allowed)
    }
}

/// A room of two (the person and the bot), or one marked direct, is a direct chat.
async fn place(room: &Room) -> Place {
    let direct = room.is_direct().await.unwrap_or(false) || room.active_members_count() <= 2;
    if direct {
        Place::Direct
    } else {
        Place::group(room.room_id().as_str())
    }
}

/// Members are lazy-loaded: a sync carries only the members of the events in it plus the
/// room's summary (member counts, which tell a direct chat from a room), not every member
/// of every room; the SDK fetches the full list itself before encrypting for a room.
fn filter() -> FilterDefinition {
    let mut filter = FilterDefinition::default();
    filter.room.timeline.limit = Some(UInt::from(TIMELINE_LIMIT));
    filter.room.state.lazy_load_options = LazyLoadOptions::Enabled {
        include_redundant_members: false,
    };
    filter
}
