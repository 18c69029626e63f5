//! The scheduler's step ([`Schedules::tick`]) against the real inbox: every offered fire is
//! inserted as the gateway's sink would, so "exactly once" is checked where it is kept, by
//! the inbox's unique event key.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use switchboard::clock::Clock;
use switchboard::config::SchedulerConfig;
use switchboard::ids::InboxKind;
use switchboard::schedule::ticker::{Tick, event_id, fire_event};
use switchboard::schedule::when::parse_instant;
use switchboard::schedule::{Request, Schedules};
use switchboard::store::{Insert, Store};
use switchboard_channel::{ChannelEvent, ConversationKey, Delivery, EventSink, SinkError};

use crate::store_contract::on_both_databases;

/// The inbox as the ticker sees it: each event inserted (deduplicated by its id) and the
/// outcome recorded.
struct InboxSink {
    store: Arc<dyn Store>,
    stored: Mutex<Vec<String>>,
    duplicates: Mutex<usize>,
}

impl InboxSink {
    fn new(store: &Arc<dyn Store>) -> Arc<Self> {
        Arc::new(Self {
            store: Arc::clone(store),
            stored: Mutex::new(Vec::new()),
            duplicates: Mutex::new(0),
        })
    }

    fn stored(&self) -> Vec<String> {
        self.stored.lock().unwrap().clone()
    }
}

#[async_trait]
impl EventSink for InboxSink {
    async fn deliver(&self, event: ChannelEvent) -> Result<Delivery, SinkError> {
        let inserted = self.store.insert_event(&event, InboxKind::Message, 0).await;
        match inserted.map_err(|e| SinkError(e.to_string()))? {
            Insert::Stored(_) => {
                self.stored
                    .lock()
                    .unwrap()
                    .push(event.event_id().to_owned());
                Ok(Delivery::Stored)
            }
            Insert::Duplicate => {
                *self.duplicates.lock().unwrap() += 1;
                Ok(Delivery::Duplicate)
            }
        }
    }
}

fn at(text: &str) -> i64 {
    parse_instant(text).unwrap()
}

fn settings(grace_secs: u64) -> SchedulerConfig {
    SchedulerConfig {
        grace_secs,
        ..SchedulerConfig::default()
    }
}

/// A scheduler over `store` whose clock starts at `start` (a new one is a restart).
fn scheduler(store: &Arc<dyn Store>, start: i64) -> (Arc<Schedules>, Clock) {
    let clock = Clock::manual(start);
    (
        Schedules::new(settings(15 * 60), store.clone(), clock.clone()),
        clock,
    )
}

fn once(prompt: &str, when: &str) -> Request {
    Request {
        prompt: prompt.into(),
        at: Some(when.into()),
        ..Request::default()
    }
}

fn every(cron: &str, zone: &str) -> Request {
    Request {
        prompt: "report".into(),
        cron: Some(cron.into()),
        zone: Some(zone.into()),
        ..Request::default()
    }
}

fn key() -> ConversationKey {
    ConversationKey::new("fake", "sched")
}

async fn tick_at(s: &Schedules, sink: &InboxSink, now: i64) -> Tick {
    s.tick(sink, now).await.expect("tick")
}

#[tokio::test]
async fn a_one_shot_reminder_fires_once_at_its_time() {
    on_both_databases(|store| async move {
        let t0 = at("2026-12-01T08:00:00Z");
        let (s, _) = scheduler(&store, t0);
        let job = s
            .create(&key(), once("call the bank", "2026-12-01T10:00:00+01:00"))
            .await
            .unwrap();
        let sink = InboxSink::new(&store);
        assert_eq!(
            tick_at(&s, &sink, t0 + 59_999).await.fired,
            0,
            "not before its time"
        );
        assert_eq!(tick_at(&s, &sink, t0 + 60_000 * 60).await.fired, 1);
        assert_eq!(tick_at(&s, &sink, t0 + 60_000 * 61).await.fired, 0);
        assert_eq!(sink.stored(), vec![event_id(job.id, t0 + 3_600_000)]);
        assert!(
            s.list(&key()).await.unwrap().is_empty(),
            "a fired one-shot is finished"
        );
    })
    .await;
}

#[tokio::test]
async fn a_restart_before_the_fire_still_fires_it_once() {
    on_both_databases(|store| async move {
        let t0 = at("2026-12-01T08:00:00Z");
        let (before, _) = scheduler(&store, t0);
        before
            .create(&key(), once("stretch", "2026-12-01T08:10:00Z"))
            .await
            .unwrap();
        drop(before);
        let (after, _) = scheduler(&store, t0 + 5 * 60_000);
        let sink = InboxSink::new(&store);
        assert_eq!(tick_at(&after, &sink, t0 + 5 * 60_000).await.fired, 0);
        let tick = tick_at(&after, &sink, t0 + 10 * 60_000).await;
        assert_eq!((tick.fired, tick.notices.len()), (1, 0));
        assert_eq!(sink.stored().len(), 1);
    })
    .await;
}

