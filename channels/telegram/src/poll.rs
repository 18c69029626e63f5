//! Receive path, polling mode: `getUpdates` long poll → normalise → `EventSink::deliver` →
//! only then advance the offset, so an update is confirmed to Telegram only once it is stored.
//! With several replicas only the leader polls: it starts from the offset the previous leader
//! saved through [`EventSink::save_cursor`] (after that leader's batch was stored), saves its
//! own after each batch, and steps down on a 409 Conflict (another poller is running).
//! Updates are deduplicated by id in the inbox, so a batch stored but not yet saved as the
//! cursor (a leader killed in between) is fetched again by the next leader and dropped.
//! `run` sleeps and retries; `Poller::step` does one round and says what happened.

use std::sync::Arc;
use std::time::Duration;

use switchboard_channel::{Backoff, ChannelError, EventSink};
use teloxide::payloads::GetUpdatesSetters;
use teloxide::prelude::Requester;
use tokio_util::sync::CancellationToken;

use crate::client::{BotIdentity, Client};
use crate::errors::Failure;
use crate::health::CONFLICT_HINT;
use crate::inbound::{ALLOWED_UPDATES, Triage};

/// First wait after a failure; doubled per failure in a row.
const BACKOFF_MIN: Duration = Duration::from_millis(500);
/// Longest wait between two attempts.
const BACKOFF_MAX: Duration = Duration::from_secs(30);

/// What one polling round did.
#[derive(Debug)]
pub(crate) enum Step {
    /// `getUpdates` answered; this many updates were stored or skipped and confirmed.
    Polled(usize),
    /// Something failed; wait (this long, when Telegram said) and try again.
    Retry(Option<Duration>),
    /// Retrying cannot help.
    Fatal(ChannelError),
}

/// The long-poll state: where the next `getUpdates` starts.
pub(crate) struct Poller {
    client: Arc<Client>,
    sink: Arc<dyn EventSink>,
    /// Id of the first update not yet stored; sent as `offset`, which confirms all before it.
    offset: Option<i32>,
    /// Whether a `getUpdates` has answered yet. The first one asks with timeout 0: it returns
    /// at once, so `/readyz` turns ready in milliseconds instead of after a full long poll.
    polled_once: bool,
    /// Whether the saved cursor (the previous leader's offset) was read yet.
    resumed: bool,
}

/// Poll until `shutdown` fires; `Err` only when retrying cannot help (a rejected token).
pub(crate) async fn run(
    client: Arc<Client>,
    sink: Arc<dyn EventSink>,
    shutdown: CancellationToken,
) -> Result<(), ChannelError> {
    let mut poller = Poller::new(client, sink);
    let mut backoff = Backoff::new(BACKOFF_MIN, BACKOFF_MAX);
    loop {
        let step = tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            step = poller.step() => step,
        };
        let wait = match step {
            Step::Polled(handled) => {
                if handled > 0 {
                    tracing::debug!(channel = %poller.client.name, handled, "confirmed Telegram updates");
                }
                backoff.reset();
                continue;
            }
            Step::Retry(Some(wait)) => wait,
            Step::Retry(None) => backoff.next_delay(),
            Step::Fatal(err) => {
                poller.client.health.stopped(err.to_string());
                return Err(err);
            }
        };
        tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            () = tokio::time::sleep(wait) => {}
        }
    }
}

impl Poller {
    /// A poller starting from whatever Telegram still holds unconfirmed.
    pub(crate) fn new(client: Arc<Client>, sink: Arc<dyn EventSink>) -> Self {
        Self {
            client,
            sink,
            offset: None,
            polled_once: false,
            resumed: false,
        }
    }

