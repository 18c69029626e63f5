//! Files in the web chat, both ways: a person's uploads (`POST <path>/upload`, named later by
//! a message frame's `files`) and the files the agent sends (shown as a download link). Each
//! is kept under `<history_dir>/files/` as `<id>` (the bytes) and `<id>.json` (the session
//! that owns it, its name, type and size), both written under a temporary name and renamed,
//! so a restart between storing a message and downloading its file finds the file whole.
//! An id is 128 random bits (32 lowercase hex digits): nothing else names a file.

use std::io::ErrorKind;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use switchboard_channel::{Attachment, AttachmentKind, FileError};

use crate::ids::valid_file_id;

/// Longest file name kept, in characters (longer names are cut).
const MAX_NAME_CHARS: usize = 200;

/// What is known about one stored file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FileMeta {
    /// The browser session that uploaded it, or was sent it: the only one that may fetch it.
    pub(crate) session: String,
    /// The name as given (control characters removed, length capped).
    pub(crate) name: String,
    /// MIME type as the browser or the agent said, when it is a plain `type/subtype`.
    pub(crate) mime: Option<String>,
    /// Size in bytes.
    pub(crate) size: u64,
}

impl FileMeta {
    /// The reference the core stores with the message and later downloads by `id`.
    pub(crate) fn attachment(&self, id: &str) -> Attachment {
        let mime = self.mime.as_deref().unwrap_or("");
        let kind = if mime.starts_with("image/") {
            AttachmentKind::Photo
        } else if mime.starts_with("audio/") {
            AttachmentKind::Audio
        } else {
            AttachmentKind::Document
        };
        Attachment {
            kind,
            id: id.to_owned(),
            url: None,
            name: self.name.clone(),
            mime: self.mime.clone(),
            size: Some(self.size),
        }
    }
}

/// A stored file a message links to (a person's upload, a file the agent sent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FileLink {
    /// The file's id (`<path>/files/<id>` serves it).
    pub(crate) id: String,
    /// Its name as shown.
    pub(crate) name: String,
    /// Its size in bytes.
    pub(crate) size: u64,
    /// A spoken answer's length in milliseconds: the page shows a player for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) voice_ms: Option<u64>,
}

/// One web channel's stored files.
pub(crate) struct Files {
    dir: PathBuf,
}

impl Files {
    pub(crate) fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    /// Store `bytes` for `session`; returns the new file's id.
    pub(crate) async fn put(
        &self,
        session: &str,
        name: &str,
        mime: Option<&str>,
        bytes: &[u8],
    ) -> std::io::Result<String> {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let meta = FileMeta {
            session: session.to_owned(),
            name: clean_name(name),
            mime: mime.and_then(clean_mime),
            size: bytes.len() as u64,
        };
        tokio::fs::create_dir_all(&self.dir).await?;
        // The bytes first: a meta file always names bytes that are there.
        self.write(&id, bytes).await?;
        let json = serde_json::to_vec(&meta).expect("file metadata always serializes");
        self.write(&format!("{id}.json"), &json).await?;
        Ok(id)
    }

    async fn write(&self, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        let tmp = self.dir.join(format!(".{name}.tmp"));
        tokio::fs::write(&tmp, bytes).await?;
        tokio::fs::rename(&tmp, self.dir.join(name)).await
    }

    /// What is stored about file `id`, when it exists and `id` is well formed.
    pub(crate) async fn meta(&self, id: &str) -> Option<FileMeta> {
        if !valid_file_id(id) {
            return None;
        }
        let bytes = tokio::fs::read(self.dir.join(format!("{id}.json")))
            .await
            .ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// File `id`'s metadata and bytes, refused above `max_bytes`.
    pub(crate) async fn read(
        &self,
        id: &str,
        max_bytes: u64,
    ) -> Result<(FileMeta, Vec<u8>), FileError> {
        let meta = (self.meta(id).await).ok_or_else(|| FileError::Gone(format!("no file {id}")))?;
        if meta.size > max_bytes {
            return Err(FileError::TooLarge { limit: max_bytes });
        }
        match tokio::fs::read(self.dir.join(id)).await {
            Ok(bytes) if bytes.len() as u64 > max_bytes => {
                Err(FileError::TooLarge { limit: max_bytes })
            }
            Ok(bytes) => Ok((meta, bytes)),
            Err(e) if e.kind() == ErrorKind::NotFound => {
                Err(FileError::Gone(format!("no file {id}")))
            }
            Err(e) => Err(FileError::Transient(e.to_string())),
        }
    }
}

/// `name` without control characters or path separators, cut to [`MAX_NAME_CHARS`]; a name
/// left empty becomes `file`.
pub(crate) fn clean_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .filter(|c| !c.is_control())
        .map(|c| if matches!(c, '/' | '\\') { '_' } else { c })
        .take(MAX_NAME_CHARS)
        .collect();
    let trimmed = cleaned.trim();
    if trimmed.is_empty() || trimmed.chars().all(|c| c == '.') {
        "file".to_owned()
    } else {
        trimmed.to_owned()
    }
}

