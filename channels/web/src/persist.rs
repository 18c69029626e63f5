//! Saving transcripts so a page loaded after a gateway restart still shows its history: one
//! small JSON file per session (`<dir>/<session id>.json`), written whole to a temporary file
//! and renamed into place, so a crash leaves the old file or the new one, never half of one.
//! Every text is run through the core's [`Redactor`] (its credential scrubber) on the way to
//! disk, so a secret a person pasted or a reply quoted is never written.

use std::io::ErrorKind;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use switchboard_channel::Redactor;

use crate::session::Message;

/// The file format; `version` lets a later format read (or skip) older files.
#[derive(Serialize, Deserialize)]
struct File {
    version: u32,
    messages: Vec<Message>,
}

const VERSION: u32 = 1;

/// Where one channel's transcripts live.
pub(crate) struct Store {
    dir: PathBuf,
    /// Applied to every message's text and notice before it is written.
    redactor: Redactor,
    /// Serialises writes, so two saves of one session land in the order they were taken.
    pub(crate) write_lock: tokio::sync::Mutex<()>,
}

impl Store {
    pub(crate) fn new(dir: PathBuf, redactor: Redactor) -> Self {
        Self {
            dir,
            redactor,
            write_lock: tokio::sync::Mutex::new(()),
        }
    }

    fn path(&self, session: &str) -> PathBuf {
        self.dir.join(format!("{session}.json"))
    }

    /// The saved transcript of `session`, rendered; empty when there is none. A file that
    /// cannot be read is logged and treated as empty rather than failing the page.
    pub(crate) async fn load(&self, session: &str) -> Vec<Message> {
        let path = self.path(session);
        let bytes = match tokio::fs::read(&path).await {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == ErrorKind::NotFound => return Vec::new(),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "could not read a web chat transcript");
                return Vec::new();
            }
        };
        match serde_json::from_slice::<File>(&bytes) {
            Ok(file) if file.version == VERSION => {
                let mut messages = file.messages;
                messages.iter_mut().for_each(Message::rerender);
                messages
            }
            Ok(file) => {
                tracing::warn!(path = %path.display(), version = file.version, "skipped a web chat transcript of an unknown version");
                Vec::new()
            }
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "skipped a malformed web chat transcript");
                Vec::new()
            }
        }
    }

    /// When the saved transcript of `session` last changed on disk (`None`: no file). A
    /// replica sharing `data_dir` that sees another time than its own last load or save
    /// knows another replica wrote it.
    pub(crate) async fn modified(&self, session: &str) -> Option<std::time::SystemTime> {
        let meta = tokio::fs::metadata(self.path(session)).await.ok()?;
        meta.modified().ok()
    }

    /// The bytes [`Store::save`] writes for `messages`, every text redacted.
    pub(crate) fn encode<'a>(&self, messages: impl Iterator<Item = &'a Message>) -> Vec<u8> {
        let redact = |m: &Message| Message {
            text: self.redactor.redact(&m.text),
            notice: m.notice.as_deref().map(|n| self.redactor.redact(n)),
            ..m.clone()
        };
        let file = File {
            version: VERSION,
            messages: messages.map(redact).collect(),
        };
        serde_json::to_vec(&file).expect("transcripts always serialize")
    }

    /// Replace the saved transcript of `session` with `bytes` (from [`Store::encode`]).
    pub(crate) async fn save(&self, session: &str, bytes: Vec<u8>) -> std::io::Result<()> {
        tokio::fs::create_dir_all(&self.dir).await?;
        let path = self.path(session);
        let tmp = self.dir.join(format!(".{session}.json.tmp"));
        tokio::fs::write(&tmp, bytes).await?;
        tokio::fs::rename(&tmp, &path).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Role;

    #[tokio::test]
    async fn a_saved_transcript_loads_back_rendered() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().join("web"), Redactor::default());
        let messages = [
            Message::new("u1".into(), Role::User, "<b>hi</b>".into(), Vec::new()),
            Message::new("b1".into(), Role::Bot, "**hello**".into(), Vec::new()),
        ];
        store
            .save("s1", store.encode(messages.iter()))
            .await
            .unwrap();
        let loaded = store.load("s1").await;
        assert_eq!(loaded, messages);
        assert_eq!(loaded[1].html, "<p><strong>hello</strong></p>");
    }

    #[tokio::test]
    async fn texts_and_notices_are_redacted_on_disk_but_not_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let redactor = Redactor::new(|t| t.replace("hunter2", "hunt*[REDACTED]"));
        let store = Store::new(dir.path().to_owned(), redactor);
        let mut bot = Message::new("b1".into(), Role::Bot, "pw hunter2".into(), Vec::new());
        bot.notice = Some("approved: hunter2".into());
        let messages = [
            Message::new("u1".into(), Role::User, "my hunter2".into(), Vec::new()),
            bot,
        ];
        store
            .save("s1", store.encode(messages.iter()))
            .await
            .unwrap();
        let raw = std::fs::read_to_string(dir.path().join("s1.json")).unwrap();
        assert!(
            !raw.contains("hunter2") && raw.contains("hunt*[REDACTED]"),
            "{raw}"
        );
        assert_eq!(messages[0].text, "my hunter2");
        let loaded = store.load("s1").await;
        assert_eq!(loaded[0].text, "my hunt*[REDACTED]");
        assert_eq!(
            loaded[1].notice.as_deref(),
            Some("approved: hunt*[REDACTED]")
        );
    }

    #[tokio::test]
    async fn missing_or_malformed_files_load_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().to_owned(), Redactor::default());
        assert!(store.load("absent").await.is_empty());
        std::fs::write(dir.path().join("bad.json"), b"{not json").unwrap();
        assert!(store.load("bad").await.is_empty());
        std::fs::write(
            dir.path().join("new.json"),
            br#"{"version":99,"messages":[]}"#,
        )
        .unwrap();
        assert!(store.load("new").await.is_empty());
    }
}
