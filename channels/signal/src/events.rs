//! The receive loop: signal-cli's Server-Sent Events stream (`GET /api/v1/events`), one
//! `receive` event per envelope. Each is stored through the sink before the loop moves past
//! it; the id of the last stored event goes back as `Last-Event-ID` when the stream is
//! reopened, so a daemon that keeps recent events sends again what was not stored. That id is
//! also kept in a file beside the gateway's data, so a gateway killed between reading an event
//! and storing it asks for it again when it starts (an id from an earlier daemon run makes the
//! daemon send every event it keeps; the inbox drops those already stored). A dropped
//! connection or a restarted daemon is reopened with a doubling wait.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use switchboard_channel::{Backoff, ChannelError, Delivery, EventSink, Health};
use tokio_util::sync::CancellationToken;

use crate::inbound::Triage;
use crate::shared::Shared;

/// signal-cli writes a keep-alive comment every 15 seconds: a stream silent for longer than
/// this is dead even if the socket says otherwise.
const SILENCE: Duration = Duration::from_secs(45);

/// One complete SSE event.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct SseEvent {
    pub(crate) id: Option<String>,
    pub(crate) event: Option<String>,
    pub(crate) data: String,
}

/// Reads SSE lines into events (the WHATWG format: `field:value`, a blank line ends one).
#[derive(Default)]
pub(crate) struct SseParser {
    buffer: Vec<u8>,
    current: SseEvent,
    has_data: bool,
}

impl SseParser {
    /// Feed bytes; the events they complete.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        self.buffer.extend_from_slice(bytes);
        let mut done = Vec::new();
        while let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.buffer.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if self.has_data {
                    done.push(std::mem::take(&mut self.current));
                } else {
                    self.current = SseEvent::default();
                }
                self.has_data = false;
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "id" => self.current.id = Some(value.to_owned()),
                "event" => self.current.event = Some(value.to_owned()),
                "data" => {
                    if self.has_data {
                        self.current.data.push('\n');
                    }
                    self.current.data.push_str(value);
                    self.has_data = true;
                }
                _ => {}
            }
        }
        done
    }
}

/// The id of the last event stored, in `data_dir/signal-<name>-event-id`.
pub(crate) struct LastEventId {
    path: PathBuf,
    id: Option<String>,
}

impl LastEventId {
    /// The id channel `name` kept under `data_dir`, if any.
    pub(crate) fn open(data_dir: &Path, name: &str) -> Self {
        let path = data_dir.join(format!("signal-{name}-event-id"));
        let id = std::fs::read_to_string(&path)
            .ok()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty());
        Self { path, id }
    }

    /// The last stored event's id.
    pub(crate) fn get(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// Remember `id` as stored. A file that cannot be written costs only the replay after a
    /// crash (the event itself is stored), so it is logged, not fatal.
    fn set(&mut self, id: &str) {
        if self.id.as_deref() == Some(id) {
            return;
        }
        self.id = Some(id.to_owned());
        if let Err(err) = write_atomically(&self.path, id) {
            tracing::warn!(path = %self.path.display(), error = %err, "could not keep the Signal stream's position; a crash now would not ask the daemon again for events in flight");
        }
    }
}

fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut file, text.as_bytes())?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Read the stream until `shutdown`, reopening it after every failure.
pub(crate) async fn run(
    shared: Arc<Shared>,
    sink: Arc<dyn EventSink>,
    shutdown: CancellationToken,
) -> Result<(), ChannelError> {
    let http = reqwest::Client::builder()
        .read_timeout(SILENCE)
        .build()
        .map_err(|e| ChannelError::Fatal(format!("no HTTP client: {e}")))?;
    let mut backoff = Backoff::new(Duration::from_millis(500), Duration::from_secs(30));
    let mut last_id = LastEventId::open(&shared.data_dir, &shared.name);
    loop {
        let result = tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            r = stream(&shared, &http, sink.as_ref(), &mut last_id, &mut backoff) => r,
        };
        let why = match result {
            Ok(()) => "the daemon closed the event stream".to_owned(),
            Err(why) => why,
        };
        tracing::warn!(channel = %shared.name, why, "Signal event stream lost; reconnecting");
        shared.set_health(Health {
            ready: false,
            detail: format!("reconnecting to signal-cli: {why}"),
            last_ok: shared.health.lock().ok().and_then(|h| h.last_ok),
        });
        tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            () = tokio::time::sleep(backoff.next_delay()) => {}
        }
    }
}

/// One connection: open it, then store every event it brings until it ends.
async fn stream(
    shared: &Shared,
    http: &reqwest::Client,
    sink: &dyn EventSink,
    last_id: &mut LastEventId,
    backoff: &mut Backoff,
) -> Result<(), String> {
    let base = shared.config.daemon_url.trim_end_matches('/');
    let mut request = http
        .get(format!("{base}/api/v1/events"))
        .query(&[("account", shared.config.account.as_str())])
        .header("accept", "text/event-stream");
    if let Some(id) = last_id.get() {
        request = request.header("last-event-id", id);
    }
    let response = request
        .send()
        .await
        .map_err(|e| format!("signal-cli daemon unreachable: {e}"))?;
    if !response.status().is_success() {
        return Err(format!(
            "signal-cli daemon answered HTTP {}",
            response.status()
        ));
    }
    shared.set_health(Health::ready("reading signal-cli's event stream"));
    backoff.reset();
    shared.learn_aci().await;
    let mut parser = SseParser::default();
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| format!("event stream broke: {e}"))?;
        for event in parser.feed(&chunk) {
            store(shared, sink, &event).await?;
            if let Some(id) = &event.id {
                last_id.set(id);
            }
        }
    }
    Ok(())
}

/// Hand one event to the sink; an `Err` means it was not stored and the stream must be
/// reopened from the last stored event.
async fn store(shared: &Shared, sink: &dyn EventSink, event: &SseEvent) -> Result<(), String> {
    if event.event.as_deref().is_some_and(|e| e != "receive") {
        return Ok(());
    }
    let Ok(value) = serde_json::from_str::<Value>(&event.data) else {
        tracing::warn!(channel = %shared.name, "unreadable event from signal-cli; skipped");
        return Ok(());
    };
    match shared.read(&value) {
        Triage::Skip(why) => {
            tracing::debug!(channel = %shared.name, why, "Signal event skipped");
            Ok(())
        }
        Triage::Deliver(event) => match sink.deliver(*event).await {
            Ok(Delivery::Stored | Delivery::Duplicate | Delivery::Refused) => Ok(()),
            Err(err) => Err(format!("could not store an event: {err}")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks_and_keep_alives_are_read_whole() {
        let mut p = SseParser::default();
        assert!(p.feed(b":\n\nid:7\nevent:receive\nda").is_empty());
        let events = p.feed(b"ta:{\"a\":1}\n\n:\n\nid: 8\r\ndata: x\r\ndata: y\r\n\r\n");
        assert_eq!(
            events,
            [
                SseEvent {
                    id: Some("7".into()),
                    event: Some("receive".into()),
                    data: "{\"a\":1}".into()
                },
                SseEvent {
                    id: Some("8".into()),
                    event: None,
                    data: "x\ny".into()
                },
            ]
        );
    }
}
