//! Files in and out. In: an attachment's id is a media id; `GET /<media-id>` gives a URL
//! that works for a few minutes, fetched with the token (only from Meta's media host or the
//! configured API's host, so the token never reaches another). An expired URL is looked up
//! once more. Out: `POST /<phone_number_id>/media` (multipart), then an image, document or
//! audio message naming the uploaded id (a spoken answer as audio with `voice: true`, which
//! WhatsApp shows as a voice message).

use serde_json::json;
use switchboard_channel::{
    Attachment, FileError, MessageRef, OutboundFile, Target, VoiceNote, read_capped, render,
};

use crate::api::GraphError;
use crate::state::Inner;

/// WhatsApp's limit for documents (images are limited to 5 MB, audio to 16 MB).
const MAX_UPLOAD_BYTES: u64 = 100 * 1024 * 1024;
const MAX_AUDIO_BYTES: u64 = 16 * 1024 * 1024;
const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;
/// Longest caption WhatsApp shows.
const MAX_CAPTION_CHARS: usize = 1024;

/// Meta's media host.
fn meta_media_host(host: &str) -> bool {
    host == "lookaside.fbsbx.com"
}

fn file_error(err: GraphError) -> FileError {
    match err {
        GraphError::Api { status, detail, .. } => FileError::from_status(status, detail),
        GraphError::Transport(detail) => FileError::Transient(detail),
    }
}

impl Inner {
    /// The bytes of media `file.id`, refused above `max_bytes`.
    pub(crate) async fn download(
        &self,
        file: &Attachment,
        max_bytes: u64,
    ) -> Result<Vec<u8>, FileError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let info = self.api.media(&file.id).await.map_err(file_error)?;
            let located = Attachment {
                url: Some(info.url.clone()),
                size: info.file_size,
                ..file.clone()
            };
            let url = located.fetch_url(
                max_bytes,
                &self.api.base,
                meta_media_host,
                "WhatsApp media comes from lookaside.fbsbx.com only",
            )?;
            let request = self.api.authed(self.api.http.get(url));
            match read_capped(request, max_bytes).await {
                // The URL expired between the lookup and the fetch: look it up again, once.
                Err(FileError::Gone(_) | FileError::Forbidden(_)) if attempt == 1 => {
                    tracing::debug!(channel = %self.name, "media URL expired; looking it up again");
                }
                other => return other,
            }
        }
    }

    /// Upload `file` and post it in `chat`: an image when it is one WhatsApp shows, else a
    /// document.
    pub(crate) async fn send_file(
        &self,
        chat: &str,
        file: &OutboundFile,
    ) -> Result<MessageRef, FileError> {
        let image = file.is_image() && file.mime.as_deref() != Some("image/gif");
        let limit = if image {
            MAX_IMAGE_BYTES
        } else {
            MAX_UPLOAD_BYTES
        };
        if file.bytes.len() as u64 > limit {
            return Err(FileError::TooLarge { limit });
        }
        let id = self.upload(file).await?;
        let caption: String = render(&file.caption, Target::WhatsApp)
            .chars()
            .take(MAX_CAPTION_CHARS)
            .collect();
        let mut media = json!({"id": id});
        if !caption.trim().is_empty() {
            media["caption"] = json!(caption);
        }
        let body = if image {
            json!({"type": "image", "image": media})
        } else {
            media["filename"] = json!(file.name);
            json!({"type": "document", "document": media})
        };
        let body = crate::outbound::addressed(chat, body);
        self.api
            .send(body)
            .await
            .map(MessageRef::new)
            .map_err(file_error)
    }

    /// Upload `voice` and post it in `chat` as a voice message.
    pub(crate) async fn send_voice(
        &self,
        chat: &str,
        voice: &VoiceNote,
    ) -> Result<MessageRef, FileError> {
        if voice.bytes.len() as u64 > MAX_AUDIO_BYTES {
            return Err(FileError::TooLarge {
                limit: MAX_AUDIO_BYTES,
            });
        }
        let file = OutboundFile {
            name: VoiceNote::NAME.into(),
            bytes: voice.bytes.clone(),
            mime: Some(VoiceNote::MIME.into()),
            caption: String::new(),
        };
        let id = self.upload(&file).await?;
        let body = json!({"type": "audio", "audio": {"id": id, "voice": true}});
        let body = crate::outbound::addressed(chat, body);
        self.api
            .send(body)
            .await
            .map(MessageRef::new)
            .map_err(file_error)
    }

    /// `POST /<phone_number_id>/media`: the uploaded file's media id.
    async fn upload(&self, file: &OutboundFile) -> Result<String, FileError> {
        let mime = file
            .mime
            .clone()
            .unwrap_or_else(|| "application/octet-stream".into());
        let part = reqwest::multipart::Part::bytes(file.bytes.clone())
            .file_name(file.name.clone())
            .mime_str(&mime)
            .map_err(|e| FileError::Fatal(e.to_string()))?;
        let form = reqwest::multipart::Form::new()
            .text("messaging_product", "whatsapp")
            .text("type", mime.clone())
            .part("file", part);
        let url = format!("{}/{}/media", self.api.base, self.config.phone_number_id);
        let uploaded = self
            .api
            .call(self.api.http.post(url).multipart(form))
            .await
            .map_err(file_error)?;
        let id = uploaded["id"]
            .as_str()
            .ok_or_else(|| FileError::Transient("upload answered without an id".into()))?;
        Ok(id.to_owned())
    }
}