/// `mime` when it is a plain `type/subtype` (parameters dropped), lowercased.
pub(crate) fn clean_mime(mime: &str) -> Option<String> {
    let essence = mime.split(';').next()?.trim().to_ascii_lowercase();
    let (kind, sub) = essence.split_once('/')?;
    let token = |s: &str| {
        !s.is_empty()
            && s.len() <= 100
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
    };
    (token(kind) && token(sub)).then_some(essence)
}

/// `%XX` escapes decoded (the page sends the file name through `encodeURIComponent`, since a
/// header carries ASCII only); an escape that is not valid UTF-8 is replaced, never trusted.
pub(crate) fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            out.push((hi * 16 + lo) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The `Content-Disposition` value that makes a browser save file `name` rather than show
/// it: an ASCII fallback name and the exact name percent-encoded (RFC 6266 `filename*`).
pub(crate) fn content_disposition(name: &str) -> String {
    let ascii: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() && !matches!(c, '"' | '\\' | '%' | ';') || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut encoded = String::new();
    for byte in name.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            encoded.push(byte as char);
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    format!("attachment; filename=\"{ascii}\"; filename*=UTF-8''{encoded}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SESSION: &str = "0123456789abcdef0123456789abcdef";

    #[tokio::test]
    async fn a_stored_file_reads_back_whole_with_its_metadata() {
        let dir = tempfile::tempdir().unwrap();
        let files = Files::new(dir.path().join("files"));
        let bytes: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
        let id = files
            .put(
                SESSION,
                "a\u{7}/b.csv",
                Some("text/csv; charset=utf-8"),
                &bytes,
            )
            .await
            .unwrap();
        assert!(valid_file_id(&id));
        let (meta, back) = files.read(&id, 10_000).await.unwrap();
        assert_eq!(back, bytes);
        assert_eq!(meta.name, "a_b.csv");
        assert_eq!(meta.mime.as_deref(), Some("text/csv"));
        assert_eq!((meta.session.as_str(), meta.size), (SESSION, 5000));
        let attachment = meta.attachment(&id);
        assert_eq!(attachment.kind, AttachmentKind::Document);
        assert_eq!(attachment.size, Some(5000));
        assert_eq!(
            files.read(&id, 4999).await,
            Err(FileError::TooLarge { limit: 4999 })
        );
    }

    #[tokio::test]
    async fn unknown_or_malformed_ids_are_gone() {
        let dir = tempfile::tempdir().unwrap();
        let files = Files::new(dir.path().to_owned());
        for id in ["../../etc/passwd", "0123456789abcdef0123456789abcdef", ""] {
            assert!(
                matches!(files.read(id, 10).await, Err(FileError::Gone(_))),
                "{id}"
            );
        }
    }

    #[test]
    fn names_mimes_and_escapes_are_cleaned() {
        assert_eq!(clean_name("  ..  "), "file");
        assert_eq!(clean_name("r\u{0}é.pdf"), "ré.pdf");
        assert_eq!(clean_mime("image/PNG"), Some("image/png".into()));
        assert_eq!(clean_mime("text/html\r\nx: y"), None);
        assert_eq!(clean_mime("nonsense"), None);
        assert_eq!(percent_decode("r%C3%A9sum%C3%A9%20v2.pdf"), "résumé v2.pdf");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%FF"), "\u{FFFD}");
    }

    #[test]
    fn the_disposition_always_downloads_and_quotes_safely() {
        assert_eq!(
            content_disposition("ré \"x\".csv"),
            "attachment; filename=\"r_ _x_.csv\"; filename*=UTF-8''r%C3%A9%20%22x%22.csv"
        );
    }
}