    /// One round: learn who the bot is (once), fetch a batch, store it, move the offset.
    pub(crate) async fn step(&mut self) -> Step {
        let client = Arc::clone(&self.client);
        let me = match client.identity().await {
            Ok(me) => me,
            Err(failure) => return self.failed("getMe", failure),
        };
        if !self.resumed {
            match self.sink.cursor().await {
                Ok(cursor) => {
                    self.offset = cursor.and_then(|c| i32::try_from(c).ok());
                    self.resumed = true;
                }
                Err(err) => {
                    tracing::warn!(channel = %client.name, error = %err, "could not read the saved Telegram offset; retrying");
                    return Step::Retry(None);
                }
            }
        }
        let timeout = if self.polled_once {
            client.config.poll_timeout_secs
        } else {
            0
        };
        let mut request = client
            .bot
            .get_updates()
            .timeout(timeout)
            .allowed_updates(ALLOWED_UPDATES);
        if let Some(offset) = self.offset {
            request = request.offset(offset);
        }
        let updates = match request.await {
            Ok(updates) => updates,
            Err(err) => return self.failed("getUpdates", client.failure(&err)),
        };
        client.health.receive_ok();
        self.polled_once = true;
        let mut next = None;
        for update in &updates {
            if let Err(step) = self.store(me, update).await {
                self.confirm(next).await;
                return step;
            }
            next = Some(next_offset(update.id.0));
        }
        if self.confirm(next).await {
            Step::Polled(updates.len())
        } else {
            Step::Retry(None)
        }
    }

    /// Move the offset to `next` once the updates before it are stored: save it as the
    /// cursor first (only a leader can), then let the next getUpdates confirm it to Telegram.
    /// `false` when the cursor could not be saved: the offset stays, and the stored updates
    /// come again and are dropped as duplicates.
    async fn confirm(&mut self, next: Option<i32>) -> bool {
        let Some(next) = next else { return true };
        if let Err(err) = self.sink.save_cursor(i64::from(next)).await {
            tracing::warn!(channel = %self.client.name, error = %err, "could not save the Telegram offset; the batch is fetched again");
            return false;
        }
        self.offset = Some(next);
        true
    }

    async fn store(&self, me: &BotIdentity, update: &teloxide::types::Update) -> Result<(), Step> {
        match self.client.reader(me).read(update) {
            Triage::Deliver(event) if event.check_ids().is_err() => {
                // Stored it could never be; confirmed and skipped, so polling goes on.
                let bad = event.check_ids().unwrap_err();
                tracing::warn!(channel = %self.client.name, update_id = update.id.0, reason = %bad, "skipped a Telegram update with a bad id");
                Ok(())
            }
            Triage::Deliver(event) => match self.sink.deliver(*event).await {
                Ok(_) => Ok(()),
                Err(err) => {
                    tracing::warn!(
                        channel = %self.client.name,
                        update_id = update.id.0,
                        error = %err,
                        "could not store a Telegram update; it stays unconfirmed and is fetched again"
                    );
                    self.client
                        .health
                        .error(format!("storing updates fails: {err}"));
                    Err(Step::Retry(None))
                }
            },
            Triage::Skip(why) => {
                tracing::debug!(channel = %self.client.name, update_id = update.id.0, "skipped {why}");
                Ok(())
            }
        }
    }

    fn failed(&self, method: &str, failure: Failure) -> Step {
        let name = &self.client.name;
        match failure {
            Failure::Conflict(description) => {
                tracing::error!(channel = %name, "{CONFLICT_HINT} ({description})");
                self.client.health.conflict(&description);
                self.sink.step_down(&description);
                Step::Retry(None)
            }
            Failure::RateLimited(wait) => {
                tracing::warn!(channel = %name, method, "rate limited; waiting {wait:?}");
                Step::Retry(Some(wait))
            }
            Failure::Unauthorized => Step::Fatal(self.client.channel_error(
                method,
                None,
                Failure::Unauthorized,
            )),
            other => {
                let err = other.into_channel_error(method);
                tracing::warn!(channel = %name, error = %err, "Telegram receive failed; retrying");
                self.client.health.error(err.to_string());
                Step::Retry(None)
            }
        }
    }
}

/// Telegram update ids are signed 32-bit on the wire; teloxide reads them as `u32`.
fn next_offset(update_id: u32) -> i32 {
    i32::try_from(update_id).map_or(i32::MAX, |id| id.saturating_add(1))
}
