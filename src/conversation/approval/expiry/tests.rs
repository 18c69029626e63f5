//! Expiry on paused and injected time: deadlines are read from the clock, nothing sleeps
//! for real.

use std::sync::Mutex;

use async_trait::async_trait;
use switchboard_channel::{ConversationKey, Delivery, SinkError};
use switchboard_standins::eventually;

use super::*;
use crate::ids::ApprovalStatus;

fn approval(id: &str, expires_at: i64) -> Approval {
    Approval {
        id: ApprovalId::new(id),
        conversation: ConversationKey::new("fake", "c1"),
        tool: "shell".into(),
        args: "touch x".into(),
        rule: "shell(touch x)".into(),
        reason: "mode guarded: `touch x` is not read-only".into(),
        requester: "alice".into(),
        status: ApprovalStatus::Pending,
        decided_by: None,
        prompt_ref: None,
        state: "{}".into(),
        created_at: expires_at - 300_000,
        expires_at,
    }
}

/// Records what was delivered and when (on the clock), or refuses the first `fail` events.
struct Recording {
    clock: Clock,
    got: Mutex<Vec<(String, i64)>>,
    fail: Mutex<usize>,
}

#[async_trait]
impl EventSink for Recording {
    async fn deliver(&self, event: ChannelEvent) -> Result<Delivery, SinkError> {
        let mut fail = self.fail.lock().unwrap();
        if *fail > 0 {
            *fail -= 1;
            return Err(SinkError("database down".into()));
        }
        let at = self.clock.now_ms();
        self.got
            .lock()
            .unwrap()
            .push((event.event_id().to_owned(), at));
        Ok(Delivery::Stored)
    }
}

fn expiries(clock: &Clock) -> (mpsc::UnboundedSender<Approval>, Expiries) {
    let (tx, rx) = mpsc::unbounded_channel();
    (tx, Expiries::new(rx, clock.clone()))
}

#[test]
fn only_approvals_whose_deadline_has_passed_are_taken() {
    let (_tx, mut queue) = expiries(&Clock::manual(0));
    queue.push(approval("late", 30));
    queue.push(approval("early", 10));
    queue.push(approval("same", 20));
    queue.push(approval("also", 20));
    assert!(queue.take_due(9).is_empty());
    let ids = |v: Vec<Approval>| v.into_iter().map(|a| a.id.to_string()).collect::<Vec<_>>();
    assert_eq!(ids(queue.take_due(20)), ["early", "also", "same"]);
    assert_eq!(ids(queue.take_due(1_000)), ["late"]);
    assert!(queue.take_due(i64::MAX - 1).is_empty());
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_approval_expires_at_its_deadline_on_paused_time() {
    let clock = Clock::tokio();
    let sink = Arc::new(Recording {
        clock: clock.clone(),
        got: Mutex::new(Vec::new()),
        fail: Mutex::new(0),
    });
    let (tx, queue) = expiries(&clock);
    let deadline = clock.now_ms() + 300_000;
    tx.send(approval("a1", deadline)).unwrap();
    tx.send(approval("a2", deadline + 60_000)).unwrap();
    let stop = CancellationToken::new();
    let task = tokio::spawn(queue.run(sink.clone(), stop.clone()));
    tokio::time::advance(Duration::from_secs(299)).await;
    tokio::task::yield_now().await;
    assert!(
        sink.got.lock().unwrap().is_empty(),
        "not before its deadline"
    );
    tokio::time::sleep(Duration::from_secs(120)).await;
    let got = sink.got.lock().unwrap().clone();
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].0, "expire:a1");
    assert!((deadline..deadline + 1_000).contains(&got[0].1), "{got:?}");
    assert_eq!(got[1].0, "expire:a2");
    assert!(got[1].1 >= deadline + 60_000);
    stop.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_expiry_the_inbox_refused_is_offered_again() {
    let clock = Clock::tokio();
    let sink = Arc::new(Recording {
        clock: clock.clone(),
        got: Mutex::new(Vec::new()),
        fail: Mutex::new(1),
    });
    let (tx, queue) = expiries(&clock);
    let deadline = clock.now_ms() + 1_000;
    tx.send(approval("a1", deadline)).unwrap();
    drop(tx);
    // With no more approvals coming, the loop ends once the retried event is delivered.
    queue.run(sink.clone(), CancellationToken::new()).await;
    let got = sink.got.lock().unwrap().clone();
    assert_eq!(got.len(), 1);
    assert!(got[0].1 >= deadline + RETRY.as_millis() as i64, "{got:?}");
}

#[tokio::test]
async fn a_manual_clock_expires_approvals_when_the_test_moves_it() {
    let clock = Clock::manual(1_000_000);
    let sink = Arc::new(Recording {
        clock: clock.clone(),
        got: Mutex::new(Vec::new()),
        fail: Mutex::new(0),
    });
    let (tx, queue) = expiries(&clock);
    tx.send(approval("a1", 1_300_000)).unwrap();
    let stop = CancellationToken::new();
    let task = tokio::spawn(queue.run(sink.clone(), stop.clone()));
    tokio::task::yield_now().await;
    clock.advance(Duration::from_secs(299));
    tokio::task::yield_now().await;
    assert!(sink.got.lock().unwrap().is_empty());
    clock.advance(Duration::from_secs(1));
    let got = eventually(Duration::from_secs(5), "the expiry", async || {
        let got = sink.got.lock().unwrap().clone();
        if got.is_empty() { Err(()) } else { Ok(got) }
    })
    .await;
    assert_eq!(got, [("expire:a1".to_owned(), 1_300_000)]);
    stop.cancel();
    task.await.unwrap();
}
