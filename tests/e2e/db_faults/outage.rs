//! PostgreSQL unreachable for a few seconds under Slack load (the proxy cuts every
//! connection): every acknowledgement is a 200 within 3 s or a 5xx (so Slack retries),
//! `/readyz` says 503 naming the database within a second and 200 again afterwards, and
//! once the 5xx events are retried every event is answered exactly once.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use switchboard_standins::slack::{FAKE_SIGNING_SECRET, SignedRequest, SlackMessage, dm_event};
use switchboard_standins::{TcpProxy, eventually, eventually_every};
use tokio::time::Instant;

use super::proxied;
use crate::app::{Table, TestApp};
use crate::helpers::{drop_postgres, postgres_url};

/// A gateway with one Slack channel (open to everyone) on the given database, and one HTTP
/// client for every request (as Slack keeps its connections).
pub struct SlackApp {
    pub gateway: TestApp,
    pub events_url: String,
    client: reqwest::Client,
}

impl SlackApp {
    /// Start on SQLite, or on the PostgreSQL `database_url` when given.
    pub async fn spawn(database_url: Option<&str>) -> Self {
        let mut builder = TestApp::builder().slack(Table::open());
        if let Some(url) = database_url {
            builder = builder.database(url);
        }
        let gateway = builder.start().await;
        Self {
            events_url: gateway.url("/slack/slack/events"),
            gateway,
            client: reqwest::Client::new(),
        }
    }

    /// Post a signed event (as Slack's `retry` when given); the status and how long the
    /// acknowledgement took.
    pub async fn post(&self, event: &Value, retry: Option<u32>) -> (u16, Duration) {
        let mut request = SignedRequest::event(event);
        if let Some(n) = retry {
            request = request.retry(n);
        }
        let started = Instant::now();
        let sent = request
            .build(&self.client, &self.events_url, FAKE_SIGNING_SECRET)
            .timeout(Duration::from_secs(20))
            .send()
            .await;
        let status = sent.map_or(0, |r| r.status().as_u16());
        (status, started.elapsed())
    }

    /// `/readyz`: status, body, and how long it took.
    async fn readyz(&self) -> (u16, Value, Duration) {
        let started = Instant::now();
        let url = self.gateway.url("/readyz");
        let reply = self
            .client
            .get(url)
            .timeout(Duration::from_secs(20))
            .send()
            .await
            .unwrap();
        let status = reply.status().as_u16();
        let body = reply.json().await.unwrap_or(Value::Null);
        (status, body, started.elapsed())
    }
}

const EVENTS: usize = 150;
const CONVERSATIONS: usize = 15;
/// About 30 events a second.
const EVERY: Duration = Duration::from_millis(33);
const CUT_AT: Duration = Duration::from_millis(1200);
const OUTAGE: Duration = Duration::from_secs(3);
/// How often `/readyz` is probed during and after the outage.
const PROBE_EVERY: Duration = Duration::from_millis(100);

/// One event of the load: its Slack message fields, owned.
struct Sent {
    event_id: String,
    channel: String,
    text: String,
    ts: String,
}

impl Sent {
    fn new(i: usize) -> Self {
        Self {
            event_id: format!("Ev{i:05}"),
            channel: format!("D{:03}", i % CONVERSATIONS),
            text: format!("message number {i}"),
            ts: format!("1700000100.{i:06}"),
        }
    }

