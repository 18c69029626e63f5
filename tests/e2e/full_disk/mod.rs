//! A full disk: the gateway's database and `data_dir` on a small filesystem of the test's
//! own (a 4 MiB tmpfs it mounts), filled to the last byte. No platform event is
//! acknowledged that was not stored (Slack gets a 5xx, Telegram's offset stays, the web
//! chat sends no ack), `/readyz` says why, and once space returns every event is stored and
//! answered exactly once without a restart. `matrix` does the same for the Matrix sync
//! token against a real Synapse, and `postgres` against a PostgreSQL database that refuses
//! writes.
//!
//! Mounting needs root (as in CI); elsewhere the SQLite test skips with a notice written
//! past the test harness's capture, and `SWITCHBOARD_REQUIRE_MOUNT=1` (set by `.ci/run`)
//! makes that a failure.

mod matrix;
mod postgres;
mod sqlite;

use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use switchboard_standins::slack::{SignedRequest, SlackMessage, dm_event};
use switchboard_standins::{Later, eventually};

use crate::app::TestApp;
use crate::helpers::WAIT;

/// The small filesystem's size: room for the gateway's database and files, little more.
const SIZE: &str = "4m";

/// A tmpfs of [`SIZE`] mounted on a fresh directory; unmounted when dropped.
pub struct SmallDisk {
    /// Holds the mount point.
    dir: tempfile::TempDir,
    /// The file [`SmallDisk::fill`] writes.
    filler: PathBuf,
}

impl SmallDisk {
    /// Mount one, or `None` after a visible notice where this process may not mount.
    pub fn mount() -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={SIZE}"), "tmpfs"])
            .arg(dir.path())
            .output();
        let why = match mounted {
            Ok(out) if out.status.success() => {
                let filler = dir.path().join("filler");
                return Some(Self { dir, filler });
            }
            Ok(out) => String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            Err(err) => err.to_string(),
        };
        let required = std::env::var("SWITCHBOARD_REQUIRE_MOUNT").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "mounting a tmpfs is required (SWITCHBOARD_REQUIRE_MOUNT=1) but failed: {why}"
        );
        // Straight to the file descriptor: the harness hides `eprintln!` of a passing test.
        let notice =
            format!("\nSKIPPED (full-disk test): cannot mount a tmpfs ({why}); run as root\n");
        let _ = std::io::stderr().write_all(notice.as_bytes());
        None
    }

    /// The mount point.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Write a file until the filesystem takes not one more byte.
    pub fn fill(&self) {
        let mut file = std::fs::File::create(&self.filler).unwrap();
        let chunk = vec![0xA5u8; 64 * 1024];
        let mut size = chunk.len();
        while size > 0 {
            match file.write(&chunk[..size]) {
                Ok(0) => size /= 2,
                Ok(_) => {}
                Err(err) if err.kind() == ErrorKind::StorageFull => size /= 2,
                Err(err) => panic!("filling the disk: {err}"),
            }
        }
        // tmpfs allocates as it is written: the data is in place once `write` returned.
        assert!(file.write(&[0]).is_err(), "one more byte fit");
    }

    /// Give the space back.
    pub fn free(&self) {
        std::fs::remove_file(&self.filler).unwrap();
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        // Lazily: a gateway of a failed test may still hold files open there.
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// A DM to the bot in the Slack channel `D0FULLDISK` under `event_id`, saying `text`.
fn slack_dm(event_id: &str, text: &str) -> SignedRequest {
    SignedRequest::event(&dm_event(&SlackMessage {
        event_id,
        text,
        channel: "D0FULLDISK",
        ..SlackMessage::default()
    }))
}

/// The fake LLM's answer to `text`.
fn echo(text: &str) -> String {
    format!("You said: {text}")
}

/// How many model requests asked about `text` (as the conversation's newest message).
fn asked(app: &TestApp, text: &str) -> usize {
    let last_user = |body: &serde_json::Value| {
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let last = messages.iter().rev().find(|m| m["role"] == "user").cloned();
        last.map(|m| m["content"].to_string()).unwrap_or_default()
    };
    let requests = app.llm.requests();
    requests
        .iter()
        .filter(|r| last_user(r).contains(text))
        .count()
}

/// `GET /readyz`: its status and body.
async fn readyz(app: &TestApp) -> (u16, serde_json::Value) {
    let response = reqwest::get(app.url("/readyz")).await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// Until `/readyz` answers 200 again, by itself.
pub async fn wait_ready(app: &TestApp) {
    eventually(WAIT, "/readyz to answer 200 again", async || {
        let (status, body) = readyz(app).await;
        if status == 200 {
            Ok(())
        } else {
            Err(Later(move || format!("{body:#}")))
        }
    })
    .await;
}

/// Until the bot has answered each of `texts` in the Slack DM, once.
pub async fn wait_answered_on_slack(app: &TestApp, texts: &[&str]) {
    let messages = eventually(WAIT, "an answer to each text", async || {
        let messages = app.slack().messages("D0FULLDISK");
        let answered = |t: &&str| messages.iter().any(|m| m.text.trim() == echo(t));
        if texts.iter().all(answered) {
            Ok(messages)
        } else {
            Err(messages)
        }
    })
    .await;
    for t in texts {
        let count = messages.iter().filter(|m| m.text.trim() == echo(t)).count();
        assert_eq!(count, 1, "{t} answered once: {messages:#?}");
    }
}
