//! The DevTools protocol over Chromium's `--remote-debugging-pipe`: JSON messages each
//! ended by a NUL byte, commands written to the browser's descriptor 3 (our stdin pipe to
//! the supervisor) and answers and events read from its descriptor 4 (the stdout pipe). One
//! reader task matches answers to waiting callers by id; when the pipe closes (the browser
//! exited or was killed by its memory cap) every waiting call fails at once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

type Answer = Result<Value, String>;

/// What the reader task shares with callers.
#[derive(Default)]
struct Shared {
    /// Callers waiting for the answer to their id.
    waiting: HashMap<u64, oneshot::Sender<Answer>>,
    /// Why the connection is gone, once it is.
    closed: Option<String>,
    /// A page's renderer crashed (its memory cap, most often) since the last look.
    crashed: bool,
}

/// A DevTools connection over a pipe pair.
pub struct Cdp {
    writer: tokio::sync::Mutex<Box<dyn AsyncWrite + Send + Unpin>>,
    shared: Arc<Mutex<Shared>>,
    next: AtomicU64,
    reader: JoinHandle<()>,
}

impl Drop for Cdp {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Cdp {
    /// Speak over `output` (the browser's descriptor 4) and `input` (its descriptor 3).
    pub fn new(
        output: impl AsyncRead + Send + Unpin + 'static,
        input: impl AsyncWrite + Send + Unpin + 'static,
    ) -> Self {
        let shared = Arc::new(Mutex::new(Shared::default()));
        let reader = tokio::spawn(read_loop(output, Arc::clone(&shared)));
        Self {
            writer: tokio::sync::Mutex::new(Box::new(input)),
            shared,
            next: AtomicU64::new(1),
            reader,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Why the browser is gone, if it is.
    pub fn closed(&self) -> Option<String> {
        self.lock().closed.clone()
    }

    /// Whether a page crashed since the last call (and forget it).
    pub fn take_crash(&self) -> bool {
        std::mem::take(&mut self.lock().crashed)
    }

    /// Send `method` with `params` (to the page `session`, or the browser) and wait at most
    /// `within` for its result.
    pub async fn call(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
        within: Duration,
    ) -> Answer {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut shared = self.lock();
            if let Some(reason) = &shared.closed {
                return Err(reason.clone());
            }
            shared.waiting.insert(id, tx);
        }
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        let mut bytes = message.to_string().into_bytes();
        bytes.push(0);
        let written = {
            let mut writer = self.writer.lock().await;
            writer.write_all(&bytes).await.and(writer.flush().await)
        };
        if let Err(err) = written {
            self.lock().waiting.remove(&id);
            return Err(format!("the browser's pipe is closed: {err}"));
        }
        match tokio::time::timeout(within, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(self
                .closed()
                .unwrap_or_else(|| "the browser went away".into())),
            Err(_) => {
                self.lock().waiting.remove(&id);
                Err(format!(
                    "{method} got no answer within {} s",
                    within.as_secs()
                ))
            }
        }
    }
}

/// Read NUL-ended messages until the pipe closes, answering waiting callers.
async fn read_loop(mut output: impl AsyncRead + Unpin, shared: Arc<Mutex<Shared>>) {
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let reason = loop {
        match output.read(&mut chunk).await {
            Ok(0) => break "the browser exited".to_owned(),
            Err(err) => break format!("reading from the browser failed: {err}"),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        while let Some(end) = buf.iter().position(|b| *b == 0) {
            let message: Vec<u8> = buf.drain(..=end).collect();
            if let Ok(value) = serde_json::from_slice::<Value>(&message[..end]) {
                dispatch(&shared, value);
            }
        }
    };
    let mut shared = shared.lock().unwrap_or_else(|e| e.into_inner());
    for (_, waiter) in shared.waiting.drain() {
        let _ = waiter.send(Err(reason.clone()));
    }
    shared.closed = Some(reason);
}

fn dispatch(shared: &Mutex<Shared>, value: Value) {
    let mut shared = shared.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(id) = value["id"].as_u64() {
        if let Some(waiter) = shared.waiting.remove(&id) {
            let answer = match value.get("error") {
                Some(error) => Err(error["message"]
                    .as_str()
                    .unwrap_or("the browser refused the command")
                    .to_owned()),
                None => Ok(value["result"].clone()),
            };
            let _ = waiter.send(answer);
        }
        return;
    }
    if matches!(
        value["method"].as_str(),
        Some("Inspector.targetCrashed" | "Target.targetCrashed")
    ) {
        shared.crashed = true;
        let reason = "the page crashed (out of memory?)".to_owned();
        for (_, waiter) in shared.waiting.drain() {
            let _ = waiter.send(Err(reason.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn answers_reach_their_caller_and_a_closed_pipe_fails_the_rest() {
        let (ours, theirs) = tokio::io::duplex(4096);
        let (their_read, mut their_write) = tokio::io::split(theirs);
        let (our_read, our_write) = tokio::io::split(ours);
        let cdp = Arc::new(Cdp::new(our_read, our_write));
        let browser = tokio::spawn(async move {
            let mut their_read = their_read;
            let mut got = Vec::new();
            let mut byte = [0u8; 1];
            while their_read.read(&mut byte).await.unwrap() == 1 && byte[0] != 0 {
                got.push(byte[0]);
            }
            let asked: Value = serde_json::from_slice(&got).unwrap();
            let answer = json!({"id": asked["id"], "result": {"echo": asked["method"]}});
            their_write
                .write_all(answer.to_string().as_bytes())
                .await
                .unwrap();
            their_write.write_all(b"\0").await.unwrap();
            drop(their_write);
            their_read
        });
        let within = Duration::from_secs(5);
        let first = cdp
            .call(None, "Browser.getVersion", json!({}), within)
            .await;
        assert_eq!(first.unwrap()["echo"], "Browser.getVersion");
        drop(browser.await.unwrap());
        let second = cdp.call(None, "Page.navigate", json!({}), within).await;
        let error = second.unwrap_err();
        assert!(
            error.contains("exited") || error.contains("closed"),
            "{error}"
        );
    }
}
