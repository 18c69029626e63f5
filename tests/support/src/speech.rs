//! Speech both ways. [`RealSpeech`] is not a stand-in: it runs `tests/speech/server.py`, the
//! real engines (espeak-ng speaking, pocketsphinx listening) behind OpenAI's
//! `/audio/speech` and `/audio/transcriptions`; missing, a test skips with a visible line,
//! and with `SWITCHBOARD_REQUIRE_SPEECH=1` (CI) fails. [`FakeSpeech`] is the stand-in for a
//! cloud `/audio/speech`'s failure modes: a 5xx, an answer too slow, a body that is not audio.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::json;
use tokio_util::sync::DropGuard;

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// How to install what the round trips need.
const INSTALL: &str = "apt-get install -y espeak-ng opus-tools && python3 -m venv tests/speech/.venv \
    && tests/speech/.venv/bin/pip install -r tests/speech/requirements.txt";

/// `tests/speech/server.py` running on 127.0.0.1; killed when dropped.
pub struct RealSpeech {
    child: Child,
    port: u16,
}

impl RealSpeech {
    /// Start the server, or `None` after printing why (a failure under
    /// `SWITCHBOARD_REQUIRE_SPEECH=1`).
    pub fn start() -> Option<Self> {
        let python = root().join("tests/speech/.venv/bin/python");
        let missing: Vec<&str> = [
            ("tests/speech/.venv", python.is_file()),
            ("espeak-ng", on_path("espeak-ng")),
            (
                "opusenc/opusdec/opusinfo",
                on_path("opusdec") && on_path("opusinfo"),
            ),
        ]
        .into_iter()
        .filter_map(|(what, there)| (!there).then_some(what))
        .collect();
        if !missing.is_empty() {
            let why = format!("missing {}; {INSTALL}", missing.join(", "));
            if std::env::var("SWITCHBOARD_REQUIRE_SPEECH").as_deref() == Ok("1") {
                panic!("SWITCHBOARD_REQUIRE_SPEECH=1 but the speech engines are {why}");
            }
            eprintln!("SKIPPED: the real speech engines are not installed: {why}");
            return None;
        }
        let mut child = Command::new(python)
            .arg(root().join("tests/speech/server.py"))
            .arg("0")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start tests/speech/server.py");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped stdout");
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the server's port");
        let port = line
            .trim()
            .strip_prefix("port ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("tests/speech/server.py said {line:?}, not its port"));
        Some(Self { child, port })
    }

