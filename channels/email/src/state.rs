//! What the channel remembers across restarts, in `<data_dir>/email/<name>/state.json`
//! (written whole to a temporary file, synced, then renamed over, so a crash leaves the old
//! or the new file, never half of one):
//! - the cursor: the mailbox's UIDVALIDITY and the last UID whose mail is stored in the
//!   inbox (written only after the inbox said so);
//! - each thread's reply headers (subject, the newest mail, References), so the answer a
//!   turn sends after a restart still threads;
//! - the bot's own Message-IDs, so a reply naming only one of them finds its thread;
//! - approval prompts' choices, so a reply decides them after a restart too.
//!
//! Received attachments are kept beside it in `files/`, named by their SHA-256.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};

/// Threads, sent ids and prompts kept; the oldest go first beyond this.
const KEEP: usize = 5000;

/// Where reading resumes: mail with a UID above `last_uid` under this UIDVALIDITY is new.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Cursor {
    pub(crate) uid_validity: u32,
    pub(crate) last_uid: u32,
}

impl Cursor {
    /// Both numbers in one `i64`, the form a leader's cursor is saved in.
    pub(crate) fn packed(self) -> i64 {
        i64::from(self.uid_validity) << 32 | i64::from(self.last_uid)
    }

    /// The cursor [`packed`](Self::packed) made.
    pub(crate) fn unpacked(value: i64) -> Self {
        Self {
            uid_validity: u32::try_from(value >> 32 & 0xffff_ffff).unwrap_or(0),
            last_uid: u32::try_from(value & 0xffff_ffff).unwrap_or(0),
        }
    }
}

/// What an answer in one thread needs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Thread {
    /// The person's address the thread is with.
    pub(crate) with: String,
    /// The subject without `Re:`.
    pub(crate) subject: String,
    /// The newest mail of the thread: what the answer replies to.
    pub(crate) last_id: String,
    /// The thread's ids, oldest first (capped).
    pub(crate) references: Vec<String>,
    seq: u64,
}

/// One choice a prompt offered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Choice {
    pub(crate) label: String,
    pub(crate) payload: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Saved {
    cursor: Option<Cursor>,
    threads: BTreeMap<String, Thread>,
    /// The bot's Message-ID → the thread's root id.
    sent: BTreeMap<String, (String, u64)>,
    /// A prompt's Message-ID → its choices.
    prompts: BTreeMap<String, (Vec<Choice>, u64)>,
    seq: u64,
}

/// The state file and its contents.
pub(crate) struct State {
    dir: PathBuf,
    saved: Mutex<Saved>,
}

impl State {
    /// Open (or start) the state in `dir`.
    pub(crate) fn open(dir: &Path) -> Result<Self, String> {
        std::fs::create_dir_all(dir.join("files"))
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        let path = dir.join("state.json");
        let saved = match std::fs::read(&path) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Saved::default(),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        Ok(Self {
            dir: dir.to_owned(),
            saved: Mutex::new(saved),
        })
    }

    /// Where received files are kept.
    pub(crate) fn files(&self) -> PathBuf {
        self.dir.join("files")
    }

    pub(crate) fn cursor(&self) -> Option<Cursor> {
        self.lock().cursor
    }

    pub(crate) fn save_cursor(&self, cursor: Cursor) -> std::io::Result<()> {
        self.update(|s| s.cursor = Some(cursor))
    }

    pub(crate) fn thread(&self, root: &str) -> Option<Thread> {
        self.lock().threads.get(root).cloned()
    }

    /// The thread root an id of the bot's own mail belongs to.
    pub(crate) fn root_of_sent(&self, id: &str) -> Option<String> {
        self.lock().sent.get(id).map(|(root, _)| root.clone())
    }

    /// The choices of the prompt mailed as `id`.
    pub(crate) fn prompt(&self, id: &str) -> Option<Vec<Choice>> {
        self.lock().prompts.get(id).map(|(c, _)| c.clone())
    }

