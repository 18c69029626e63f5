//! Inbound attachments, once the event is stored and its turn has begun: each file a person
//! sent is fetched through its channel (size-capped by the channel's `max_attachment_bytes`),
//! saved under a sanitised name in the conversation workspace's `inbox/` folder (through the
//! workspace directory handle), PDFs get their text extracted next to them, and the user
//! message the model sees gains one line per file (name, type, size, workspace path).
//!
//! The inbox keeps only the references, so the platform's acknowledgement never waits for a
//! download. A file's workspace path is derived from the event id and its position, so a
//! turn run again after a restart finds the file already saved (or saves it once): it is
//! never duplicated. A failure (expired file, refused access, over the limit, a transfer cut
//! midway) becomes one short line for the model and the person; the text is still answered.
//!
//! - this file: the flow over one message's attachments.
//! - `name`: sanitised file names and the keyed workspace path.
//! - `pdf`: text extraction.
//! - `transcribe`: voice notes to text (`[transcription]`).
//! - `vision`: image parts for a vision-capable model (count and pixel budget).

mod name;
mod pdf;
mod transcribe;

use switchboard_channel::{Attachment, AttachmentKind, FileError, Inbound};

pub use switchboard_channel::human_size;

use crate::config::TranscriptionConfig;
use crate::tools::WorkspaceDir;

pub use crate::vision::{MAX_IMAGES, MAX_PIXELS, image_part};
pub use name::{inbox_path, sanitize_name};

/// What a message's attachments became.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Received {
    /// The user message for the model: the text, then one line per file.
    pub text: String,
    /// Short lines for the person: a file that could not be received, a voice note that
    /// could not be transcribed.
    pub notices: Vec<String>,
    /// The voice notes' transcripts as one line (`🎤 “…”`), which heads the reply.
    pub heading: Option<String>,
    /// Workspace paths of the images that were saved (for a vision-capable model).
    pub images: Vec<String>,
}

/// One attachment's outcome.
enum Outcome {
    Saved {
        path: String,
        size: u64,
        text: Option<String>,
    },
    Failed(String),
}

/// Where attachments come from: the conversation's channel, read-only (the conversation's
/// `Route`, which sits above this module and posts nothing through this).
#[async_trait::async_trait]
pub trait Source: Send + Sync {
    /// Largest attachment the channel's settings let the gateway download.
    fn max_attachment_bytes(&self) -> u64;
    /// Fetch an attachment's bytes.
    async fn download(&self, file: &Attachment, max_bytes: u64) -> Result<Vec<u8>, FileError>;
}

/// Fetch and save every attachment of `inbound` into `dir`'s `inbox/`, describe them, and
/// transcribe voice notes when `[transcription]` is configured.
pub async fn receive(
    route: &dyn Source,
    dir: &WorkspaceDir,
    inbound: &Inbound,
    transcription: Option<&TranscriptionConfig>,
) -> Received {
    let mut received = Received::default();
    let max = route.max_attachment_bytes();
    let mut lines = Vec::new();
    let mut transcripts = Vec::new();
    for (index, file) in inbound.attachments.iter().enumerate() {
        let path = inbox_path(&inbound.event_id, index, &file.name);
        match fetch(route, dir, file, &path, max).await {
            Outcome::Saved { path, size, text } => {
                if file.kind == AttachmentKind::Photo || is_image(file) {
                    received.images.push(path.clone());
                }
                let mut line = describe(file, &path, size, text.as_deref());
                let spoken = matches!(file.kind, AttachmentKind::Voice | AttachmentKind::Audio);
                if let Some(config) = transcription.filter(|_| spoken) {
                    match transcribe_saved(config, dir, &path, file).await {
                        Ok(transcript) => {
                            line.insert_str(line.len() - 1, "; transcribed above");
                            transcripts.push(transcript);
                        }
                        Err(reason) => {
                            tracing::warn!(file = %file.name, %reason, "voice note not transcribed");
                            let said = format!(
                                "The voice note \"{}\" could not be transcribed.",
                                file.name
                            );
                            line = format!("{line}\n[{said}]");
                            received.notices.push(format!("⚠️ {said}"));
                        }
                    }
                }
                lines.push(line);
            }
            Outcome::Failed(reason) => {
                tracing::warn!(file = %file.name, %reason, "attachment not received");
                let line = format!("The file \"{}\" was not received: {reason}.", file.name);
                lines.push(format!("[{line}]"));
                received.notices.push(format!("⚠️ {line}"));
            }
        }
    }
    received.text = compose(&inbound.text, &transcripts, &lines);
    if !transcripts.is_empty() {
        let quoted: Vec<String> = transcripts.iter().map(|t| format!("“{t}”")).collect();
        received.heading = Some(format!("🎤 {}", quoted.join(" ")));
    }
    received
}

/// The user message: the text (or, without text, the transcripts), then one line per file.
fn compose(text: &str, transcripts: &[String], lines: &[String]) -> String {
    let mut parts: Vec<String> = Vec::new();
    if !text.trim().is_empty() {
        parts.push(text.to_owned());
    }
    parts.extend(transcripts.iter().cloned());
    if !lines.is_empty() {
        parts.push(lines.join("\n"));
    }
    parts.join("\n\n")
}

