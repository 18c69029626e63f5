//! Slack traffic: signed Events API direct messages with distinct event ids, sent at a fixed
//! rate (open loop: a slow answer never slows the sender) or by a fixed number of workers as
//! fast as they are answered (closed loop: for a duration, or a fixed count as a burst), plus matching each message to the first Web API
//! call the gateway made in its channel.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use switchboard_standins::slack::{
    FAKE_SIGNING_SECRET, FakeSlack, SignedRequest, SlackMessage, dm_event,
};
use tokio::sync::Semaphore;

/// Requests in flight at once in an open-loop run; beyond it the sender waits (and the
/// achieved rate, which is reported, drops below the asked one).
const MAX_IN_FLIGHT: usize = 2_048;

/// One direct message to the bot.
#[derive(Clone, Debug)]
pub struct Dm {
    /// Slack's event id (distinct per delivery).
    pub event_id: String,
    /// Channel id; distinct channels are distinct conversations.
    pub channel: String,
    /// The message's ts.
    pub ts: String,
    /// Set to reply in a thread under that message (in a DM, a conversation of its own).
    pub thread_ts: Option<String>,
}

impl Dm {
    /// The first message of conversation `n` in a run tagged `tag` (one letter).
    pub fn first(tag: char, n: u64) -> Self {
        Self {
            event_id: format!("Ev{tag}{n:010}"),
            channel: format!("D{tag}{n:09}"),
            ts: format!("1700000100.{n:06}"),
            thread_ts: None,
        }
    }

    /// The signed Events API request Slack would send for it.
    pub fn signed(&self) -> SignedRequest {
        SignedRequest::event(&dm_event(&SlackMessage {
            event_id: &self.event_id,
            user: "U0LOADGEN",
            channel: &self.channel,
            text: "hello from the load harness",
            ts: &self.ts,
            thread_ts: self.thread_ts.as_deref(),
        }))
    }
}

/// One request of a run.
#[derive(Clone, Debug)]
pub struct Sent {
    /// The channel it was for.
    pub channel: String,
    /// When it was handed to the client.
    pub at: Instant,
    /// HTTP status (None: transport error).
    pub status: Option<u16>,
}

/// `/slack/slack/events` of the gateway at `base`.
pub fn events_url(base: &str) -> String {
    format!("{base}/slack/slack/events")
}

/// Send `count` messages made by `make`, message `i` at `start + i / rate`.
pub async fn send_at_rate(
    client: &reqwest::Client,
    url: &str,
    count: u64,
    rate: f64,
    make: impl Fn(u64) -> Dm,
) -> Vec<Sent> {
    send_spread(client, &[url.to_owned()], count, rate, make).await
}

/// [`send_at_rate`] with message `i` sent to `urls[i % urls.len()]` (several replicas).
pub async fn send_spread(
    client: &reqwest::Client,
    urls: &[String],
    count: u64,
    rate: f64,
    make: impl Fn(u64) -> Dm,
) -> Vec<Sent> {
    if urls.is_empty() {
        return Vec::new();
    }
    let slots = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    let start = tokio::time::Instant::now();
    let mut tasks = Vec::with_capacity(count as usize);
    for i in 0..count {
        let due = start + Duration::from_secs_f64(i as f64 / rate);
        if tokio::time::Instant::now() < due {
            tokio::time::sleep_until(due).await;
        }
        let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
            break;
        };
        let dm = make(i);
        let url = &urls[(i % urls.len() as u64) as usize];
        let request = dm.signed().build(client, url, FAKE_SIGNING_SECRET);
        tasks.push(tokio::spawn(async move {
            let at = Instant::now();
            let answer = request.send().await;
            drop(slot);
            Sent {
                channel: dm.channel,
                at,
                status: answer.ok().map(|r| r.status().as_u16()),
            }
        }));
    }
    let mut sent = Vec::with_capacity(tasks.len());
    for task in tasks {
        if let Ok(s) = task.await {
            sent.push(s);
        }
    }
    sent
}

