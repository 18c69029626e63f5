//! Files on Telegram: the attachments of an incoming message as references (photo,
//! document, voice note, audio), their download (`getFile`, then
//! `<api_url>/file/bot<token>/<file_path>`, size-capped) and outgoing files
//! (`sendPhoto` for images, `sendDocument` for everything else, multipart) and spoken
//! answers (`sendVoice`, an Ogg/Opus file with its duration).

use switchboard_channel::{
    Attachment, AttachmentKind, ConversationKey, FileError, MessageRef, OutboundFile, VoiceNote,
    read_capped,
};
use teloxide::payloads::{SendDocumentSetters, SendPhotoSetters, SendVoiceSetters};
use teloxide::prelude::Requester;
use teloxide::types::{FileId, FileMeta, InputFile, Message};

use crate::client::{Client, Target};
use crate::errors::Failure;

/// Largest file the cloud Bot API lets a bot upload (50 MB) and download (20 MB).
const MAX_UPLOAD_BYTES: usize = 50 * 1000 * 1000;
/// Longest caption Telegram accepts.
const MAX_CAPTION_CHARS: usize = 1024;

/// The files attached to `msg`, as references (the largest size of a photo).
pub(crate) fn attachments(msg: &Message) -> Vec<Attachment> {
    let mut files = Vec::new();
    if let Some(photo) = msg
        .photo()
        .and_then(|sizes| sizes.iter().max_by_key(|p| p.width * p.height))
    {
        files.push(reference(
            AttachmentKind::Photo,
            &photo.file,
            None,
            Some("image/jpeg".into()),
        ));
    }
    if let Some(doc) = msg.document() {
        let mime = doc.mime_type.as_ref().map(ToString::to_string);
        files.push(reference(
            AttachmentKind::Document,
            &doc.file,
            doc.file_name.clone(),
            mime,
        ));
    }
    if let Some(voice) = msg.voice() {
        let mime = voice.mime_type.as_ref().map(ToString::to_string);
        files.push(reference(AttachmentKind::Voice, &voice.file, None, mime));
    }
    if let Some(audio) = msg.audio() {
        let mime = audio.mime_type.as_ref().map(ToString::to_string);
        files.push(reference(
            AttachmentKind::Audio,
            &audio.file,
            audio.file_name.clone(),
            mime,
        ));
    }
    files
}

fn reference(
    kind: AttachmentKind,
    file: &FileMeta,
    name: Option<String>,
    mime: Option<String>,
) -> Attachment {
    let name = name.filter(|n| !n.trim().is_empty()).unwrap_or_else(|| {
        let ext = match kind {
            AttachmentKind::Photo => "jpg",
            AttachmentKind::Voice => "ogg",
            AttachmentKind::Audio => "mp3",
            AttachmentKind::Document => "bin",
        };
        format!("{}.{ext}", kind.as_str())
    });
    Attachment {
        kind,
        id: file.id.0.clone(),
        url: None,
        name,
        mime,
        size: Some(u64::from(file.size)).filter(|s| *s > 0),
    }
}

impl Client {
    /// Resolve `file` with `getFile` and fetch its bytes, refusing more than `max_bytes`.
    pub(crate) async fn download(
        &self,
        file: &Attachment,
        max_bytes: u64,
    ) -> Result<Vec<u8>, FileError> {
        if file.size.is_some_and(|s| s > max_bytes) {
            return Err(FileError::TooLarge { limit: max_bytes });
        }
        let meta = self
            .bot
            .get_file(FileId(file.id.clone()))
            .await
            .map_err(|e| file_error(self.failure(&e)))?;
        if u64::from(meta.meta.size) > max_bytes {
            return Err(FileError::TooLarge { limit: max_bytes });
        }
        let token = self.config.token.expose().unwrap_or_default();
        let base = self.config.api_url.trim_end_matches('/');
        let url = format!("{base}/file/bot{token}/{}", meta.path);
        read_capped(self.bot.client().get(url), max_bytes).await
    }

    /// Post `file` in `key`: `sendPhoto` for a JPEG/PNG/WebP image, else `sendDocument`.
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
        let target = Target::of(key).map_err(|e| FileError::Fatal(e.to_string()))?;
        let input = InputFile::memory(file.bytes.clone()).file_name(file.name.clone());
        let caption: String = file.caption.chars().take(MAX_CAPTION_CHARS).collect();
        let photo = file.is_image() && file.mime.as_deref() != Some("image/gif");
        let sent = if photo {
            let mut request = self.bot.send_photo(target.chat, input);
            if let Some(thread) = target.thread {
                request = request.message_thread_id(thread);
            }
            if !caption.is_empty() {
                request = request.caption(caption);
            }
            request.await
        } else {
            let mut request = self.bot.send_document(target.chat, input);
            if let Some(thread) = target.thread {
                request = request.message_thread_id(thread);
            }
            if !caption.is_empty() {
                request = request.caption(caption);
            }
            request.await
        };
        let msg = sent.map_err(|e| file_error(self.failure(&e)))?;
        Ok(MessageRef::new(msg.id.0.to_string()))
    }

    /// Post `voice` in `key` with `sendVoice`: Telegram shows a player with its duration.
    pub(crate) async fn send_voice(
        &self,
        key: &ConversationKey,
        voice: &VoiceNote,
    ) -> Result<MessageRef, FileError> {
        if voice.bytes.len() > MAX_UPLOAD_BYTES {
            return Err(FileError::TooLarge {
                limit: MAX_UPLOAD_BYTES as u64,
            });
        }
        let target = Target::of(key).map_err(|e| FileError::Fatal(e.to_string()))?;
        let input = InputFile::memory(voice.bytes.clone()).file_name(VoiceNote::NAME);
        let mut request = self
            .bot
            .send_voice(target.chat, input)
            .duration(voice.duration_secs);
        if let Some(thread) = target.thread {
            request = request.message_thread_id(thread);
        }
        let msg = request.await.map_err(|e| file_error(self.failure(&e)))?;
        Ok(MessageRef::new(msg.id.0.to_string()))
    }
}

/// A Bot API failure as a file error ("invalid file_id" is an expired or unknown file).
fn file_error(failure: Failure) -> FileError {
    match failure {
        Failure::NotFound(detail) => FileError::Gone(detail),
        Failure::Refused(detail) if detail.contains("file is too big") => FileError::TooLarge {
            limit: 20 * 1000 * 1000,
        },
        Failure::Refused(detail) if detail.contains("file_id") || detail.contains("file") => {
            FileError::Gone(detail)
        }
        Failure::Forbidden(detail) => FileError::Forbidden(detail),
        Failure::Unauthorized => FileError::Forbidden("the bot token was refused".into()),
        Failure::RateLimited(_) | Failure::Transient(_) | Failure::Conflict(_) => {
            FileError::Transient(format!("{failure:?}"))
        }
        other => FileError::Fatal(format!("{other:?}")),
    }
}
