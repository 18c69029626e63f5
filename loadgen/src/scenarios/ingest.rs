//! Webhook ingest: signed Slack events with distinct event ids, POSTed by many concurrent
//! connections; 200s per second and p99 latency. The events go to a few conversations whose
//! LLM call stalls, so the gateway does only what precedes the 200 (verify, parse, store,
//! wake) and no turn competes for the CPU. The same client then hammers a bare axum
//! handler in this process, on its own runtime, for the ratio the design asks for.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::http::StatusCode;
use axum::routing::post;
use switchboard_standins::Reply;
use switchboard_standins::slack::FAKE_SIGNING_SECRET;

use super::{Env, launch, note};
use crate::report::{Measurement, Target};
use crate::slack_load::{Dm, Hammered, MakeRequest, events_url, hammer};
use crate::stats::percentile;

const NAME: &str = "ingest";
/// Unmeasured load before each measured window.
const WARMUP: Duration = Duration::from_secs(1);

/// One run.
pub async fn run(env: &Env) -> anyhow::Result<Vec<Measurement>> {
    let s = &env.settings;
    let window = Duration::from_secs_f64(s.ingest_secs);
    let running = launch(env, 300).await?;
    let k = s.ingest_conversations.max(1);
    for _ in 0..k * 2 {
        running
            .stands
            .llm
            .push(Reply::Stall(Duration::from_secs(600)));
    }
    let url = events_url(&running.gateway.base_url());
    let gateway_make = |tag: char| requests(&env.client, &url, tag, k);
    hammer(s.ingest_workers, WARMUP, gateway_make('x')).await;
    let stored_before = stored(&running).await?;
    let gw = hammer(s.ingest_workers, window, gateway_make('y')).await;
    let stored_during = stored(&running).await? - stored_before;
    drop(running);

    let bare = BareServer::start()?;
    let bare_url = format!("http://{}/slack/slack/events", bare.addr);
    hammer(
        s.ingest_workers,
        WARMUP,
        requests(&env.client, &bare_url, 'x', k),
    )
    .await;
    let axum = hammer(
        s.ingest_workers,
        window,
        requests(&env.client, &bare_url, 'y', k),
    )
    .await;
    drop(bare);

    let ratio = gw.ok_rate() / axum.ok_rate() * 100.0;
    note(format!(
        "{NAME}: gateway {:.0}/s ({} failed, {stored_during} stored, per second {:?}), bare axum {:.0}/s, ratio {ratio:.1}%",
        gw.ok_rate(),
        gw.failures,
        gw.ok_per_second,
        axum.ok_rate()
    ));
    Ok(vec![
        Measurement::new(
            NAME,
            "signed events stored before 200, per second",
            "events/s",
            gw.ok_rate(),
        )
        .target(Target::AtLeast(10_000.0)),
        Measurement::new(NAME, "gateway p99 latency", "ms", p99(&gw)),
        Measurement::new(
            NAME,
            "gateway responses other than 200",
            "",
            gw.failures as f64,
        ),
        Measurement::new(
            NAME,
            "bare axum handler, same client, per second",
            "req/s",
            axum.ok_rate(),
        ),
        Measurement::new(NAME, "bare axum p99 latency", "ms", p99(&axum)),
        Measurement::new(NAME, "gateway / bare axum", "%", ratio).target(Target::AtLeast(50.0)),
    ])
}

fn p99(h: &Hammered) -> f64 {
    percentile(&h.ok_latency_ms, 99.0).unwrap_or(f64::NAN)
}

/// Events from `k` conversations (replies in `k` threads), each with its own event id.
fn requests(client: &reqwest::Client, url: &str, tag: char, k: u64) -> MakeRequest {
    let (client, url) = (client.clone(), url.to_owned());
    Arc::new(move |n| {
        let root = Dm::first('i', n % k);
        let dm = Dm {
            event_id: format!("Ev{tag}{n:012}"),
            ts: format!("1700000300.{n:06}"),
            thread_ts: Some(root.ts.clone()),
            ..root
        };
        dm.signed().build(&client, &url, FAKE_SIGNING_SECRET)
    })
}

/// The inbound count the gateway reports as stored.
async fn stored(running: &super::Running) -> anyhow::Result<f64> {
    running
        .gateway
        .metric("switchboard_inbound_events_total", "outcome=\"stored\"")
        .await
}

/// A trivial axum route answering 200 after reading the body, served by a 2-thread runtime
/// of its own (as the gateway has), stopped on drop.
struct BareServer {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl BareServer {
    fn start() -> anyhow::Result<Self> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        std::thread::spawn(move || {
            runtime.block_on(async move {
                let app = Router::new().route(
                    "/slack/slack/events",
                    post(|_: Bytes| async { StatusCode::OK }),
                );
                let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                    return;
                };
                // Not graceful: the client's idle keep-alive connections would hold it open.
                // Nagle off, as the gateway's own server has it.
                let listener = switchboard_standins::no_delay(listener);
                tokio::select! {
                    _ = axum::serve(listener, app) => {}
                    _ = stopped => {}
                }
            });
        });
        Ok(Self {
            addr,
            stop: Some(stop),
        })
    }
}

impl Drop for BareServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
