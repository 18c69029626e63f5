//! The generated access token: when no `access_token` is configured, the chat is not opened
//! to whoever reaches the port (on loopback that includes a sandboxed tool with network and
//! every visitor of a proxy on this host); a random token is made at first start, stored in
//! `<data_dir>/web/<name>.token` (mode 0600, so it survives restarts and upgrades), and is
//! the gate from then on. Only a chat meant for the public (`public_hosts` on a loopback
//! listen, without a token) opens without one, and it is not its operator's. `switchboard web-token` prints the link with
//! it and `--rotate` replaces it; a running gateway re-checks the file on every request (a
//! `stat`, and a read only when the file changed), so a rotated token applies at once.
//!
//! A configured token always wins; this file is then neither read nor written.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::net::SocketAddr;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use rand::RngCore;
use rand::rngs::OsRng;
use switchboard_channel::SettingsError;

use crate::config::{WebConfig, WebConfigError};

/// Random bytes in a generated token (256 bits), written as 64 hex digits.
const TOKEN_BYTES: usize = 32;
/// The shortest and longest token a file may hold; anything else is refused, never served.
const TOKEN_LEN: std::ops::RangeInclusive<usize> = 16..=512;

/// Where channel `name` keeps its generated token under the gateway's `data_dir`.
pub fn token_path(data_dir: &Path, name: &str) -> PathBuf {
    data_dir.join("web").join(format!("{name}.token"))
}

/// Why the stored token cannot be read or written; the message names the file.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    /// Reading, writing or renaming the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The token file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// The file holds something that is not a token (empty, spaces, too short or long).
    #[error(
        "{path} does not hold a usable token (16 to 512 visible characters); replace it with \
         `switchboard web-token --rotate`"
    )]
    Invalid {
        /// The token file.
        path: PathBuf,
    },
}

/// One channel's token file.
#[derive(Clone, Debug)]
pub struct TokenFile {
    path: PathBuf,
}

impl TokenFile {
    /// The token file at `path` (see [`token_path`]); nothing is read yet.
    pub fn new(path: PathBuf) -> Self {
        Self { path }
    }

    /// Where the token lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The stored token, or `None` when there is no file yet.
    pub fn read(&self) -> Result<Option<String>, TokenFileError> {
        match fs::read_to_string(&self.path) {
            Ok(text) => self.parse(&text).map(Some),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(self.io(source)),
        }
    }

    /// The stored token, made and stored first when there is none; `true` when it was made
    /// now. Two processes starting at once agree: the file appears whole or not at all, and
    /// the one that loses the race reads the winner's token.
    pub fn load_or_create(&self) -> Result<(String, bool), TokenFileError> {
        if let Some(token) = self.read()? {
            return Ok((token, false));
        }
        let token = generate();
        let staged = self.stage(&token)?;
        let linked = fs::hard_link(&staged, &self.path);
        let _ = fs::remove_file(&staged);
        match linked {
            Ok(()) => Ok((token, true)),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
                let token = self.read()?.ok_or_else(|| self.invalid())?;
                Ok((token, false))
            }
            Err(source) => Err(self.io(source)),
        }
    }

    /// Replace the stored token with a new one (atomically: a reader sees the old file or
    /// the new one) and return it.
    pub fn rotate(&self) -> Result<String, TokenFileError> {
        let token = generate();
        let staged = self.stage(&token)?;
        fs::rename(&staged, &self.path).map_err(|source| {
            let _ = fs::remove_file(&staged);
            self.io(source)
        })?;
        Ok(token)
    }

    /// Write `token` to a fresh file beside the real one, mode 0600, synced. What this
    /// creates belongs to whoever owns the nearest existing directory above it, so root
    /// running `web-token` for a gateway that runs as its own user leaves files that user
    /// can read (for anyone else the change of owner fails and is not needed).
    fn stage(&self, token: &str) -> Result<PathBuf, TokenFileError> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let (owner, made) = make_dirs(dir).map_err(|source| self.io(source))?;
        let staged = dir.join(format!(".{}.{}.tmp", file_name(&self.path), generate()));
        let written = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&staged)
            .and_then(|mut file| {
                file.write_all(format!("{token}\n").as_bytes())?;
                file.sync_all()
            });
        if let Err(source) = written {
            let _ = fs::remove_file(&staged);
            return Err(self.io(source));
        }
        for path in made.iter().chain([&staged]) {
            let _ = std::os::unix::fs::chown(path, Some(owner.0), Some(owner.1));
        }
        Ok(staged)
    }

    fn parse(&self, text: &str) -> Result<String, TokenFileError> {
        let token = text.trim();
        let visible = token.bytes().all(|b| b.is_ascii_graphic());
        if TOKEN_LEN.contains(&token.len()) && visible {
            Ok(token.to_owned())
        } else {
            Err(self.invalid())
        }
    }

    fn io(&self, source: io::Error) -> TokenFileError {
        TokenFileError::Io {
            path: self.path.clone(),
            source,
        }
    }

    fn invalid(&self) -> TokenFileError {
        TokenFileError::Invalid {
            path: self.path.clone(),
        }
    }
}

