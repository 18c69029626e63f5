//! Speech out (`[voice]`): answers spoken as voice notes on each platform's own voice form,
//! the rule (`when_spoken_to`, `/voice`), failures that leave the text alone with one WARN,
//! and the characters spoken in `/usage`.
//!
//! - `telegram`: `sendVoice` through the speech stand-in, its failure modes, `/voice`.
//! - `roundtrip`: the real engines both ways (espeak-ng speaks, pocketsphinx listens).
//! - `discord`: a voice message with its waveform, the text in a message of its own.
//! - `whatsapp`: uploaded, then sent as audio with `voice: true`.
//!
//! Matrix's and the web chat's voice forms are tested beside their other tests
//! (`matrix/voice.rs`, `web/voice.rs`).

mod discord;
mod roundtrip;
mod telegram;
mod whatsapp;

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};

use switchboard::config::voice::SpeechHttpConfig;
use switchboard::config::{EnvString, Secret, VoiceConfig, VoiceRule};

/// `[voice]` with the HTTP engine at `base_url`.
pub(crate) fn http_voice(base_url: &str, rule: VoiceRule, timeout_secs: u64) -> VoiceConfig {
    VoiceConfig {
        rule,
        http: Some(SpeechHttpConfig {
            base_url: EnvString(base_url.to_owned()),
            model: EnvString("tts-1".into()),
            voice: EnvString("alloy".into()),
            api_key: Secret::default(),
        }),
        command: None,
        max_chars: 1000,
        timeout_secs,
        bitrate: 24_000,
    }
}

/// `[voice]` with a local command as the engine (run in the sandbox).
pub(crate) fn command_voice(line: &str, rule: VoiceRule) -> VoiceConfig {
    VoiceConfig {
        rule,
        http: None,
        command: Some(line.to_owned()),
        max_chars: 1000,
        timeout_secs: 30,
        bitrate: 24_000,
    }
}

/// The log lines of everything run on this thread while the guard lives (a current-thread
/// test runtime: the gateway's tasks log here too).
#[derive(Clone, Default)]
pub(crate) struct Logs(Arc<Mutex<Vec<u8>>>);

impl Logs {
    /// Capture this thread's logs at `warn` and above until the guard is dropped.
    pub(crate) fn capture(&self) -> tracing::subscriber::DefaultGuard {
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter("warn")
            .with_ansi(false)
            .with_writer(self.clone())
            .finish();
        tracing::subscriber::set_default(subscriber)
    }

    /// The lines captured so far.
    pub(crate) fn lines(&self) -> Vec<String> {
        let bytes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&bytes)
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut bytes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Logs {
    type Writer = Self;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}