#[tokio::test]
async fn a_restart_right_after_the_fire_does_not_fire_it_again() {
    on_both_databases(|store| async move {
        let t0 = at("2026-12-01T08:00:00Z");
        let due = t0 + 60_000;
        let (first, _) = scheduler(&store, t0);
        let job = first
            .create(&key(), once("stretch", "2026-12-01T08:01:00Z"))
            .await
            .unwrap();
        // The first process offered the fire and died before moving the job on.
        let sink = InboxSink::new(&store);
        sink.deliver(fire_event(&job, due)).await.unwrap();
        drop(first);
        let (second, _) = scheduler(&store, due + 2_000);
        let tick = tick_at(&second, &sink, due + 2_000).await;
        assert_eq!(
            *sink.duplicates.lock().unwrap(),
            1,
            "offered again, dropped by the inbox"
        );
        assert!(tick.notices.is_empty(), "{tick:?}");
        assert_eq!(
            sink.stored(),
            vec![event_id(job.id, due)],
            "in the inbox once"
        );
        assert_eq!(tick_at(&second, &sink, due + 60_000).await.fired, 0);
        // Restarting much later (past the grace window) does not call it missed either.
        let (store2, sink2) = (Arc::clone(&store), InboxSink::new(&store));
        let (late, _) = scheduler(&store2, t0);
        let job2 = late
            .create(&key(), once("b", "2026-12-01T08:02:00Z"))
            .await
            .unwrap();
        sink2
            .deliver(fire_event(&job2, t0 + 120_000))
            .await
            .unwrap();
        let tick = tick_at(&late, &sink2, t0 + 3_600_000).await;
        assert!(tick.notices.is_empty(), "it ran before the crash: {tick:?}");
    })
    .await;
}

#[tokio::test]
async fn a_job_every_five_minutes_fires_three_times_in_fifteen_minutes() {
    on_both_databases(|store| async move {
        let t0 = at("2026-06-01T10:00:30Z");
        let (s, _) = scheduler(&store, t0);
        let job = s.create(&key(), every("*/5 * * * *", "UTC")).await.unwrap();
        let sink = InboxSink::new(&store);
        for minute in 0..=15 {
            tick_at(&s, &sink, t0 + minute * 60_000).await;
        }
        let expected: Vec<String> = ["10:05", "10:10", "10:15"]
            .iter()
            .map(|hm| event_id(job.id, at(&format!("2026-06-01T{hm}:00Z"))))
            .collect();
        assert_eq!(sink.stored(), expected);
    })
    .await;
}

/// Fire times of a daily 02:30 Europe/Berlin job over four days from `start`, ticking
/// every 10 minutes.
async fn berlin_0230_fires(store: Arc<dyn Store>, start: &str) -> Vec<i64> {
    let t0 = at(start);
    let (s, _) = scheduler(&store, t0);
    let job = s
        .create(&key(), every("30 2 * * *", "Europe/Berlin"))
        .await
        .unwrap();
    let sink = InboxSink::new(&store);
    for step in 0..(4 * 24 * 6) {
        tick_at(&s, &sink, t0 + step * 600_000).await;
    }
    let prefix = format!("schedule:{}:", job.id);
    sink.stored()
        .iter()
        .map(|id| id.strip_prefix(&prefix).unwrap().parse().unwrap())
        .collect()
}

#[tokio::test]
async fn a_daily_0230_job_runs_at_0300_once_on_the_spring_forward_day() {
    on_both_databases(|store| async move {
        let fires = berlin_0230_fires(store, "2026-03-27T12:00:00+01:00").await;
        let expected = [
            "2026-03-28T02:30:00+01:00",
            "2026-03-29T03:00:00+02:00", // 02:30 does not exist: the first time after the gap
            "2026-03-30T02:30:00+02:00",
            "2026-03-31T02:30:00+02:00",
        ];
        assert_eq!(fires, expected.map(at));
    })
    .await;
}

#[tokio::test]
async fn a_daily_0230_job_runs_once_on_the_fall_back_day() {
    on_both_databases(|store| async move {
        let fires = berlin_0230_fires(store, "2026-10-23T12:00:00+02:00").await;
        let expected = [
            "2026-10-24T02:30:00+02:00",
            "2026-10-25T02:30:00+02:00", // the first of the two 02:30s, and only that one
            "2026-10-26T02:30:00+01:00",
            "2026-10-27T02:30:00+01:00",
        ];
        assert_eq!(fires, expected.map(at));
    })
    .await;
}