/// Create `dir` and its missing parents; returns the owner (uid, gid) of the nearest
/// directory that existed, and the directories made.
fn make_dirs(dir: &Path) -> io::Result<((u32, u32), Vec<PathBuf>)> {
    let mut made = Vec::new();
    let mut existing = dir;
    while !existing.exists() {
        made.push(existing.to_owned());
        existing = existing.parent().unwrap_or(Path::new("/"));
    }
    let meta = fs::metadata(existing)?;
    fs::create_dir_all(dir)?;
    Ok(((meta.uid(), meta.gid()), made))
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A new token: [`TOKEN_BYTES`] from the operating system's CSPRNG, as lowercase hex (URL-
/// and cookie-safe as it is).
fn generate() -> String {
    let mut bytes = [0u8; TOKEN_BYTES];
    OsRng.fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What a request must present to be let in, decided per request.
pub(crate) enum Expected {
    /// Anyone (a public chat: `public_hosts` on loopback, no token; the `Host` check
    /// still applies).
    Anyone,
    /// This token.
    Token(Arc<str>),
    /// Nobody: the token file is missing or unreadable, and the chat stays closed.
    Nobody,
}

/// How the chat decides who may enter: fixed at start-up, or the token file as it is now.
pub(crate) enum Gate {
    /// No token: a public chat (`public_hosts`) on a loopback address.
    Open,
    /// The configured `access_token`.
    Fixed(Arc<str>),
    /// The generated token, re-checked against its file on every request.
    File(LiveToken),
}

impl Gate {
    /// Whether the chat is open to anyone (then the `Host` check is its guard against DNS
    /// rebinding).
    pub(crate) fn is_open(&self) -> bool {
        matches!(self, Self::Open)
    }

    /// What this request must present.
    pub(crate) fn expected(&self) -> Expected {
        match self {
            Self::Open => Expected::Anyone,
            Self::Fixed(token) => Expected::Token(Arc::clone(token)),
            Self::File(live) => live.current(),
        }
    }
}

/// The gate for channel `name` as `config` and `listen` set it up: the configured token,
/// anyone for a public chat on loopback, and otherwise the generated token (read, or made
/// now). A loopback peer is never let in for being one: a sandboxed tool and a proxy on this
/// host are loopback peers too.
pub(crate) fn gate(
    name: &str,
    config: &WebConfig,
    listen: SocketAddr,
) -> Result<Gate, WebConfigError> {
    if let Some(token) = config.access_token.expose() {
        return Ok(Gate::Fixed(Arc::from(token)));
    }
    if config.public_on(listen) {
        return Ok(Gate::Open);
    }
    let refused = |message: String| WebConfigError {
        name: name.to_owned(),
        problem: SettingsError::new("access_token", message),
    };
    let Some(path) = &config.token_file else {
        // `check` refuses this before; never fall through to an open chat.
        return Err(refused(
            "is required, or a generated token file (the gateway gives one)".to_owned(),
        ));
    };
    let file = TokenFile::new(path.clone());
    let (token, _) = file
        .load_or_create()
        .map_err(|err| refused(format!("is unset and no token can be generated: {err}")))?;
    Ok(Gate::File(LiveToken::new(file, token)))
}

/// The token file with the last token read from it, keyed by the file's identity (inode,
/// size, modification time), so a rotation (a new file renamed over the old) is seen at the
/// next request and an unchanged file costs one `stat`.
pub(crate) struct LiveToken {
    file: TokenFile,
    /// A std Mutex: held only to compare and swap the cached value, never across an await.
    cached: Mutex<Option<(FileStamp, Arc<str>)>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
struct FileStamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
}

impl LiveToken {
    /// Watch `file`, starting from `token` (what start-up read or created).
    pub(crate) fn new(file: TokenFile, token: String) -> Self {
        let stamp = stamp(file.path());
        Self {
            cached: Mutex::new(stamp.map(|s| (s, Arc::from(token)))),
            file,
        }
    }

    fn current(&self) -> Expected {
        let now = stamp(self.file.path());
        let mut cached = self.cached.lock().unwrap_or_else(PoisonError::into_inner);
        if let (Some((stamp, token)), Some(now)) = (cached.as_ref(), now)
            && *stamp == now
        {
            return Expected::Token(Arc::clone(token));
        }
        let read = match now {
            Some(_) => self.file.read(),
            None => Ok(None),
        };
        match (read, now) {
            (Ok(Some(token)), Some(now)) => {
                let token: Arc<str> = Arc::from(token);
                *cached = Some((now, Arc::clone(&token)));
                Expected::Token(token)
            }
            (problem, _) => {
                // Said once per change, not per request: the chat stays closed meanwhile.
                if cached.take().is_some() {
                    let why = match problem {
                        Err(err) => err.to_string(),
                        Ok(_) => format!("{} is gone", self.file.path().display()),
                    };
                    tracing::warn!(
                        "web chat token: {why}; refusing everyone until `switchboard web-token \
                         --rotate` makes a new one"
                    );
                }
                Expected::Nobody
            }
        }
    }
}

fn stamp(path: &Path) -> Option<FileStamp> {
    let meta = fs::metadata(path).ok()?;
    Some(FileStamp {
        dev: meta.dev(),
        ino: meta.ino(),
        len: meta.len(),
        mtime: (meta.mtime(), meta.mtime_nsec()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &tempfile::TempDir) -> TokenFile {
        TokenFile::new(token_path(dir.path(), "web"))
    }

    #[test]
    fn a_token_is_made_once_with_mode_0600_and_read_back_after() {
        let dir = tempfile::tempdir().unwrap();
        let tokens = file(&dir);
        assert!(tokens.read().unwrap().is_none());
        let (made, fresh) = tokens.load_or_create().unwrap();
        assert!(fresh);
        assert_eq!(made.len(), 64);
        assert!(made.bytes().all(|b| b.is_ascii_hexdigit()));
        let mode = fs::metadata(tokens.path()).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(tokens.load_or_create().unwrap(), (made.clone(), false));
        let leftovers = fs::read_dir(tokens.path().parent().unwrap())
            .unwrap()
            .count();
        assert_eq!(leftovers, 1, "no staged file is left behind");
    }

    #[test]
    fn rotation_replaces_the_token_and_the_live_gate_follows_it() {
        let dir = tempfile::tempdir().unwrap();
        let tokens = file(&dir);
        let (first, _) = tokens.load_or_create().unwrap();
        let gate = Gate::File(LiveToken::new(tokens.clone(), first.clone()));
        assert!(matches!(gate.expected(), Expected::Token(t) if *t == *first));
        let second = tokens.rotate().unwrap();
        assert_ne!(first, second);
        assert!(matches!(gate.expected(), Expected::Token(t) if *t == *second));
        fs::remove_file(tokens.path()).unwrap();
        assert!(matches!(gate.expected(), Expected::Nobody), "gone: closed");
    }

    #[test]
    fn a_token_made_by_root_belongs_to_the_owner_of_the_data_directory() {
        let me = fs::metadata("/proc/self").unwrap().uid();
        let dir = tempfile::tempdir().unwrap();
        let nobody = 65534;
        if me != 0 || std::os::unix::fs::chown(dir.path(), Some(nobody), Some(nobody)).is_err() {
            return; // only root can hand a file to someone else
        }
        let tokens = file(&dir);
        tokens.load_or_create().unwrap();
        for path in [tokens.path(), tokens.path().parent().unwrap()] {
            let meta = fs::metadata(path).unwrap();
            assert_eq!((meta.uid(), meta.gid()), (nobody, nobody), "{path:?}");
        }
        tokens.rotate().unwrap();
        assert_eq!(fs::metadata(tokens.path()).unwrap().uid(), nobody);
    }

    #[test]
    fn a_file_without_a_usable_token_is_refused_and_closes_the_gate() {
        let dir = tempfile::tempdir().unwrap();
        let tokens = file(&dir);
        let (first, _) = tokens.load_or_create().unwrap();
        let gate = Gate::File(LiveToken::new(tokens.clone(), first));
        for bad in ["", "   \n", "short", "has a space in the middle of it"] {
            fs::write(tokens.path(), bad).unwrap();
            assert!(
                matches!(tokens.read(), Err(TokenFileError::Invalid { .. })),
                "{bad:?}"
            );
            assert!(matches!(gate.expected(), Expected::Nobody), "{bad:?}");
        }
    }
}