/// Send `count` messages made by `make` from `workers` concurrent senders, each sending its
/// next message as soon as the previous one was answered (a burst: as fast as the gateway
/// acknowledges).
pub async fn send_by_workers(
    client: &reqwest::Client,
    url: &str,
    count: u64,
    workers: usize,
    make: impl Fn(u64) -> Dm + Send + Sync + 'static,
) -> Vec<Sent> {
    let next = Arc::new(AtomicU64::new(0));
    let make = Arc::new(make);
    let mut tasks = Vec::with_capacity(workers);
    for _ in 0..workers.max(1) {
        let (next, make) = (Arc::clone(&next), Arc::clone(&make));
        let (client, url) = (client.clone(), url.to_owned());
        tasks.push(tokio::spawn(async move {
            let mut sent = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    return sent;
                }
                let dm = make(i);
                let request = dm.signed().build(&client, &url, FAKE_SIGNING_SECRET);
                let at = Instant::now();
                let answer = request.send().await;
                sent.push(Sent {
                    channel: dm.channel,
                    at,
                    status: answer.ok().map(|r| r.status().as_u16()),
                });
            }
        }));
    }
    let mut sent = Vec::with_capacity(count as usize);
    for task in tasks {
        sent.extend(task.await.unwrap_or_default());
    }
    sent
}

/// Builds request number `n` of a closed-loop run.
pub type MakeRequest = Arc<dyn Fn(u64) -> reqwest::RequestBuilder + Send + Sync>;

/// What a closed-loop run saw.
#[derive(Debug, Default)]
pub struct Hammered {
    /// 200s answered in each whole second of the run.
    pub ok_per_second: Vec<u64>,
    /// Latency of every 200, in ms.
    pub ok_latency_ms: Vec<f64>,
    /// Responses other than 200, and transport errors.
    pub failures: u64,
    /// Measured duration.
    pub elapsed: Duration,
}

impl Hammered {
    /// 200s per second over the whole run.
    pub fn ok_rate(&self) -> f64 {
        self.ok_latency_ms.len() as f64 / self.elapsed.as_secs_f64()
    }
}

/// `workers` loops, each sending `make(n)` and waiting for the answer, for `duration`.
pub async fn hammer(workers: usize, duration: Duration, make: MakeRequest) -> Hammered {
    let next = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(workers);
    for _ in 0..workers {
        let (next, make) = (Arc::clone(&next), Arc::clone(&make));
        tasks.push(tokio::spawn(async move {
            let mut seen = Vec::new();
            while start.elapsed() < duration {
                let request = make(next.fetch_add(1, Ordering::Relaxed));
                let at = Instant::now();
                let ok = request.send().await.is_ok_and(|r| r.status() == 200);
                seen.push((at.elapsed(), start.elapsed(), ok));
            }
            seen
        }));
    }
    let mut out = Hammered::default();
    for task in tasks {
        for (latency, done, ok) in task.await.unwrap_or_default() {
            if !ok {
                out.failures += 1;
                continue;
            }
            // Only answers that finished inside the window count towards the rate.
            if done > duration {
                continue;
            }
            let second = done.as_secs() as usize;
            if out.ok_per_second.len() <= second {
                out.ok_per_second.resize(second + 1, 0);
            }
            out.ok_per_second[second] += 1;
            out.ok_latency_ms.push(latency.as_secs_f64() * 1000.0);
        }
    }
    out.elapsed = duration;
    out
}

/// For each channel, when the gateway's first Web API call in it arrived at the fake.
pub fn first_calls(slack: &FakeSlack) -> HashMap<String, Instant> {
    let mut first: HashMap<String, Instant> = HashMap::new();
    for call in slack.calls() {
        let Some(channel) = call.body.get("channel").and_then(|c| c.as_str()) else {
            continue;
        };
        let at = call.at.into_std();
        first
            .entry(channel.to_owned())
            .and_modify(|t| *t = (*t).min(at))
            .or_insert(at);
    }
    first
}
