//! A generated access token kept in a file: the web chat's (`<data_dir>/web/<name>.token`) and
//! the dashboard's (`<data_dir>/admin.token`). The gateway makes it at first start, the
//! `web-token` and `admin-token` commands print and rotate it, and a running gateway reads it
//! again per request, so a rotation applies at once. One type, so every such file is written
//! the same way: mode 0600, whole or not at all (a staged file hard-linked or renamed into
//! place), owned by whoever owns the data directory.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::ops::RangeInclusive;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rand::RngCore;
use rand::rngs::OsRng;

/// Random bytes in a generated token (256 bits), written as 64 hex digits.
const TOKEN_BYTES: usize = 32;
/// The shortest and longest token a file may hold; anything else is refused, never served.
pub const TOKEN_LEN: RangeInclusive<usize> = 16..=512;

/// Why a token file cannot be read or written; the message names the file.
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
         `{remedy}`"
    )]
    Invalid {
        /// The token file.
        path: PathBuf,
        /// The command that writes a new token.
        remedy: &'static str,
    },
}

/// One token file.
#[derive(Clone, Debug)]
pub struct TokenFile {
    path: PathBuf,
    /// The command that replaces the token, named when the file holds no usable one.
    remedy: &'static str,
}

impl TokenFile {
    /// The token file at `path`, replaced by the command `remedy` (e.g.
    /// `switchboard web-token --rotate`) when it goes bad; nothing is read yet.
    pub fn new(path: PathBuf, remedy: &'static str) -> Self {
        Self { path, remedy }
    }

    /// Where the token lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The stored token, or `None` when there is no file yet. A file without a usable token
    /// is an error, so whatever it guards stays closed rather than open.
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
    /// running `web-token` or `admin-token` for a gateway that runs as its own user leaves
    /// files that user can read (for anyone else the change of owner fails and is not needed).
    fn stage(&self, token: &str) -> Result<PathBuf, TokenFileError> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let (owner, made) = make_dirs(dir).map_err(|source| self.io(source))?;
        let staged = dir.join(format!(
            ".{}.{}.tmp",
            file_name(&self.path),
            &generate()[..16]
        ));
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
            remedy: self.remedy,
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

#[cfg(test)]
mod tests {
    use super::*;

    const REMEDY: &str = "switchboard web-token --rotate";

    fn file(dir: &tempfile::TempDir) -> TokenFile {
        TokenFile::new(dir.path().join("web").join("web.token"), REMEDY)
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
    fn rotation_replaces_the_token_atomically_and_privately() {
        let dir = tempfile::tempdir().unwrap();
        let tokens = file(&dir);
        let (first, _) = tokens.load_or_create().unwrap();
        let second = tokens.rotate().unwrap();
        assert_ne!(first, second);
        assert_eq!(tokens.read().unwrap(), Some(second));
        let mode = fs::metadata(tokens.path()).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let leftovers = fs::read_dir(tokens.path().parent().unwrap())
            .unwrap()
            .count();
        assert_eq!(leftovers, 1, "no staged file is left behind");
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
    fn a_file_without_a_usable_token_is_refused_with_the_command_that_replaces_it() {
        let dir = tempfile::tempdir().unwrap();
        let tokens = file(&dir);
        tokens.load_or_create().unwrap();
        let long = "x".repeat(513);
        for bad in [
            "",
            "   \n",
            "short",
            "has a space in the middle of it",
            &long,
        ] {
            fs::write(tokens.path(), bad).unwrap();
            let err = tokens.read().unwrap_err();
            assert!(matches!(err, TokenFileError::Invalid { .. }), "{bad:?}");
            assert!(err.to_string().contains(REMEDY), "{err}");
            assert!(tokens.load_or_create().is_err(), "never replaced silently");
        }
        fs::write(tokens.path(), format!("  {}\n", "y".repeat(16))).unwrap();
        assert_eq!(tokens.read().unwrap(), Some("y".repeat(16)), "trimmed");
    }
}
