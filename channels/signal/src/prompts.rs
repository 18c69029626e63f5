//! The choices each of the bot's prompts offered, by the prompt's timestamp. A Signal message
//! cannot carry hidden data, so a reaction (which names only the message's timestamp) or a
//! reply (which quotes it) is matched against this record, kept in a file beside the
//! gateway's data so a press after a restart is understood. Only the newest prompts are
//! kept: an approval expires long before hundreds of later prompts push it out.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use switchboard_channel::choices::Choice;

/// Prompts remembered; older ones are forgotten first.
const KEPT: usize = 256;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
struct Entry {
    timestamp: u64,
    choices: Vec<Choice>,
}

/// The record, in memory and in its file.
pub(crate) struct Prompts {
    path: PathBuf,
    entries: Mutex<Vec<Entry>>,
}

impl Prompts {
    /// The record of channel `name` under `data_dir`, as far as its file holds one.
    pub(crate) fn open(data_dir: &Path, name: &str) -> Self {
        let path = data_dir.join(format!("signal-{name}-prompts.json"));
        let entries = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        Self {
            path,
            entries: Mutex::new(entries),
        }
    }

    /// Remember that the message sent at `timestamp` offers `choices` (an edit of it keeps
    /// them under the same timestamp).
    pub(crate) fn insert(&self, timestamp: u64, choices: Vec<Choice>) {
        let snapshot = {
            let mut entries = self.lock();
            entries.retain(|e| e.timestamp != timestamp);
            if !choices.is_empty() {
                entries.push(Entry { timestamp, choices });
            }
            let over = entries.len().saturating_sub(KEPT);
            entries.drain(..over);
            entries.clone()
        };
        if let Err(err) = self.write(&snapshot) {
            tracing::warn!(path = %self.path.display(), error = %err, "could not keep the choices of a Signal prompt; a press after a restart will not be understood");
        }
    }

    /// The choices the message sent at `timestamp` offers, if it is a prompt.
    pub(crate) fn get(&self, timestamp: u64) -> Option<Vec<Choice>> {
        self.lock()
            .iter()
            .find(|e| e.timestamp == timestamp)
            .map(|e| e.choices.clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Entry>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self, entries: &[Entry]) -> std::io::Result<()> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let mut file = tempfile::NamedTempFile::new_in(dir)?;
        serde_json::to_writer(&mut file, entries)?;
        file.as_file().sync_all()?;
        file.persist(&self.path).map_err(|e| e.error)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice(label: &str) -> Choice {
        Choice {
            key: "✅".into(),
            label: label.into(),
            payload: format!("p:{label}"),
        }
    }

    #[test]
    fn choices_survive_a_reopen_and_only_the_newest_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let prompts = Prompts::open(dir.path(), "sig");
        for t in 0..(KEPT as u64 + 3) {
            prompts.insert(t, vec![choice("Approve once")]);
        }
        let again = Prompts::open(dir.path(), "sig");
        assert_eq!(
            again.get(KEPT as u64 + 2).unwrap()[0].payload,
            "p:Approve once"
        );
        assert!(again.get(0).is_none(), "the oldest was forgotten");
        again.insert(KEPT as u64 + 2, Vec::new());
        assert!(
            again.get(KEPT as u64 + 2).is_none(),
            "an edit without buttons clears them"
        );
    }
}
