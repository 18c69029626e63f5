//! The generated access token: when no `access_token` is configured, the chat is not opened
//! to whoever reaches the port (on loopback that includes a sandboxed tool with network and
//! every visitor of a proxy on this host); a random token is made at first start, stored in
//! `<data_dir>/web/<name>.token` (mode 0600, so it survives restarts and upgrades), and is
//! the gate from then on. Only a chat meant for the public (`public_hosts` on a loopback
//! listen, without a token) opens without one, and it is not its operator's. `switchboard web-token` prints the link with
//! it and `--rotate` replaces it; a running gateway re-checks the file on every request (a
//! `stat`, and a read only when the file changed), so a rotated token applies at once.
//!
//! A configured token always wins; this file is then neither read nor written. How the file
//! is made, rotated and read is `switchboard_channel::TokenFile`'s business, shared with the
//! dashboard's token; this module only says where the chat's file is (the config, the gate and
//! `switchboard web-token` all need that), and `gate` is the per-request check over it.

use std::path::{Path, PathBuf};

use switchboard_channel::TokenFile;

/// The command that replaces a generated token, named when its file goes bad.
pub const ROTATE_COMMAND: &str = "switchboard web-token --rotate";

/// Where channel `name` keeps its generated token under the gateway's `data_dir`.
pub fn token_path(data_dir: &Path, name: &str) -> PathBuf {
    data_dir.join("web").join(format!("{name}.token"))
}

/// The generated token's file at `path` (see [`token_path`]); nothing is read yet.
pub fn token_file(path: PathBuf) -> TokenFile {
    TokenFile::new(path, ROTATE_COMMAND)
}