/// The transcript of the saved voice note at `path`.
async fn transcribe_saved(
    config: &TranscriptionConfig,
    dir: &WorkspaceDir,
    path: &str,
    file: &Attachment,
) -> Result<String, String> {
    let (dir, rel) = (dir.clone(), path.to_owned());
    let bytes = tokio::task::spawn_blocking(move || dir.read_file(&rel, 25 * 1024 * 1024))
        .await
        .map_err(|e| e.to_string())??;
    let mime = file.mime.as_deref().unwrap_or("audio/ogg");
    transcribe::transcribe(config, &file.name, mime, &bytes).await
}

/// The image parts of the saved images at `paths` (at most [`MAX_IMAGES`], each within
/// the pixel budget); one that cannot be read is left out and stays described.
pub async fn images(dir: &WorkspaceDir, paths: &[String]) -> Vec<crate::provider::ImagePart> {
    let (dir, paths) = (dir.clone(), paths.to_vec());
    let load = move || {
        paths
            .iter()
            .take(MAX_IMAGES)
            .filter_map(|path| {
                let bytes = dir.read_file(path, 64 * 1024 * 1024).ok()?;
                image_part(&bytes)
                    .map_err(|e| tracing::warn!(%path, error = %e, "an image is described only"))
                    .ok()
            })
            .collect()
    };
    tokio::task::spawn_blocking(load).await.unwrap_or_default()
}

/// Save `file` at `path` unless an earlier run of this turn already did.
async fn fetch(
    route: &dyn Source,
    dir: &WorkspaceDir,
    file: &Attachment,
    path: &str,
    max: u64,
) -> Outcome {
    if let Some(size) = saved_size(dir, path) {
        let text = pdf::is_pdf(file)
            .then(|| format!("{path}.txt"))
            .filter(|t| saved_size(dir, t).is_some());
        return Outcome::Saved {
            path: path.to_owned(),
            size,
            text,
        };
    }
    if file.size.is_some_and(|s| s > max) {
        return Outcome::Failed(too_large(max));
    }
    let bytes = match route.download(file, max).await {
        Ok(bytes) => bytes,
        Err(err) => return Outcome::Failed(reason(&err, max)),
    };
    let size = bytes.len() as u64;
    let (dir, path_owned, is_pdf) = (dir.clone(), path.to_owned(), pdf::is_pdf(file));
    let saved = tokio::task::spawn_blocking(move || save(&dir, &path_owned, &bytes, is_pdf)).await;
    match saved {
        Ok(Ok(text)) => Outcome::Saved {
            path: path.to_owned(),
            size,
            text,
        },
        Ok(Err(err)) => Outcome::Failed(format!("it could not be saved ({err})")),
        Err(err) => Outcome::Failed(format!("it could not be saved ({err})")),
    }
}

/// Write the file (and a PDF's text beside it, first, so a saved PDF always has its text).
fn save(
    dir: &WorkspaceDir,
    path: &str,
    bytes: &[u8],
    is_pdf: bool,
) -> Result<Option<String>, String> {
    let mut text_path = None;
    if is_pdf {
        match pdf::extract_text(bytes) {
            Ok(text) => {
                let rel = format!("{path}.txt");
                dir.write_file(&rel, text.as_bytes())?;
                text_path = Some(rel);
            }
            Err(err) => {
                tracing::warn!(%path, error = %err, "no text could be extracted from a PDF")
            }
        }
    }
    dir.write_file(path, bytes)?;
    Ok(text_path)
}

/// The size of the regular file `rel` in the workspace, when it is there.
fn saved_size(dir: &WorkspaceDir, rel: &str) -> Option<u64> {
    let meta = std::fs::symlink_metadata(dir.path().join(rel)).ok()?;
    meta.is_file().then_some(meta.len())
}

fn is_image(file: &Attachment) -> bool {
    file.mime
        .as_deref()
        .is_some_and(|m| m.starts_with("image/"))
}

/// The line the model reads about one saved file.
fn describe(file: &Attachment, path: &str, size: u64, text: Option<&str>) -> String {
    let mime = file.mime.as_deref().unwrap_or("unknown type");
    let mut line = format!(
        "[Attached {} \"{}\" ({mime}, {}), saved in the workspace at {path}",
        file.kind.as_str(),
        file.name,
        human_size(size)
    );
    match text {
        Some(text) => line.push_str(&format!("; its extracted text is at {text}]")),
        None => line.push(']'),
    }
    line
}

/// Why a download failed, in words for a person.
fn reason(err: &FileError, max: u64) -> String {
    match err {
        FileError::TooLarge { .. } => too_large(max),
        FileError::Gone(_) => {
            "the platform no longer has it (it may have expired); please send it again".into()
        }
        FileError::Forbidden(_) => "the platform refused access to it".into(),
        FileError::Transient(_) => "the download failed midway; please send it again".into(),
        FileError::Unsupported => "this channel does not receive files".into(),
        FileError::Fatal(_) => "the platform refused it".into(),
    }
}

fn too_large(max: u64) -> String {
    format!(
        "it is larger than the {} limit for files here",
        human_size(max)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_file_is_described_with_name_type_size_and_path() {
        let file = Attachment {
            kind: AttachmentKind::Document,
            id: "f".into(),
            url: None,
            name: "report.pdf".into(),
            mime: Some("application/pdf".into()),
            size: None,
        };
        let line = describe(
            &file,
            "inbox/e-0-report.pdf",
            2048,
            Some("inbox/e-0-report.pdf.txt"),
        );
        assert!(
            line.contains("\"report.pdf\" (application/pdf, 2.0 KB)"),
            "{line}"
        );
        assert!(
            line.contains("inbox/e-0-report.pdf;") && line.contains(".pdf.txt"),
            "{line}"
        );
    }
}
