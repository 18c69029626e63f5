//! Files in both directions, normalized: an [`Attachment`] is a reference to a file a person
//! sent (stored with the event, downloaded later by the core through [`Channel::download`]),
//! an [`OutboundFile`] is a file the core asks a channel to post. No platform type crosses
//! here; [`read_capped`] is the one size-capped download every channel's `download` uses.
//!
//! [`Channel::download`]: crate::Channel::download

use serde::{Deserialize, Serialize};

/// Attachments above this many bytes are refused unless a channel's settings say otherwise
/// (Telegram's cloud Bot API serves files up to 20 MB through `getFile`).
pub const DEFAULT_MAX_ATTACHMENT_BYTES: u64 = 20 * 1024 * 1024;

/// What kind of file a person sent, as the platform classified it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttachmentKind {
    /// A picture the platform shows inline (Telegram photo, an image upload).
    Photo,
    /// Any other file.
    Document,
    /// A recorded voice note.
    Voice,
    /// An audio file (music, a recording sent as a file).
    Audio,
}

impl AttachmentKind {
    /// Lowercase name, for descriptions and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Photo => "photo",
            Self::Document => "document",
            Self::Voice => "voice",
            Self::Audio => "audio",
        }
    }
}

/// A reference to a file attached to an inbound message: enough for the channel to fetch it
/// later, never the bytes (the inbox stores the event before anything is downloaded).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    /// Photo, document, voice note or audio.
    pub kind: AttachmentKind,
    /// The platform's file id (Telegram `file_id`, Slack file id, Discord attachment id,
    /// web upload id); unique within the event.
    pub id: String,
    /// Where the file can be fetched, when the platform gives a URL directly (Slack
    /// `url_private`, Discord `url`); Telegram resolves `id` through `getFile` instead.
    #[serde(default)]
    pub url: Option<String>,
    /// The file name as sent (not yet sanitised), or one made up from the kind.
    pub name: String,
    /// MIME type, when the platform says.
    #[serde(default)]
    pub mime: Option<String>,
    /// Size in bytes, when the platform says.
    #[serde(default)]
    pub size: Option<u64>,
}

/// A file the core asks a channel to post in a conversation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutboundFile {
    /// File name shown to people.
    pub name: String,
    /// The contents.
    pub bytes: Vec<u8>,
    /// MIME type, when known (images may be shown inline).
    pub mime: Option<String>,
    /// Text posted with the file, markdown; may be empty.
    pub caption: String,
}

/// A spoken answer the core asks a channel to post as the platform's voice note: Ogg/Opus
/// (mono, 48 kHz), the one encoding every platform takes as one. It carries no text: the
/// answer's text is always sent as its own message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VoiceNote {
    /// The Ogg/Opus file.
    pub bytes: Vec<u8>,
    /// Its length in whole seconds, rounded up (Telegram's `duration`, WhatsApp's display).
    pub duration_secs: u32,
    /// Its length in milliseconds (Matrix's `info.duration`).
    pub duration_ms: u64,
    /// Loudness over time, up to 256 values of 0–255 (Discord's `waveform`, Matrix's
    /// `org.matrix.msc1767.audio` waveform scaled by the channel).
    pub waveform: Vec<u8>,
}

impl VoiceNote {
    /// The file name platforms show.
    pub const NAME: &str = "voice.ogg";
    /// Its MIME type.
    pub const MIME: &str = "audio/ogg";
}

impl Attachment {
    /// The URL to fetch this file from: refused when its announced size is over `max_bytes`,
    /// when there is none, or when its host is neither `api_url`'s (a self-hosted API server
    /// or a test stand-in) nor one `platform_host` accepts — credentials sent with the
    /// download must never reach another host. `refusal` says which host was expected.
    pub fn fetch_url(
        &self,
        max_bytes: u64,
        api_url: &str,
        platform_host: impl Fn(&str) -> bool,
        refusal: &str,
    ) -> Result<&str, FileError> {
        if self.size.is_some_and(|s| s > max_bytes) {
            return Err(FileError::TooLarge { limit: max_bytes });
        }
        let url = (self.url.as_deref()).ok_or_else(|| FileError::Gone("no file URL".into()))?;
        let host = |u: &str| reqwest::Url::parse(u).ok()?.host_str().map(str::to_owned);
        match (host(url), host(api_url)) {
            (Some(file), Some(api)) if file == api || platform_host(&file) => Ok(url),
            _ => Err(FileError::Forbidden(refusal.to_owned())),
        }
    }
}

impl OutboundFile {
    /// Whether the file is an image a platform can show inline (JPEG, PNG, WebP, GIF).
    pub fn is_image(&self) -> bool {
        self.mime
            .as_deref()
            .is_some_and(|m| matches!(m, "image/jpeg" | "image/png" | "image/webp" | "image/gif"))
    }
}

/// Why a file could not be fetched or posted, in terms the core can tell a person.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum FileError {
    /// This channel does not move files (or not in this direction).
    #[error("this channel does not support files")]
    Unsupported,
    /// The file is larger than the configured or platform limit.
    #[error("the file is larger than the {limit}-byte limit")]
    TooLarge {
        /// The limit in bytes.
        limit: u64,
    },
    /// The platform no longer has the file (an expired Telegram file id, a deleted upload).
    #[error("the file is no longer available: {0}")]
    Gone(String),
    /// The platform refused access (Slack 403 without `files:read`, a bad token).
    #[error("access to the file was refused: {0}")]
    Forbidden(String),
    /// The transfer failed or was cut midway; trying again later may work.
    #[error("the transfer failed: {0}")]
    Transient(String),
    /// Anything else the platform refused.
    #[error("the platform refused the file: {0}")]
    Fatal(String),
}

