//! The receive side: serenity's gateway client (IDENTIFY, heartbeats, RESUME, reconnects)
//! with an `EventHandler` that only translates — MESSAGE_CREATE and component
//! INTERACTION_CREATE go through `inbound` into the ordered `buffer` and from it into the
//! sink — and a watcher that turns the shard's connection stage into the channel's `Health`.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serenity::client::{Client, ClientBuilder, Context, EventHandler};
use serenity::gateway::{ConnectionStage, GatewayError, ShardManager};
use serenity::http::HttpBuilder;
use serenity::model::application::{ComponentInteraction, Interaction};
use serenity::model::channel::Message;
use serenity::model::event::ResumedEvent;
use serenity::model::gateway::{GatewayIntents, Ready};
use serenity::model::id::ShardId;
use switchboard_channel::{Backoff, ChannelError, Delivery, EventSink, Health};
use tokio_util::sync::CancellationToken;

use crate::arrival::Arrivals;
use crate::buffer::{InboundBuffer, Slot};
use crate::inbound::{Context as Normalise, Triage, message_verdict, press_verdict};
use crate::presses::PressToken;
use crate::state::{Inner, not_ready};

/// How often the shard's stage is read into `Health`.
const HEALTH_POLL: Duration = Duration::from_millis(250);
/// Waits between gateway client restarts after it stopped on its own.
const FIRST_RESTART_BACKOFF: Duration = Duration::from_secs(1);
const MAX_RESTART_BACKOFF: Duration = Duration::from_secs(60);
/// What the presser sees when their press is refused or could not be stored.
const REFUSED_NOTICE: &str = "You are not allowed to use this bot here.";
const NOT_STORED_NOTICE: &str = "That press could not be recorded; please try again in a moment.";

/// The only events the bot needs: guild and DM messages, with their text.
pub fn intents() -> GatewayIntents {
    GatewayIntents::GUILD_MESSAGES
        | GatewayIntents::DIRECT_MESSAGES
        | GatewayIntents::MESSAGE_CONTENT
}

