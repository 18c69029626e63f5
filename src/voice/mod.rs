//! Speech out (`[voice]`): a turn's answer, already scrubbed, made into what a listener needs
//! (`switchboard_channel::Target::Speech`, cut at a sentence within `max_chars`), spoken by
//! the configured engine and encoded as an Ogg/Opus voice note. The outbound path posts it
//! (`conversation::Outbox::speak`); the text answer always goes out as well, so a failure
//! here costs the person nothing but the voice.
//!
//! - this file: [`Speaker`], the engine plus its limits, and the spoken text.
//! - `engine`: the HTTP and sandboxed-command engines (text → WAV).
//! - `encode`: WAV → Ogg/Opus at 48 kHz, its duration and waveform.

mod encode;
mod engine;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use switchboard_channel::{Target, VoiceNote, render};

pub use encode::voice_note;
use engine::Engine;

use crate::config::VoiceConfig;
use crate::sandbox::Sandbox;

/// Said after a spoken answer that was cut short.
pub const REST_LINE: &str = "The rest is in the text.";

/// The configured engine, with how much it may say and how long it may take.
pub struct Speaker {
    engine: Engine,
    max_chars: usize,
    timeout: Duration,
    bitrate: i32,
}

/// Why an answer was not spoken.
#[derive(Debug, thiserror::Error)]
pub enum SpeakError {
    /// The engine failed, timed out or sent something that is not audio.
    #[error("the {engine} speech engine failed: {reason}")]
    Engine {
        /// Which engine.
        engine: &'static str,
        /// What went wrong.
        reason: String,
    },
    /// Its audio could not be encoded.
    #[error("the speech could not be encoded: {0}")]
    Encode(String),
}

impl Speaker {
    /// The speaker `[voice]` describes; a local command runs in `sandbox` with a workspace of
    /// its own under `data_dir`.
    pub fn new(config: &VoiceConfig, sandbox: Arc<Sandbox>, data_dir: &Path) -> Self {
        let timeout = Duration::from_secs(config.timeout_secs.max(1));
        let engine = match (&config.http, &config.command) {
            (Some(http), _) => Engine::Http {
                config: http.clone(),
                client: reqwest::Client::builder()
                    .connect_timeout(Duration::from_secs(10))
                    .timeout(timeout)
                    .build()
                    .unwrap_or_default(),
            },
            (None, command) => Engine::Command {
                line: command.clone().unwrap_or_default(),
                sandbox,
                workspace: data_dir.join("voice"),
            },
        };
        Self {
            engine,
            max_chars: config.max_chars,
            timeout,
            bitrate: config.bitrate,
        }
    }

    /// What is spoken of `markdown` (scrubbed already): its words, cut at the last sentence
    /// end within `max_chars` and followed by [`REST_LINE`] when cut.
    pub fn speakable(&self, markdown: &str) -> String {
        cut(&render(markdown, Target::Speech), self.max_chars)
    }

    /// `text` spoken and encoded as a voice note.
    pub async fn speak(&self, text: &str) -> Result<VoiceNote, SpeakError> {
        let wav = self
            .engine
            .synthesize(text, self.timeout)
            .await
            .map_err(|reason| SpeakError::Engine {
                engine: self.engine.label(),
                reason,
            })?;
        let bitrate = self.bitrate;
        tokio::task::spawn_blocking(move || voice_note(&wav, bitrate))
            .await
            .map_err(|e| SpeakError::Encode(e.to_string()))?
            .map_err(SpeakError::Encode)
    }
}

/// `text` cut to at most `max` characters at a sentence end (else a word end), followed by
/// [`REST_LINE`] when anything was left out.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let end = text.char_indices().nth(max).map_or(text.len(), |(i, _)| i);
    let head = &text[..end];
    let sentence = head
        .char_indices()
        .filter(|&(i, c)| {
            matches!(c, '.' | '!' | '?' | '…') && text[i + c.len_utf8()..].starts_with(' ')
        })
        .map(|(i, c)| i + c.len_utf8())
        .next_back();
    let kept = match sentence {
        Some(at) => &head[..at],
        None if text[end..].starts_with(' ') => head,
        None => head.rsplit_once(' ').map_or(head, |(words, _)| words),
    };
    format!("{} {REST_LINE}", kept.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_answer_is_cut_at_the_last_sentence_that_fits() {
        let text = "First sentence here. Second one is longer than that. Third.";
        assert_eq!(cut(text, 40), format!("First sentence here. {REST_LINE}"));
        assert_eq!(cut(text, 500), text);
    }

    #[test]
    fn an_answer_without_a_sentence_end_is_cut_at_a_word() {
        assert_eq!(
            cut("one two three four five", 12),
            format!("one two {REST_LINE}")
        );
        assert_eq!(
            cut("héllo wörld and more", 11),
            format!("héllo wörld {REST_LINE}")
        );
    }
}
