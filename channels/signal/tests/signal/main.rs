//! The Signal channel's receive loop against the signal-cli stand-in, delivering into a
//! `RecordingSink`: where the stream resumes after an event that was read but not stored,
//! within one run and across a gateway that died before storing it.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use switchboard_channel::{Channel, ChannelEvent, ConversationKey, EventSink};
use switchboard_signal::{SignalChannel, SignalConfig};
use switchboard_standins::signal::{FAKE_ACCOUNT, FakeSignal, Person};
use switchboard_standins::{RecordingSink, eventually};
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(10);

/// One channel's receive loop, stopped when dropped.
struct Running {
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    fn start(fake: &FakeSignal, data_dir: &Path, sink: Arc<RecordingSink>) -> Self {
        let mut config = SignalConfig::new(FAKE_ACCOUNT);
        config.daemon_url = fake.daemon_url();
        config.allowed_users = vec!["*".into()];
        config.dm_policy = Some(switchboard_channel::DmPolicy::Open);
        let channel = SignalChannel::new("signal", config, data_dir).expect("a channel");
        let stop = CancellationToken::new();
        let token = stop.clone();
        let task = tokio::spawn(async move {
            let sink: Arc<dyn EventSink> = sink;
            let _ = channel.start(sink, token).await;
        });
        Self { stop, task }
    }

    /// Stop the loop as a killed process would: whatever it read and did not store is gone.
    async fn kill(self) {
        self.stop.cancel();
        self.task.abort();
        let _ = self.task.await;
    }
}

/// The texts the sink stored, in order.
fn texts(sink: &RecordingSink) -> Vec<String> {
    sink.stored()
        .into_iter()
        .filter_map(|e| match e {
            ChannelEvent::Message(m) => Some(m.text),
            _ => None,
        })
        .collect()
}

async fn wait_texts(sink: &RecordingSink, want: &[&str]) {
    eventually(WAIT, "the stored texts", async || {
        let got = texts(sink);
        if got == want { Ok(()) } else { Err(got) }
    })
    .await;
}

fn alice() -> Person {
    Person::new(1, "Alice")
}

/// A receive loop on `dir` that stored "one", then read "two" while its store refused it.
async fn one_stored_and_two_refused(
    fake: &FakeSignal,
    dir: &Path,
) -> (Arc<RecordingSink>, Running) {
    let sink = RecordingSink::new();
    let running = Running::start(fake, dir, Arc::clone(&sink));
    eventually(WAIT, "the stream open", async || {
        if fake.listening() { Ok(()) } else { Err(()) }
    })
    .await;
    fake.dm(&alice(), "one");
    wait_texts(&sink, &["one"]).await;
    sink.set_failing(true);
    let two = fake.dm(&alice(), "two");
    let two_id = format!("{}:{two}", alice().number);
    eventually(WAIT, "a refused attempt to store it", async || {
        match sink.attempts_for(&two_id) {
            0 => Err(0),
            n => Ok(n),
        }
    })
    .await;
    (sink, running)
}

#[tokio::test]
async fn an_event_the_store_refused_is_sent_again_after_the_last_stored_events_id() {
    let fake = FakeSignal::start().await;
    let dir = tempfile::tempdir().unwrap();
    let (sink, running) = one_stored_and_two_refused(&fake, dir.path()).await;
    sink.set_failing(false);
    wait_texts(&sink, &["one", "two"]).await;
    let opens = fake.stream_opens();
    assert_eq!(
        opens[0], None,
        "a first start asks for nothing old: {opens:?}"
    );
    assert!(
        opens[1..].iter().all(|o| o.as_deref() == Some("1")),
        "reopened after the last stored event (id 1): {opens:?}"
    );
    running.kill().await;
}

#[tokio::test]
async fn a_gateway_that_died_before_storing_an_event_gets_it_again_at_its_next_start() {
    let fake = FakeSignal::start().await;
    let dir = tempfile::tempdir().unwrap();
    let (_, running) = one_stored_and_two_refused(&fake, dir.path()).await;
    running.kill().await;

    let second = RecordingSink::new();
    let running = Running::start(&fake, dir.path(), Arc::clone(&second));
    wait_texts(&second, &["two"]).await;
    assert_eq!(
        fake.stream_opens().last().cloned().flatten().as_deref(),
        Some("1"),
        "the new run resumed after the event the old one stored"
    );
    let key = ConversationKey::new("signal", alice().number);
    assert!(second.stored().iter().all(|e| e.key() == &key));
    running.kill().await;
}