/// Run serenity's client until `shutdown`; restart it if it stops, fail on a fatal refusal.
pub async fn run(
    inner: Arc<Inner>,
    sink: Arc<dyn EventSink>,
    shutdown: CancellationToken,
) -> Result<(), ChannelError> {
    // One buffer for the life of the channel: events held during a store outage survive a
    // gateway client restart.
    let buffer = InboundBuffer::start(
        &inner.name,
        sink,
        Arc::clone(&inner.outage),
        shutdown.child_token(),
    );
    let mut backoff = Backoff::new(FIRST_RESTART_BACKOFF, MAX_RESTART_BACKOFF);
    loop {
        let mut client = build_client(&inner, &buffer).await?;
        let manager = Arc::clone(&client.shard_manager);
        let watcher = tokio::spawn(watch_health(Arc::clone(&inner), Arc::clone(&manager)));
        let outcome = tokio::select! {
            result = client.start() => Some(result),
            () = shutdown.cancelled() => None,
        };
        watcher.abort();
        let wait = backoff.next_delay();
        match outcome {
            None => {
                manager.shutdown_all().await;
                inner.set_health(not_ready("stopped"));
                return Ok(());
            }
            Some(Err(e)) => {
                if let Some(fatal) = fatal(&inner.name, &e) {
                    inner.set_health(not_ready(format!("gateway refused: {fatal}")));
                    return Err(fatal);
                }
                tracing::warn!(channel = %inner.name, error = %e, ?wait, "Discord gateway client stopped; restarting");
            }
            Some(Ok(())) => {
                tracing::warn!(channel = %inner.name, ?wait, "Discord gateway client stopped; restarting");
            }
        }
        inner.set_health(not_ready(format!("gateway client restarting in {wait:?}")));
        tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// A serenity client against `api_url`. Its own rate limiter is off: it would retry 429s
/// internally, and it must be off for serenity to honour the `api_url` proxy at all.
async fn build_client(inner: &Arc<Inner>, buffer: &InboundBuffer) -> Result<Client, ChannelError> {
    let http = HttpBuilder::new(inner.config.token.expose().unwrap_or_default())
        .client(inner.http.clone())
        .proxy(inner.config.api_url.trim_end_matches('/'))
        .ratelimiter_disabled(true)
        .build();
    let handler = Handler {
        inner: Arc::clone(inner),
        arrivals: Arrivals::new(buffer.clone()),
    };
    ClientBuilder::new_with_http(http, intents())
        .event_handler(handler)
        .await
        .map_err(|e| ChannelError::Transient(format!("building the gateway client: {e}")))
}

/// The refusals retrying cannot fix, with the setting to check.
fn fatal(name: &str, error: &serenity::Error) -> Option<ChannelError> {
    let serenity::Error::Gateway(gateway) = error else {
        return None;
    };
    let hint = match gateway {
        GatewayError::InvalidAuthentication | GatewayError::NoAuthentication => {
            format!("the gateway refused the token; check token in [channels.{name}]")
        }
        GatewayError::DisallowedGatewayIntents => {
            "the Message Content intent is not enabled; turn on \
             Bot → Privileged Gateway Intents → Message Content Intent in the Developer Portal"
                .to_owned()
        }
        GatewayError::InvalidGatewayIntents => "the gateway refused the intents".to_owned(),
        _ => return None,
    };
    tracing::error!(channel = %name, "{hint}");
    Some(ChannelError::Fatal(hint))
}

/// Read shard 0's stage into the channel's health until aborted.
async fn watch_health(inner: Arc<Inner>, manager: Arc<ShardManager>) {
    let mut tick = tokio::time::interval(HEALTH_POLL);
    loop {
        tick.tick().await;
        let state = {
            let runners = manager.runners.lock().await;
            runners.get(&ShardId(0)).map(|r| (r.stage, r.latency))
        };
        inner.observe_gateway(health_of(state));
    }
}

/// The health a shard stage means; ready only when connected (READY or RESUMED received).
fn health_of(state: Option<(ConnectionStage, Option<Duration>)>) -> Health {
    match state {
        Some((ConnectionStage::Connected, Some(latency))) => Health::ready(format!(
            "gateway connected; heartbeat round trip {} ms",
            latency.as_millis()
        )),
        Some((ConnectionStage::Connected, None)) => Health::ready("gateway connected"),
        Some((stage, _)) => not_ready(format!("gateway {stage}; reconnecting")),
        None => not_ready("gateway disconnected; shard restarting"),
    }
}

/// serenity's event handler: take a place in the buffer, translate, fill it; nothing else.
struct Handler {
    inner: Arc<Inner>,
    arrivals: Arc<Arrivals>,
}

#[async_trait]
impl EventHandler for Handler {
    async fn ready(&self, ctx: Context, ready: Ready) {
        self.arrivals.watch(ctx.shard_id.0, &ctx.shard);
        tracing::info!(channel = %self.inner.name, bot = %ready.user.name, "Discord gateway session started (READY)");
        self.inner
            .observe_gateway(Health::ready("gateway connected"));
    }

    async fn resume(&self, _ctx: Context, _event: ResumedEvent) {
        tracing::info!(channel = %self.inner.name, "Discord gateway session resumed");
        self.inner
            .observe_gateway(Health::ready("gateway connected (resumed)"));
    }

    async fn message(&self, _ctx: Context, msg: Message) {
        // The place was taken when the event arrived (or is taken now, before anything else
        // awaits), so events keep their order.
        let Some(slot) = self.arrivals.place(msg.id.get()).await else {
            return; // stopping
        };
        on_message(&self.inner, slot, &msg).await;
    }

    async fn interaction_create(&self, _ctx: Context, interaction: Interaction) {
        if let Interaction::Component(press) = interaction {
            let slot = self.arrivals.place(press.id.get()).await;
            on_press(&self.inner, slot, &press).await;
        }
    }
}

async fn on_message(inner: &Inner, slot: Slot, msg: &Message) {
    let Some(bot_id) = inner.bot_id() else {
        return; // start() learns the id before the gateway runs; nothing arrives earlier
    };
    let channel = msg.channel_id.to_string();
    let parent = inner
        .parent_if_needed(msg.guild_id.is_some(), &channel)
        .await;
    let ctx = Normalise {
        name: &inner.name,
        config: &inner.config,
        bot_id,
    };
    match message_verdict(&ctx, msg, parent.as_deref()) {
        // Stored in turn by the buffer's writer, however long the store is down.
        Triage::Deliver(event) => slot.put(*event),
        Triage::Ignore(reason) => {
            tracing::trace!(channel = %inner.name, reason, "ignored a Discord message")
        }
        Triage::RefusedPlace(place) => {
            tracing::debug!(channel = %inner.name, place, "ignored a message outside allowed_guilds/allowed_channels");
        }
    }
}

async fn on_press(inner: &Inner, slot: Option<Slot>, press: &ComponentInteraction) {
    let token = PressToken {
        interaction_id: press.id.to_string(),
        application_id: press.application_id.to_string(),
        token: press.token.clone(),
    };
    // Registered first, so the 3-second guard covers everything below.
    if !inner
        .presses
        .received(&token, press.message.content.clone())
    {
        return;
    }
    let (Some(bot_id), Some(slot)) = (inner.bot_id(), slot) else {
        return inner.presses.answer_now(&token, None).await;
    };
    let channel = press.channel_id.to_string();
    let parent = inner
        .parent_if_needed(press.guild_id.is_some(), &channel)
        .await;
    let ctx = Normalise {
        name: &inner.name,
        config: &inner.config,
        bot_id,
    };
    match press_verdict(&ctx, press, parent.as_deref()) {
        // The 3-second guard answers for us while the press waits in the buffer.
        Triage::Deliver(event) => match slot.put_and_wait(*event).await {
            // The core did not let them in: only they see why, and the buttons stay.
            Some(Delivery::Refused) => {
                inner.presses.answer_now(&token, Some(REFUSED_NOTICE)).await;
            }
            Some(_) => {}
            None => {
                inner
                    .presses
                    .answer_now(&token, Some(NOT_STORED_NOTICE))
                    .await;
            }
        },
        Triage::Ignore(_) => inner.presses.answer_now(&token, None).await,
        Triage::RefusedPlace(_) => inner.presses.answer_now(&token, Some(REFUSED_NOTICE)).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_connected_shard_is_ready() {
        assert!(health_of(Some((ConnectionStage::Connected, None))).ready);
        let with_latency = health_of(Some((
            ConnectionStage::Connected,
            Some(Duration::from_millis(42)),
        )));
        assert!(with_latency.ready && with_latency.detail.contains("42 ms"));
        for stage in [
            ConnectionStage::Resuming,
            ConnectionStage::Connecting,
            ConnectionStage::Disconnected,
        ] {
            let health = health_of(Some((stage, None)));
            assert!(
                !health.ready && health.detail.contains(&stage.to_string()),
                "{health:?}"
            );
        }
        assert!(!health_of(None).ready);
    }

    #[test]
    fn the_intents_are_messages_and_their_content_only() {
        let want = GatewayIntents::GUILD_MESSAGES
            | GatewayIntents::DIRECT_MESSAGES
            | GatewayIntents::MESSAGE_CONTENT;
        assert_eq!(intents(), want);
        assert!(!intents().contains(GatewayIntents::GUILD_PRESENCES));
    }
}