    /// The base URL for `[transcription]` and `[voice.http]` (`http://127.0.0.1:<port>/v1`).
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// What the recogniser hears in `audio` (Ogg/Opus or 16 kHz WAV).
    pub async fn transcribe(&self, audio: &[u8]) -> String {
        let boundary = "speech-test-boundary";
        let mut body = format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nx\r\n\
             --{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.ogg\"\r\n\
             Content-Type: audio/ogg\r\n\r\n"
        )
        .into_bytes();
        body.extend_from_slice(audio);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let reply: serde_json::Value = reqwest::Client::new()
            .post(format!("{}/audio/transcriptions", self.base_url()))
            .header(
                "content-type",
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(body)
            .send()
            .await
            .expect("reach the recogniser")
            .json()
            .await
            .expect("a JSON answer");
        reply["text"].as_str().unwrap_or_default().to_owned()
    }
}

impl Drop for RealSpeech {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether `program` is on `PATH`.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// A person's voice note: espeak-ng says `sentence` (voice `en-us`, 150 words a minute) and
/// Debian's `opusenc` encodes it as Ogg/Opus, as a phone would.
pub fn spoken_voice_note(sentence: &str) -> Vec<u8> {
    let dir = tempfile_dir();
    let (wav, ogg) = (dir.join("said.wav"), dir.join("said.ogg"));
    run(Command::new("espeak-ng")
        .args(["-v", "en-us", "-s", "150", "-w"])
        .arg(&wav)
        .arg(sentence));
    run(Command::new("opusenc").arg("--quiet").arg(&wav).arg(&ogg));
    let bytes = std::fs::read(&ogg).expect("read the encoded note");
    let _ = std::fs::remove_dir_all(&dir);
    bytes
}

/// What Debian's `opusinfo` says of `ogg` (it fails on a file that is not valid Ogg/Opus).
pub fn opusinfo(ogg: &[u8]) -> Result<String, String> {
    let dir = tempfile_dir();
    let path = dir.join("check.ogg");
    std::fs::write(&path, ogg).expect("write the file to check");
    let out = Command::new("opusinfo")
        .arg(&path)
        .output()
        .expect("run opusinfo");
    let _ = std::fs::remove_dir_all(&dir);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    if out.status.success() && !text.contains("WARNING") {
        Ok(text)
    } else {
        Err(text)
    }
}

/// The playback length `opusinfo` reports, in milliseconds.
pub fn opusinfo_duration_ms(report: &str) -> Option<u64> {
    // "Playback length: 2m:03.456s"
    let length = report.split("Playback length: ").nth(1)?.lines().next()?;
    let (minutes, seconds) = length.trim().split_once("m:")?;
    let seconds: f64 = seconds.trim_end_matches('s').parse().ok()?;
    let minutes: u64 = minutes.parse().ok()?;
    Some(minutes * 60_000 + (seconds * 1000.0).round() as u64)
}

fn run(command: &mut Command) {
    let status = command.status().expect("start the engine");
    assert!(status.success(), "{command:?} failed: {status}");
}

fn tempfile_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "switchboard-speech-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("make a scratch folder");
    dir
}

static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How the fake `/audio/speech` answers.
#[derive(Clone, Debug)]
pub enum SpeechMode {
    /// 200 `audio/wav` with these bytes.
    Wav(Vec<u8>),
    /// This status with an OpenAI-style error body.
    Status(u16),
    /// Wait this long, then answer with the WAV.
    Slow(Duration, Vec<u8>),
    /// 200 with a JSON body (a proxy's error page, a misrouted request).
    NotAudio,
}

/// A fake OpenAI `/v1/audio/speech` on 127.0.0.1; stops when dropped.
pub struct FakeSpeech {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<serde_json::Value>>>,
    _stop: DropGuard,
}

impl FakeSpeech {
    /// Start one answering every request as `mode` says.
    pub async fn start(mode: SpeechMode) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let app = Router::new()
            .route("/v1/audio/speech", post(speech))
            .with_state((mode, Arc::clone(&requests)));
        let stop = crate::serve_until_dropped(listener, app);
        Self {
            addr,
            requests,
            _stop: stop,
        }
    }

    /// The base URL to configure (`http://127.0.0.1:<port>/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request body so far.
    pub fn requests(&self) -> Vec<serde_json::Value> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

type Shared = (SpeechMode, Arc<Mutex<Vec<serde_json::Value>>>);

async fn speech(
    State((mode, requests)): State<Shared>,
    axum::Json(body): axum::Json<serde_json::Value>,
) -> Response {
    requests
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(body);
    let wav = |bytes: Vec<u8>| ([(header::CONTENT_TYPE, "audio/wav")], bytes).into_response();
    match mode {
        SpeechMode::Wav(bytes) => wav(bytes),
        SpeechMode::Slow(wait, bytes) => {
            tokio::time::sleep(wait).await;
            wav(bytes)
        }
        SpeechMode::Status(code) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let error =
                json!({"error": {"message": "The server is overloaded", "type": "server_error"}});
            (status, axum::Json(error)).into_response()
        }
        SpeechMode::NotAudio => axum::Json(json!({"ok": true})).into_response(),
    }
}

/// A 16-bit mono WAV of a 440 Hz tone, `ms` long at 22 050 Hz (what espeak-ng writes).
pub fn tone_wav(ms: u32) -> Vec<u8> {
    let rate = 22_050u32;
    let frames = rate * ms / 1000;
    let mut out = Vec::with_capacity(44 + frames as usize * 2);
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + frames * 2).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes()); // PCM
    out.extend_from_slice(&1u16.to_le_bytes()); // mono
    out.extend_from_slice(&rate.to_le_bytes());
    out.extend_from_slice(&(rate * 2).to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&(frames * 2).to_le_bytes());
    for i in 0..frames {
        let t = i as f32 / rate as f32;
        let s = (t * 440.0 * std::f32::consts::TAU).sin() * 0.4;
        out.extend_from_slice(&((s * f32::from(i16::MAX)) as i16).to_le_bytes());
    }
    out
}
