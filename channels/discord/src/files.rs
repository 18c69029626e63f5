//! Files on Discord: message attachments as references (their CDN `url`), their download
//! (the URL is signed; no token is sent), and uploads as a multipart `POST
//! /channels/{id}/messages` (`payload_json` + `files[0]`): a file with its caption, or a
//! voice message (flag `IS_VOICE_MESSAGE`, the attachment's `duration_secs` and
//! `waveform`), which Discord refuses with any content, so its text is a message of its own.

use base64::Engine as _;
use serenity::model::channel::Message;
use switchboard_channel::{
    Attachment, AttachmentKind, ConversationKey, FileError, MessageRef, OutboundFile, VoiceNote,
    read_capped,
};

use crate::api::RestApi;

/// Largest upload a bot may post without a boosted server (10 MiB).
const MAX_UPLOAD_BYTES: usize = 10 * 1024 * 1024;
/// Longest message content Discord accepts.
const MAX_CONTENT_CHARS: usize = 2000;
/// The message flag that makes an Ogg/Opus attachment a voice message.
const IS_VOICE_MESSAGE: u64 = 1 << 13;

/// The attachments of `msg`, as references.
pub(crate) fn attachments(msg: &Message) -> Vec<Attachment> {
    msg.attachments
        .iter()
        .map(|a| {
            let mime = a.content_type.clone();
            let kind = match mime.as_deref() {
                _ if a.duration_secs.is_some() => AttachmentKind::Voice,
                Some(m) if m.starts_with("image/") => AttachmentKind::Photo,
                Some(m) if m.starts_with("audio/") => AttachmentKind::Audio,
                _ => AttachmentKind::Document,
            };
            Attachment {
                kind,
                id: a.id.to_string(),
                url: Some(a.url.clone()),
                name: a.filename.clone(),
                mime,
                size: Some(u64::from(a.size)),
            }
        })
        .collect()
}

impl RestApi {
    /// Fetch an attachment from the CDN, refusing more than `max_bytes`.
    pub(crate) async fn download(
        &self,
        file: &Attachment,
        max_bytes: u64,
    ) -> Result<Vec<u8>, FileError> {
        let url = file.fetch_url(
            max_bytes,
            &self.base,
            |host| host == "cdn.discordapp.com" || host == "media.discordapp.net",
            "the attachment URL is not on Discord's CDN",
        )?;
        read_capped(self.http.get(url), max_bytes).await
    }

    /// Post `file` (with its caption as content) in `key`'s channel or thread.
    pub(crate) async fn send_file(
        &self,
        key: &ConversationKey,
        file: &OutboundFile,
    ) -> Result<MessageRef, FileError> {
        if file.bytes.len() > MAX_UPLOAD_BYTES {
            return Err(FileError::TooLarge {
                limit: MAX_UPLOAD_BYTES as u64,
            });
        }
        let caption: String = file.caption.chars().take(MAX_CONTENT_CHARS).collect();
        let payload = serde_json::json!({
            "content": caption,
            "attachments": [{ "id": 0, "filename": file.name }],
            "allowed_mentions": { "parse": [] },
        });
        self.post_with_file(key, &payload, file).await
    }

    /// Post `voice` in `key`'s channel or thread as a voice message: no content, a player
    /// with its duration and waveform.
    pub(crate) async fn send_voice(
        &self,
        key: &ConversationKey,
        voice: &VoiceNote,
    ) -> Result<MessageRef, FileError> {
        let file = OutboundFile {
            name: "voice-message.ogg".into(),
            bytes: voice.bytes.clone(),
            mime: Some(VoiceNote::MIME.into()),
            caption: String::new(),
        };
        if file.bytes.len() > MAX_UPLOAD_BYTES {
            return Err(FileError::TooLarge {
                limit: MAX_UPLOAD_BYTES as u64,
            });
        }
        let waveform = base64::engine::general_purpose::STANDARD.encode(&voice.waveform);
        let payload = serde_json::json!({
            "flags": IS_VOICE_MESSAGE,
            "attachments": [{
                "id": 0,
                "filename": file.name,
                "duration_secs": voice.duration_ms as f64 / 1000.0,
                "waveform": waveform,
            }],
        });
        self.post_with_file(key, &payload, &file).await
    }

    /// `POST /channels/{id}/messages` with `payload` and `file` as a multipart form.
    async fn post_with_file(
        &self,
        key: &ConversationKey,
        payload: &serde_json::Value,
        file: &OutboundFile,
    ) -> Result<MessageRef, FileError> {
        let boundary = boundary_for(&file.bytes);
        let body = multipart(&boundary, &payload.to_string(), file);
        let url = format!("{}/channels/{}/messages", self.base, key.chat);
        let response = self
            .http
            .post(url)
            .header(reqwest::header::AUTHORIZATION, &self.auth)
            .header(
                reqwest::header::CONTENT_TYPE,
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(body)
            .send()
            .await
            .map_err(|e| FileError::Transient(e.without_url().to_string()))?;
        let status = response.status();
        let reply: serde_json::Value = response.json().await.unwrap_or_default();
        if !status.is_success() {
            let detail = reply["message"].as_str().unwrap_or("upload refused");
            return Err(FileError::from_status(status.as_u16(), detail));
        }
        let id = reply["id"].as_str().unwrap_or_default();
        Ok(MessageRef::new(id))
    }
}

/// A multipart boundary that does not occur in `bytes` (the part would end early if it did).
fn boundary_for(bytes: &[u8]) -> String {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    (0u32..)
        .map(|n| format!("switchboard-{seed:x}-{n}"))
        .find(|b| !bytes.windows(b.len()).any(|w| w == b.as_bytes()))
        .unwrap_or_default()
}

/// A `multipart/form-data` body: the JSON payload, then the file as `files[0]`.
fn multipart(boundary: &str, payload: &str, file: &OutboundFile) -> Vec<u8> {
    let name = file.name.replace(['"', '\r', '\n'], "_");
    let mime = file.mime.as_deref().unwrap_or("application/octet-stream");
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"payload_json\"\r\nContent-Type: application/json\r\n\r\n{payload}\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"files[0]\"; filename=\"{name}\"\r\nContent-Type: {mime}\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(&file.bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    body
}
