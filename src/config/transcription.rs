//! `[transcription]`: an OpenAI-compatible speech-to-text endpoint, so a voice note becomes
//! text the turn answers. Absent, voice notes are saved and described only.

use serde::Deserialize;

use super::{EnvString, Secret};

/// `[transcription]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TranscriptionConfig {
    /// API base (`https://api.openai.com/v1`, a local server's `/v1`); the request goes to
    /// `<base_url>/audio/transcriptions`.
    pub base_url: EnvString,
    /// Model name (`whisper-1`, `gpt-4o-mini-transcribe`, a local server's model).
    #[serde(default = "default_model")]
    pub model: EnvString,
    /// API key (`${OPENAI_API_KEY}`); optional for a local server.
    #[serde(default)]
    pub api_key: Secret,
    /// Seconds to wait for a transcript.
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
}

fn default_model() -> EnvString {
    EnvString("whisper-1".into())
}

fn default_timeout() -> u64 {
    60
}
