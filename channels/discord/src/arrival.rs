//! Places in the inbound buffer taken in the order events arrive. serenity runs each event's
//! handler on a task of its own, and tokio may start the later of two tasks first (a worker
//! runs the task it spawned last before the ones queued earlier), so a place taken inside the
//! handler can come out of order when two events arrive together. serenity calls collector
//! callbacks synchronously in the shard runner, in arrival order, before it spawns the
//! handlers: the place is taken there and the handler picks it up by the event's id. Events
//! that arrive before a shard's collector is registered (right after READY), or while the
//! buffer is full, fall back to a place taken in the handler.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use serenity::gateway::{CollectorCallback, ShardMessenger};
use serenity::model::application::Interaction;
use serenity::model::event::Event;

use crate::buffer::{InboundBuffer, Slot};

/// Places taken at arrival, waiting for their handler.
pub(crate) struct Arrivals {
    buffer: InboundBuffer,
    /// By message or interaction id (snowflakes: unique across both).
    waiting: Mutex<HashMap<u64, Slot>>,
    /// Each shard's current collector; an older one removes itself at its next event.
    generations: Mutex<HashMap<u32, u64>>,
}

impl Arrivals {
    pub(crate) fn new(buffer: InboundBuffer) -> Arc<Self> {
        Arc::new(Self {
            buffer,
            waiting: Mutex::default(),
            generations: Mutex::default(),
        })
    }

    /// Take places for `shard`'s events as they arrive (called on every READY; a collector
    /// from an earlier session of the same shard retires itself).
    pub(crate) fn watch(self: &Arc<Self>, shard_id: u32, shard: &ShardMessenger) {
        let generation = {
            let mut generations = lock(&self.generations);
            let next = generations.get(&shard_id).map_or(1, |g| g + 1);
            generations.insert(shard_id, next);
            next
        };
        let arrivals = Arc::downgrade(self);
        shard.add_collector(CollectorCallback(Box::new(move |event| {
            let Some(arrivals) = arrivals.upgrade() else {
                return false;
            };
            if lock(&arrivals.generations).get(&shard_id) != Some(&generation) {
                return false;
            }
            if let Some(id) = arrival_id(event) {
                arrivals.arrived(id);
            }
            true
        })));
    }

    /// The place taken for event `id` when it arrived, or the next place in line.
    pub(crate) async fn place(&self, id: u64) -> Option<Slot> {
        let taken = lock(&self.waiting).remove(&id);
        match taken {
            Some(slot) => Some(slot),
            None => self.buffer.reserve().await,
        }
    }

    fn arrived(&self, id: u64) {
        let mut waiting = lock(&self.waiting);
        if !waiting.contains_key(&id)
            && let Some(slot) = self.buffer.try_reserve()
        {
            waiting.insert(id, slot);
        }
    }
}

/// The id of an event whose handler takes a place: a new message or a button press.
fn arrival_id(event: &Event) -> Option<u64> {
    match event {
        Event::MessageCreate(e) => Some(e.message.id.get()),
        Event::InteractionCreate(e) => match &e.interaction {
            Interaction::Component(press) => Some(press.id.get()),
            _ => None,
        },
        _ => None,
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
