//! What `check` can tell about a stdio server before starting it: a command that is not on
//! the sandbox's `PATH`, or a path in its arguments that does not exist or that the user
//! tool processes run as cannot reach. When the gateway runs as root that user is
//! `[sandbox] uid` (65534 by default), which cannot enter `/root` or a home directory, so
//! a server installed there fails its handshake with nothing but "connection closed".
//! File modes only: `check --probe` starts the server for the full answer.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::config::Config;

/// The `PATH` a stdio server is started with (set by the sandbox's server launch).
const SANDBOX_PATH: &[&str] = &["/usr/local/bin", "/usr/bin", "/bin"];
/// Arguments with these endings are scripts, whatever directory they are in.
const SCRIPT_ENDINGS: &[&str] = &[".js", ".mjs", ".cjs", ".ts", ".py", ".rb", ".sh"];

/// Who a tool process runs as: uid and gid.
#[derive(Debug, Clone, Copy)]
pub struct ToolUser {
    uid: u32,
    gid: u32,
    /// The gateway runs as root and drops to this user (the warnings say so).
    dropped: bool,
}

impl ToolUser {
    /// The user of this process's tool processes under `config`: `[sandbox] uid`/`gid`
    /// when the gateway is root, the gateway's own user otherwise.
    pub fn of(config: &Config) -> Self {
        // SAFETY: geteuid and getegid take no arguments and cannot fail.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        match uid {
            0 => Self {
                uid: config.sandbox.uid,
                gid: config.sandbox.gid,
                dropped: true,
            },
            _ => Self {
                uid,
                gid,
                dropped: false,
            },
        }
    }
}

/// One warning per stdio server path that will keep it from starting, each naming the key
/// and the fix.
pub fn path_warnings(config: &Config, user: ToolUser) -> Vec<String> {
    let mut out = Vec::new();
    for (name, server) in &config.mcp.servers {
        let Some(command) = &server.command else {
            continue;
        };
        let key = format!("mcp.servers.{name}");
        if let Some(problem) = command_problem(command, user) {
            out.push(format!("{key}.command: {problem}"));
        }
        let workspace = config
            .gateway
            .data_dir
            .join("workspaces")
            .join(format!(".mcp-{name}"));
        for arg in &server.args {
            if let Some(problem) = arg_problem(arg, user, &workspace) {
                out.push(format!("{key}.args: {problem}"));
            }
        }
    }
    out
}

fn command_problem(command: &str, user: ToolUser) -> Option<String> {
    if !command.contains('/') {
        let found = SANDBOX_PATH
            .iter()
            .any(|dir| Path::new(dir).join(command).is_file());
        return (!found).then(|| {
            format!(
                "`{command}` is not in the sandbox's PATH ({}); give its absolute path",
                SANDBOX_PATH.join(":")
            )
        });
    }
    if !command.starts_with('/') {
        return Some(format!(
            "`{command}` is relative; the server runs in its own working directory, so give \
             the absolute path"
        ));
    }
    reach_problem(Path::new(command), user, Want::Execute)
}

fn arg_problem(arg: &str, user: ToolUser, workspace: &Path) -> Option<String> {
    if arg.starts_with('/') {
        return reach_problem(Path::new(arg), user, Want::Read);
    }
    let script = SCRIPT_ENDINGS.iter().any(|e| arg.ends_with(e));
    let relative = script && !arg.starts_with('-') && !workspace.join(arg).exists();
    (relative && Path::new(arg).exists()).then(|| {
        format!(
            "`{arg}` is relative: the server runs in {}, not here; give the absolute path",
            workspace.display()
        )
    })
}

#[derive(Clone, Copy)]
enum Want {
    Read,
    Execute,
}

/// Why `user` cannot read (or execute) `path`, by its mode bits and those of the
/// directories above it; `None` when it can.
fn reach_problem(path: &Path, user: ToolUser, want: Want) -> Option<String> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Some(format!(
            "{} does not exist (or cannot be looked at)",
            path.display()
        ));
    };
    let who = if user.dropped {
        format!(
            "uid {}, the user tool processes run as when the gateway runs as root",
            user.uid
        )
    } else {
        format!("uid {}", user.uid)
    };
    for dir in path.ancestors().skip(1) {
        let Ok(dir_meta) = std::fs::metadata(dir) else {
            continue;
        };
        if !allowed(&dir_meta, user, 0o1) {
            return Some(format!(
                "{who} cannot enter {} to reach {}: move it somewhere that user can reach \
                 (e.g. /srv or /usr/local/lib), or give the directory o+x",
                dir.display(),
                path.display()
            ));
        }
    }
    let (bits, verb) = match want {
        Want::Read if meta.is_dir() => (0o5, "list"),
        Want::Read => (0o4, "read"),
        Want::Execute => (0o1, "execute"),
    };
    (!allowed(&meta, user, bits)).then(|| {
        format!(
            "{who} cannot {verb} {}: chmod o+{} it, or move it",
            path.display(),
            if bits == 0o1 { "x" } else { "r" }
        )
    })
}

/// Whether `user` has every permission in `bits` (`0o4` read, `0o1` execute) on `meta`.
fn allowed(meta: &std::fs::Metadata, user: ToolUser, bits: u32) -> bool {
    if user.uid == 0 {
        return true;
    }
    let shift = if meta.uid() == user.uid {
        6
    } else if meta.gid() == user.gid {
        3
    } else {
        0
    };
    (meta.mode() >> shift) & bits == bits
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    const NOBODY: ToolUser = ToolUser {
        uid: 65534,
        gid: 65534,
        dropped: true,
    };

    fn config(table: &str) -> Config {
        crate::config::parse(table, "t.toml", &[]).expect("valid")
    }

    #[test]
    fn a_missing_script_and_a_command_off_the_path_are_named_with_their_keys() {
        let said = path_warnings(
            &config(
                "[mcp.servers.gone]\ncommand = \"no-such-program-here\"\n\
                 args = [\"/nonexistent/server.js\", \"stdio\"]\n",
            ),
            NOBODY,
        );
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(
            said[0].starts_with(
                "mcp.servers.gone.command: `no-such-program-here` is not in the sandbox's PATH"
            ),
            "{said:?}"
        );
        assert!(
            said[1].starts_with("mcp.servers.gone.args: /nonexistent/server.js does not exist"),
            "{said:?}"
        );
    }

    #[test]
    fn a_script_in_a_directory_the_sandbox_user_cannot_enter_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir(&home).unwrap();
        let script = home.join("server.js");
        std::fs::write(&script, "").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let table = format!(
            "[mcp.servers.home]\ncommand = \"/bin/sh\"\nargs = [\"{}\"]\n",
            script.display()
        );
        let said = path_warnings(&config(&table), NOBODY);
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(said[0].contains("uid 65534"), "{said:?}");
        assert!(
            said[0].contains(&format!("cannot enter {}", home.display())),
            "{said:?}"
        );
        std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(path_warnings(&config(&table), NOBODY).is_empty());
    }
}