    fn event(&self) -> Value {
        dm_event(&SlackMessage {
            event_id: &self.event_id,
            channel: &self.channel,
            text: &self.text,
            ts: &self.ts,
            ..SlackMessage::default()
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_postgres_is_away_acks_fail_fast_readyz_says_so_and_every_event_is_answered_once() {
    // The gateway's log, shown if this test fails (retries, refused acks, failed turns).
    let _ = tracing_subscriber::fmt()
        .with_env_filter("switchboard=debug,sqlx=warn")
        .with_test_writer()
        .try_init();
    let Some(url) = postgres_url().await else {
        return;
    };
    let (proxy, through) = proxied(&url).await;
    let app = Arc::new(SlackApp::spawn(Some(&through)).await);
    let sent: Arc<Vec<Sent>> = Arc::new((0..EVENTS).map(Sent::new).collect());
    let start = Instant::now();

    let load = tokio::spawn(send_all(Arc::clone(&app), Arc::clone(&sent), start));
    let probes = outage(&app, &proxy, start).await;
    let acks = load.await.unwrap();

    check_acks(&acks);
    check_probes(&probes);
    retry_refused(&app, &sent, &acks).await;
    check_answered_once(&app, &sent).await;
    drop_postgres(&url).await;
}

/// Post every event at its time, each on its own task; `(index, status, ack time)`.
async fn send_all(
    app: Arc<SlackApp>,
    sent: Arc<Vec<Sent>>,
    start: Instant,
) -> Vec<(usize, u16, Duration)> {
    let mut tasks = Vec::new();
    for i in 0..sent.len() {
        tokio::time::sleep_until(start + EVERY * i as u32).await;
        let (app, sent) = (Arc::clone(&app), Arc::clone(&sent));
        tasks.push(tokio::spawn(async move {
            let (status, took) = app.post(&sent[i].event(), None).await;
            (i, status, took)
        }));
    }
    let mut acks = Vec::new();
    for task in tasks {
        acks.push(task.await.unwrap());
    }
    acks
}

/// Cut the database at `CUT_AT` for `OUTAGE`, probing `/readyz` all along and until it is
/// ready again; `(time since the cut, status, body, probe time)` for each probe.
async fn outage(
    app: &SlackApp,
    proxy: &TcpProxy,
    start: Instant,
) -> Vec<(Duration, u16, Value, Duration)> {
    tokio::time::sleep_until(start + CUT_AT).await;
    proxy.cut();
    let cut = Instant::now();
    let mut probes = Vec::new();
    while cut.elapsed() < OUTAGE {
        let (status, body, took) = app.readyz().await;
        probes.push((cut.elapsed(), status, body, took));
        tokio::time::sleep(PROBE_EVERY).await;
    }
    proxy.restore();
    let what = "/readyz to answer 200 after the outage";
    eventually_every(Duration::from_secs(10), PROBE_EVERY, what, async || {
        let (status, body, took) = app.readyz().await;
        probes.push((cut.elapsed(), status, body.clone(), took));
        if status == 200 {
            Ok(())
        } else {
            Err((status, body))
        }
    })
    .await;
    probes
}

fn check_acks(acks: &[(usize, u16, Duration)]) {
    for (i, status, took) in acks {
        assert!(
            *status == 200 || *status >= 500,
            "event {i}: status {status}"
        );
        assert!(
            *took < Duration::from_secs(3),
            "event {i}: acknowledged ({status}) after {took:?}"
        );
    }
    let refused = acks.iter().filter(|a| a.1 >= 500).count();
    assert!(refused > 0, "the outage refused some events");
    assert!(refused < acks.len(), "events around the outage were stored");
}

fn check_probes(probes: &[(Duration, u16, Value, Duration)]) {
    for (at, status, _, took) in probes {
        assert!(
            *took < Duration::from_secs(1),
            "/readyz at {at:?} ({status}) took {took:?}"
        );
    }
    let (at, _, body, _) = probes
        .iter()
        .find(|p| p.1 == 503)
        .expect("/readyz said 503 during the outage");
    assert!(
        *at <= Duration::from_secs(1),
        "first 503 only {at:?} after the cut"
    );
    let database = body["checks"]
        .as_array()
        .and_then(|checks| checks.iter().find(|c| c["name"] == "database"))
        .expect("a database check");
    assert_eq!(database["ok"], false, "{body}");
    let last = probes.last().unwrap();
    assert_eq!(last.1, 200, "ready again after the outage: {}", last.2);
}

/// Retry every refused event as Slack would (up to 20 times, a quarter second apart),
/// until each is stored.
async fn retry_refused(app: &SlackApp, sent: &[Sent], acks: &[(usize, u16, Duration)]) {
    const RETRY_EVERY: Duration = Duration::from_millis(250);
    for (i, _, _) in acks.iter().filter(|a| a.1 != 200) {
        let mut n = 0;
        let what = format!("event {i} to be stored on a retry");
        eventually_every(RETRY_EVERY * 20, RETRY_EVERY, &what, async || {
            n += 1;
            let (status, _) = app.post(&sent[*i].event(), Some(n)).await;
            if status == 200 { Ok(()) } else { Err(status) }
        })
        .await;
    }
}

/// Every event gets exactly one answer in its thread, and the inbox ends with all done.
async fn check_answered_once(app: &SlackApp, sent: &[Sent]) {
    let answers = |s: &Sent| {
        let answer = format!("You said: {}", s.text);
        app.gateway
            .slack()
            .messages(&s.channel)
            .into_iter()
            .filter(|m| m.text.trim() == answer)
            .count()
    };
    eventually(
        Duration::from_secs(60),
        "an answer to every event",
        async || {
            let unanswered: Vec<&str> = sent
                .iter()
                .filter(|s| answers(s) == 0)
                .map(|s| s.event_id.as_str())
                .collect();
            if unanswered.is_empty() {
                Ok(())
            } else {
                Err(unanswered)
            }
        },
    )
    .await;
    // Anything answered twice would show by now.
    tokio::time::sleep(Duration::from_secs(1)).await;
    for s in sent {
        assert_eq!(
            answers(s),
            1,
            "event {} answered {} times",
            s.event_id,
            answers(s)
        );
    }
    let counts = app.gateway.store().inbox_counts().await.unwrap();
    assert_eq!(
        (
            counts.done,
            counts.failed,
            counts.pending + counts.processing
        ),
        (sent.len() as i64, 0, 0),
        "{counts:?}"
    );
}