    /// Record that `message_id` (from `with`, about `subject`) is the newest mail of `root`.
    pub(crate) fn received(
        &self,
        root: &str,
        with: &str,
        subject: &str,
        message_id: &str,
        references: &[String],
    ) -> std::io::Result<()> {
        self.update(|s| {
            s.seq += 1;
            let seq = s.seq;
            let thread = s.threads.entry(root.to_owned()).or_default();
            thread.with = with.to_owned();
            if thread.subject.is_empty() {
                thread.subject = strip_re(subject).to_owned();
            }
            thread.last_id = message_id.to_owned();
            for id in references.iter().chain([&message_id.to_owned()]) {
                if !thread.references.contains(id) {
                    thread.references.push(id.clone());
                }
            }
            cap_references(&mut thread.references);
            thread.seq = seq;
            trim(&mut s.threads, |t| t.seq);
        })
    }

    /// Record the bot's own mail `id` in thread `root` (and its choices, for a prompt).
    pub(crate) fn sent(&self, root: &str, id: &str, choices: Vec<Choice>) -> std::io::Result<()> {
        self.update(|s| {
            s.seq += 1;
            let seq = s.seq;
            s.sent.insert(id.to_owned(), (root.to_owned(), seq));
            trim(&mut s.sent, |(_, seq)| *seq);
            if let Some(thread) = s.threads.get_mut(root) {
                thread.references.push(id.to_owned());
                cap_references(&mut thread.references);
            }
            if !choices.is_empty() {
                s.prompts.insert(id.to_owned(), (choices, seq));
                trim(&mut s.prompts, |(_, seq)| *seq);
            }
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Saved> {
        self.saved.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Apply `change` and write the whole state; the change stays in memory even when the
    /// write fails (the caller then does not confirm what depended on it).
    fn update(&self, change: impl FnOnce(&mut Saved)) -> std::io::Result<()> {
        let mut saved = self.lock();
        change(&mut saved);
        let bytes = serde_json::to_vec(&*saved).map_err(std::io::Error::other)?;
        let tmp = self.dir.join("state.json.tmp");
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, self.dir.join("state.json"))
    }
}

/// The subject without leading `Re:`/`Fwd:` markers.
pub(crate) fn strip_re(subject: &str) -> &str {
    let mut s = subject.trim();
    loop {
        let lower = s.to_ascii_lowercase();
        match ["re:", "aw:", "fwd:", "fw:", "wg:"]
            .iter()
            .find(|p| lower.starts_with(*p))
        {
            Some(p) => s = s[p.len()..].trim_start(),
            None => return s,
        }
    }
}

/// A References header stays short: the root and the newest ids (RFC 5322 §3.6.4 allows
/// trimming the middle).
fn cap_references(refs: &mut Vec<String>) {
    const MAX: usize = 20;
    if refs.len() > MAX {
        refs.drain(1..refs.len() - (MAX - 1));
    }
}

fn trim<V>(map: &mut BTreeMap<String, V>, seq: impl Fn(&V) -> u64) {
    while map.len() > KEEP {
        let Some(oldest) = map
            .iter()
            .min_by_key(|(_, v)| seq(v))
            .map(|(k, _)| k.clone())
        else {
            return;
        };
        map.remove(&oldest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_packs_into_one_number_and_back() {
        let c = Cursor {
            uid_validity: u32::MAX,
            last_uid: 7,
        };
        assert_eq!(Cursor::unpacked(c.packed()), c);
    }

    #[test]
    fn threads_sent_ids_and_prompts_survive_a_reopen() {
        let dir = std::env::temp_dir().join(format!("sb-email-state-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let state = State::open(&dir).unwrap();
        state
            .received("m1@p", "a@p.test", "Re: Plan", "m1@p", &[])
            .unwrap();
        let choice = Choice {
            label: "Deny".into(),
            payload: "deny:1".into(),
        };
        state.sent("m1@p", "b1@bot", vec![choice.clone()]).unwrap();
        state
            .save_cursor(Cursor {
                uid_validity: 3,
                last_uid: 9,
            })
            .unwrap();
        let again = State::open(&dir).unwrap();
        let thread = again.thread("m1@p").unwrap();
        assert_eq!(thread.subject, "Plan");
        assert_eq!(thread.references, ["m1@p", "b1@bot"]);
        assert_eq!(again.root_of_sent("b1@bot").as_deref(), Some("m1@p"));
        assert_eq!(again.prompt("b1@bot"), Some(vec![choice]));
        assert_eq!(again.cursor().unwrap().last_uid, 9);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn re_and_fwd_prefixes_are_stripped() {
        assert_eq!(strip_re("Re: RE: Fwd: lunch"), "lunch");
        assert_eq!(strip_re("Regarding lunch"), "Regarding lunch");
    }
}
