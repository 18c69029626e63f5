//! Who may enter, decided per request: the configured `access_token`, no token at all for a
//! public chat on loopback, or the generated token (see `token`) re-read from its file when
//! the file changed, so `switchboard web-token --rotate` applies at once and a file that goes
//! bad closes the chat instead of opening it. Built once from the settings at start-up; `auth`
//! compares what a request presents against what [`Gate::expected`] says now.

use std::fs;
use std::net::SocketAddr;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use switchboard_channel::{SettingsError, TokenFile};

use crate::config::{WebConfig, WebConfigError};
use crate::token::token_file;

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
    let file = token_file(path.clone());
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
    use crate::token::token_path;
    use switchboard_channel::TokenFileError;

    fn file(dir: &tempfile::TempDir) -> TokenFile {
        token_file(token_path(dir.path(), "web"))
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
