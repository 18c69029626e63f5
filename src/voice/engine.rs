//! The speech engines: text in, WAV out. An OpenAI-compatible `POST <base_url>/audio/speech`
//! asked for `wav`, or a local command given the text on stdin that writes WAV to stdout,
//! started only through the sandbox (like the shell tool: cleared environment, no network,
//! its own workspace, the whole tree killed when it ends or overruns).

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use crate::config::voice::SpeechHttpConfig;
use crate::sandbox::{Sandbox, StopOnDrop};

/// Largest audio an engine may hand back (about ten minutes of 48 kHz 16-bit stereo).
const MAX_AUDIO_BYTES: usize = 64 * 1024 * 1024;

/// How long a stopped supervisor gets to kill its tree before it is killed itself.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// One configured engine.
pub enum Engine {
    /// An OpenAI-compatible speech endpoint.
    Http {
        /// Its settings.
        config: SpeechHttpConfig,
        /// The client, with the engine's timeout.
        client: reqwest::Client,
    },
    /// A local command run in the sandbox.
    Command {
        /// The command line (`bash -c`, as the shell tool runs).
        line: String,
        /// The sandbox it runs in.
        sandbox: Arc<Sandbox>,
        /// Its workspace: a folder of its own, holding no conversation's files.
        workspace: PathBuf,
    },
}

impl Engine {
    /// The WAV bytes of `text` spoken, within `timeout`.
    pub async fn synthesize(&self, text: &str, timeout: Duration) -> Result<Vec<u8>, String> {
        match self {
            Self::Http { config, client } => http(client, config, text).await,
            Self::Command {
                line,
                sandbox,
                workspace,
            } => command(sandbox, workspace, line, text, timeout).await,
        }
    }

    /// What the log calls this engine.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Http { .. } => "http",
            Self::Command { .. } => "command",
        }
    }
}

/// `POST <base_url>/audio/speech` with `response_format = "wav"`; anything but audio back
/// (an error page, JSON) is a failure, as is a status other than 2xx.
async fn http(
    client: &reqwest::Client,
    config: &SpeechHttpConfig,
    text: &str,
) -> Result<Vec<u8>, String> {
    let url = format!("{}/audio/speech", config.base_url.trim_end_matches('/'));
    let body = serde_json::json!({
        "model": &*config.model,
        "voice": &*config.voice,
        "input": text,
        "response_format": "wav",
    });
    let mut request = client.post(url).json(&body);
    if let Some(key) = config.api_key.expose().filter(|k| !k.is_empty()) {
        request = request.bearer_auth(key);
    }
    let mut response = request
        .send()
        .await
        .map_err(|e| e.without_url().to_string())?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("the speech service answered {status}"));
    }
    let kind = (response.headers().get(reqwest::header::CONTENT_TYPE))
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if !(kind.starts_with("audio/") || kind.starts_with("application/octet-stream")) {
        return Err(format!("the speech service sent {kind:?}, not audio"));
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| format!("the audio was cut midway: {}", e.without_url()))?
    {
        if bytes.len() + chunk.len() > MAX_AUDIO_BYTES {
            return Err(format!("the audio is over {MAX_AUDIO_BYTES} bytes"));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// Run `line` in the sandbox with `text` on stdin; its stdout is the audio.
async fn command(
    sandbox: &Sandbox,
    workspace: &std::path::Path,
    line: &str,
    text: &str,
    timeout: Duration,
) -> Result<Vec<u8>, String> {
    let mut cmd = sandbox.command(workspace, line, &[])?;
    cmd.stdin(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("could not start the speech command: {e}"))?;
    // Dropped (a cancelled turn) or timed out: the supervisor kills the whole tree.
    let mut stop = StopOnDrop(child.id());
    let stdin = child.stdin.take();
    let input = text.as_bytes().to_vec();
    let feed = async move {
        if let Some(mut stdin) = stdin {
            // A command that exits without reading all of it fails on its own terms below.
            let _ = stdin.write_all(&input).await;
        }
    };
    let stdout = tokio::spawn(read_capped(child.stdout.take(), MAX_AUDIO_BYTES));
    let stderr = tokio::spawn(read_capped(child.stderr.take(), 4096));
    let run = async {
        feed.await;
        child.wait().await
    };
    let finished = tokio::time::timeout(timeout, run).await;
    let status = match finished {
        Ok(status) => {
            stop.0 = None; // reaped: the supervisor already cleaned up
            status.map_err(|e| format!("waiting for the speech command failed: {e}"))?
        }
        Err(_) => {
            drop(stop);
            if tokio::time::timeout(STOP_GRACE, child.wait())
                .await
                .is_err()
            {
                let _ = child.start_kill();
            }
            return Err(format!(
                "the speech command took longer than {} s and was stopped",
                timeout.as_secs()
            ));
        }
    };
    let (out, cut) = stdout.await.unwrap_or_default();
    let (err, _) = stderr.await.unwrap_or_default();
    if !status.success() {
        let said = String::from_utf8_lossy(&err);
        let said = said.trim();
        return Err(format!("the speech command failed ({status}): {said}"));
    }
    if cut {
        return Err(format!("the audio is over {MAX_AUDIO_BYTES} bytes"));
    }
    Ok(out)
}

/// Everything `pipe` gives up to `cap` bytes, and whether more was cut off (the rest is
/// drained so the writer never blocks).
async fn read_capped(pipe: Option<impl AsyncRead + Unpin>, cap: usize) -> (Vec<u8>, bool) {
    let Some(mut pipe) = pipe else {
        return (Vec::new(), false);
    };
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut cut = false;
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) if out.len() + n > cap => {
                out.extend_from_slice(&buf[..cap - out.len()]);
                cut = true;
            }
            Ok(n) if !cut => out.extend_from_slice(&buf[..n]),
            Ok(_) => {}
        }
    }
    (out, cut)
}
