//! `[voice]`: answers spoken as voice notes. One engine (an OpenAI-compatible
//! `/audio/speech`, or a local command run in the sandbox) and the rule saying when a turn's
//! answer is spoken; agent profiles override the rule (`[agents.<name>] voice`) and each
//! conversation may too (`/voice on|off`). Absent, nothing is ever spoken.

use std::fmt;
use std::str::FromStr;

use serde::Deserialize;

use super::{EnvString, Secret};

/// When an answer is spoken as well as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum VoiceRule {
    /// Never.
    Off,
    /// When the person spoke: a voice note is answered with a voice note plus the text.
    #[default]
    WhenSpokenTo,
    /// Every answer.
    Always,
}

impl VoiceRule {
    /// The rule's one text form (config, store, `/voice`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::WhenSpokenTo => "when_spoken_to",
            Self::Always => "always",
        }
    }

    /// Whether an answer to a message is spoken; `spoken_to` says the person sent a voice
    /// note.
    pub fn speaks(self, spoken_to: bool) -> bool {
        match self {
            Self::Off => false,
            Self::WhenSpokenTo => spoken_to,
            Self::Always => true,
        }
    }
}

impl fmt::Display for VoiceRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for VoiceRule {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "off" => Ok(Self::Off),
            "when_spoken_to" => Ok(Self::WhenSpokenTo),
            "always" => Ok(Self::Always),
            other => Err(format!(
                "unknown voice rule {other:?}; known: off, when_spoken_to, always"
            )),
        }
    }
}

/// `[voice]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VoiceConfig {
    /// When answers are spoken (profiles and `/voice` may override it).
    #[serde(default)]
    pub rule: VoiceRule,
    /// An OpenAI-compatible speech endpoint (`[voice.http]`).
    #[serde(default)]
    pub http: Option<SpeechHttpConfig>,
    /// A local engine: a command line that reads the text on stdin and writes a WAV file to
    /// stdout (`espeak-ng --stdout`, `piper --output_file /dev/stdout`), run in the sandbox.
    #[serde(default)]
    pub command: Option<String>,
    /// Characters spoken at most; a longer answer is spoken up to a sentence end within this
    /// and the full text is sent as always.
    #[serde(default = "default_max_chars")]
    pub max_chars: usize,
    /// Seconds an engine may take before the answer goes out as text alone.
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    /// Opus bitrate in bits per second (speech is clear from about 16 000).
    #[serde(default = "default_bitrate")]
    pub bitrate: i32,
}

/// `[voice.http]`: `POST <base_url>/audio/speech` (`model`, `input`, `voice`,
/// `response_format = "wav"`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpeechHttpConfig {
    /// API base (`https://api.openai.com/v1`, a local server's `/v1`).
    pub base_url: EnvString,
    /// Model name (`gpt-4o-mini-tts`, `tts-1`, a local server's model).
    #[serde(default = "default_model")]
    pub model: EnvString,
    /// The voice (`alloy`, a local server's voice).
    #[serde(default = "default_voice")]
    pub voice: EnvString,
    /// API key (`${OPENAI_API_KEY}`); optional for a local server.
    #[serde(default)]
    pub api_key: Secret,
}

fn default_max_chars() -> usize {
    1000
}

fn default_timeout() -> u64 {
    30
}

fn default_bitrate() -> i32 {
    24_000
}

fn default_model() -> EnvString {
    EnvString("tts-1".into())
}

fn default_voice() -> EnvString {
    EnvString("alloy".into())
}

/// `[voice]`'s problems, each as (key, message).
pub(super) fn problems(voice: Option<&VoiceConfig>) -> Vec<(String, String)> {
    let Some(voice) = voice else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut problem = |key: &str, message: &str| out.push((key.to_owned(), message.to_owned()));
    match (&voice.http, voice.command.as_deref()) {
        (Some(_), Some(_)) => problem(
            "voice",
            "give one engine: either [voice.http] or voice.command",
        ),
        (None, None) => problem(
            "voice",
            "no engine: add [voice.http] (an /audio/speech endpoint) or voice.command",
        ),
        (None, Some(line)) if shlex::split(line).is_none_or(|w| w.is_empty()) => {
            problem("voice.command", "not a command line");
        }
        _ => {}
    }
    if voice.max_chars == 0 {
        problem("voice.max_chars", "must be at least 1");
    }
    if !(6_000..=128_000).contains(&voice.bitrate) {
        problem("voice.bitrate", "must be between 6000 and 128000");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rule_reads_back_from_its_text_form() {
        for rule in [VoiceRule::Off, VoiceRule::WhenSpokenTo, VoiceRule::Always] {
            assert_eq!(rule.to_string().parse::<VoiceRule>(), Ok(rule));
        }
        assert!("sometimes".parse::<VoiceRule>().is_err());
    }

    #[test]
    fn a_voice_section_needs_exactly_one_engine() {
        let parse = |text: &str| toml::from_str::<VoiceConfig>(text).expect("parses");
        let none = parse("rule = \"always\"");
        assert_eq!(problems(Some(&none))[0].0, "voice");
        let both = parse("command = \"espeak-ng --stdout\"\n[http]\nbase_url = \"http://x/v1\"");
        assert_eq!(problems(Some(&both))[0].0, "voice");
        let local = parse("command = \"espeak-ng --stdout\"");
        assert!(problems(Some(&local)).is_empty());
        assert_eq!(local.rule, VoiceRule::WhenSpokenTo);
        let quoted = parse("command = \"espeak-ng 'unclosed\"");
        assert_eq!(problems(Some(&quoted))[0].0, "voice.command");
    }
}