impl FileError {
    /// The error for an HTTP status of a file download.
    pub fn from_status(status: u16, detail: impl Into<String>) -> Self {
        let detail = detail.into();
        match status {
            401 | 403 => Self::Forbidden(format!("{status} {detail}")),
            404 | 410 => Self::Gone(format!("{status} {detail}")),
            413 => Self::TooLarge { limit: 0 },
            429 | 500..=599 => Self::Transient(format!("{status} {detail}")),
            _ => Self::Fatal(format!("{status} {detail}")),
        }
    }
}

/// Read `request`'s response body, refusing it once it passes `max_bytes` (checked against
/// `Content-Length` first, then while streaming, so an oversized file is never held whole).
/// A body shorter than its `Content-Length` (a transfer cut midway) is an error.
pub async fn read_capped(
    request: reqwest::RequestBuilder,
    max_bytes: u64,
) -> Result<Vec<u8>, FileError> {
    let mut response = request
        .send()
        .await
        .map_err(|e| FileError::Transient(e.without_url().to_string()))?;
    let status = response.status();
    if !status.is_success() {
        let reason = status.canonical_reason().unwrap_or("");
        return Err(FileError::from_status(status.as_u16(), reason));
    }
    let expected = response.content_length();
    if expected.is_some_and(|len| len > max_bytes) {
        return Err(FileError::TooLarge { limit: max_bytes });
    }
    let mut bytes = Vec::with_capacity(expected.map_or(0, |l| l as usize));
    loop {
        let chunk = response
            .chunk()
            .await
            .map_err(|e| FileError::Transient(format!("cut midway: {}", e.without_url())))?;
        let Some(chunk) = chunk else { break };
        if (bytes.len() + chunk.len()) as u64 > max_bytes {
            return Err(FileError::TooLarge { limit: max_bytes });
        }
        bytes.extend_from_slice(&chunk);
    }
    if expected.is_some_and(|len| len != bytes.len() as u64) {
        return Err(FileError::Transient("cut midway".into()));
    }
    Ok(bytes)
}

/// `1536` → `1.5 KB`, `3145728` → `3.0 MB`.
pub fn human_size(bytes: u64) -> String {
    const KB: f64 = 1024.0;
    let b = bytes as f64;
    if b < KB {
        format!("{bytes} B")
    } else if b < KB * KB {
        format!("{:.1} KB", b / KB)
    } else {
        format!("{:.1} MB", b / (KB * KB))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_written_for_people() {
        assert_eq!(human_size(12), "12 B");
        assert_eq!(human_size(1536), "1.5 KB");
        assert_eq!(human_size(3 * 1024 * 1024), "3.0 MB");
    }

    #[test]
    fn an_attachment_round_trips_through_json_with_optional_fields_defaulted() {
        let json = serde_json::json!({ "kind": "voice", "id": "f1", "name": "voice.ogg" });
        let att: Attachment = serde_json::from_value(json).unwrap();
        assert_eq!(att.kind, AttachmentKind::Voice);
        assert_eq!((att.url, att.mime, att.size), (None, None, None));
    }

    #[test]
    fn download_statuses_map_to_what_a_person_can_be_told() {
        assert!(matches!(
            FileError::from_status(403, "x"),
            FileError::Forbidden(_)
        ));
        assert!(matches!(
            FileError::from_status(404, "x"),
            FileError::Gone(_)
        ));
        assert!(matches!(
            FileError::from_status(502, "x"),
            FileError::Transient(_)
        ));
    }

    #[test]
    fn a_file_url_is_fetched_only_from_the_platform_or_the_api_server_and_within_the_cap() {
        let file = |url: &str, size: Option<u64>| Attachment {
            kind: AttachmentKind::Document,
            id: "f1".into(),
            url: Some(url.into()),
            name: "a.csv".into(),
            mime: None,
            size,
        };
        let cdn = |h: &str| h == "cdn.example";
        let api = "http://127.0.0.1:9/api";
        let ok = file("https://cdn.example/a.csv", Some(3));
        assert_eq!(
            ok.fetch_url(10, api, cdn, "no"),
            Ok("https://cdn.example/a.csv")
        );
        let stand_in = file("http://127.0.0.1:9/files/a.csv", None);
        assert!(stand_in.fetch_url(10, api, cdn, "no").is_ok());
        let elsewhere = file("https://evil.example/a.csv", None);
        assert!(matches!(
            elsewhere.fetch_url(10, api, cdn, "no"),
            Err(FileError::Forbidden(_))
        ));
        assert!(matches!(
            ok.fetch_url(2, api, cdn, "no"),
            Err(FileError::TooLarge { limit: 2 })
        ));
        let mut none = ok.clone();
        none.url = None;
        assert!(matches!(
            none.fetch_url(10, api, cdn, "no"),
            Err(FileError::Gone(_))
        ));
    }
}
