//! What a simple command with unread words (see [`Part::unread`]) may run, for deny and ask
//! rules and circuit breakers. Reading a word is `expansion`'s job and splitting a line is
//! `analyze`'s; this module sits above both: it expands the command's braces, reads every run
//! of the result as a command may start there (as [`rough`] does for a line the parser
//! rejected), and says whether its unread words could stand for any command at all.

use super::analyze::rough;
use super::expansion::brace_expand;
use super::part::Part;
use super::words::basename;

/// Programs whose arguments can name a command they run (`find -exec`, `xargs`, `env`, a
/// shell's `-c`, `git -c alias.x=!…`, `rg --pre`, `sed e`, `awk`'s `system`, `tar
/// --to-command`, interpreters' `-e`, privilege and process wrappers): an unread argument of
/// one of these may hide any command.
const RUNS_ARGUMENTS: &[&str] = &[
    "find", "xargs", "env", "sh", "bash", "dash", "zsh", "ksh", "mksh", "busybox", "eval",
    "source", ".", "exec", "command", "builtin", "git", "rg", "sed", "awk", "gawk", "mawk", "nawk",
    "tar", "perl", "python", "python3", "ruby", "node", "php", "lua", "tclsh", "parallel", "watch",
    "flock", "sudo", "doas", "su", "runuser", "timeout", "nice", "nohup", "setsid", "stdbuf",
    "ionice", "time", "chroot", "unshare", "nsenter", "strace", "ltrace", "script", "make", "ssh",
    "vim", "vi", "nvim", "less", "man", "trap", "zip", "rsync",
];

/// What a command with unread words may be, for deny and ask rules and circuit breakers: the
/// runs of words bash could execute once braces are expanded (each word may start a command,
/// as in [`rough`]), and whether its unread words could hide any command at all.
pub(crate) struct Unread {
    /// Candidate commands, empty when every word is read.
    pub views: Vec<Part>,
    /// The command name is unread, or a program that runs its arguments has an unread one.
    pub anything: bool,
}

impl Unread {
    /// What `part` may run; nothing for a part whose words are all read.
    pub(crate) fn of(part: &Part) -> Self {
        if part.unread.is_empty() {
            return Self {
                views: Vec::new(),
                anything: false,
            };
        }
        let expanded: Vec<String> = part.words.iter().flat_map(|w| brace_expand(w)).collect();
        Self {
            views: rough(&expanded.join(" ")),
            anything: hides_a_command(part),
        }
    }
}

/// Whether `part`'s unread words could stand for any command: its name is one, or it runs its
/// arguments and one of them is.
pub(crate) fn hides_a_command(part: &Part) -> bool {
    let Some(program) = part.program() else {
        return false;
    };
    let runs_arguments = RUNS_ARGUMENTS.contains(&basename(program));
    let unread_argument = part.unread.iter().any(|w| w != program);
    part.unread.iter().any(|w| w == program) || (runs_arguments && unread_argument)
}