#[tokio::test]
async fn a_fire_missed_in_downtime_runs_inside_the_grace_window_and_is_skipped_outside_it() {
    on_both_databases(|store| async move {
        let t0 = at("2026-12-01T08:00:00Z");
        let (s, _) = scheduler(&store, t0);
        let late = s
            .create(&key(), once("water the plants", "2026-12-01T09:00:00Z"))
            .await
            .unwrap();
        let stale = s
            .create(&key(), once("feed the cat", "2026-12-01T08:30:00Z"))
            .await
            .unwrap();
        // Down from 08:00 to 09:10: 09:00 is 10 min old (runs), 08:30 is 40 min old (skipped).
        let sink = InboxSink::new(&store);
        let tick = tick_at(&s, &sink, at("2026-12-01T09:10:00Z")).await;
        assert_eq!(
            sink.stored(),
            vec![event_id(late.id, at("2026-12-01T09:00:00Z"))]
        );
        assert_eq!(tick.notices.len(), 1, "{tick:?}");
        let notice = &tick.notices[0];
        assert_eq!(notice.key, key());
        assert!(
            notice.text.contains(&format!("#{}", stale.id)) && notice.text.contains("skipped"),
            "{}",
            notice.text
        );
        assert!(
            tick_at(&s, &sink, at("2026-12-01T09:20:00Z"))
                .await
                .notices
                .is_empty(),
            "told once"
        );
        assert!(s.list(&key()).await.unwrap().is_empty());
    })
    .await;
}

#[tokio::test]
async fn an_hourly_job_after_five_hours_down_runs_once_and_reports_the_rest() {
    on_both_databases(|store| async move {
        let t0 = at("2026-12-01T07:30:00Z");
        let (s, clock) = scheduler(&store, t0);
        let job = s.create(&key(), every("0 * * * *", "UTC")).await.unwrap();
        // Down from 07:30 to 13:05: runs due 08:00 to 13:00; only 13:00 is within grace.
        clock.advance(Duration::from_secs(5 * 3600 + 35 * 60));
        let sink = InboxSink::new(&store);
        let tick = tick_at(&s, &sink, clock.now_ms()).await;
        assert_eq!(
            sink.stored(),
            vec![event_id(job.id, at("2026-12-01T13:00:00Z"))]
        );
        let text = &tick.notices[0].text;
        assert!(text.contains("missed 5 runs"), "{text}");
        let listed = s.list(&key()).await.unwrap();
        assert_eq!(listed[0].next_fire_at, Some(at("2026-12-01T14:00:00Z")));
    })
    .await;
}

#[tokio::test]
async fn limits_and_bad_times_are_refused_with_a_reason() {
    on_both_databases(|store| async move {
        let t0 = at("2026-12-01T08:00:00Z");
        let clock = Clock::manual(t0);
        let config = SchedulerConfig {
            max_per_conversation: 2,
            ..SchedulerConfig::default()
        };
        let s = Schedules::new(config, store.clone(), clock);
        let refused = |r: Result<_, switchboard::schedule::Refusal>| r.unwrap_err().to_string();
        let past = refused(s.create(&key(), once("x", "2026-12-01T07:00:00Z")).await);
        assert!(past.contains("passed"), "{past}");
        let naive = refused(s.create(&key(), once("x", "2026-12-01T09:00:00")).await);
        assert!(naive.contains("RFC 3339"), "{naive}");
        let often = refused(s.create(&key(), every("* * * * *", "UTC")).await);
        assert!(often.contains("shortest interval"), "{often}");
        let zone = refused(s.create(&key(), every("0 9 * * *", "Nowhere/Land")).await);
        assert!(zone.contains("unknown time zone"), "{zone}");
        s.create(&key(), once("a", "2026-12-01T09:00:00Z"))
            .await
            .unwrap();
        s.create(&key(), every("0 9 * * *", "UTC")).await.unwrap();
        let full = refused(s.create(&key(), once("c", "2026-12-01T10:00:00Z")).await);
        assert!(full.contains("already has 2"), "{full}");
        let other = ConversationKey::new("fake", "other");
        s.create(&other, once("d", "2026-12-01T10:00:00Z"))
            .await
            .unwrap();
        assert!(
            !s.cancel(&other, s.list(&key()).await.unwrap()[0].id)
                .await
                .unwrap(),
            "not its job"
        );
    })
    .await;
}
