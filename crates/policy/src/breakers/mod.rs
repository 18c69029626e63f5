//! Circuit breakers: commands that ask for approval in every mode, autonomous included, even
//! when an allow rule matches or they hide inside a substitution (only a deny rule beats them).
//! One table, one row per danger, each with a test below.

mod cwd;
mod startup;

use super::part::{Analysis, Part};
use super::words::basename;
use cwd::moved_outside;
use startup::startup_write;

/// One circuit breaker: a name for the approval prompt and the check that trips it.
pub(crate) struct Breaker {
    /// Shown as `circuit breaker: <name>`.
    pub name: &'static str,
    /// Whether this simple command (seen within its whole command line) trips the breaker.
    pub check: fn(&Part, &Analysis) -> bool,
}

/// The breaker for a command bash makes out of expansions.
const COMPUTED_NAME: &str = "command name computed at run time";

/// Every circuit breaker, checked in order against every simple command.
pub(crate) const BREAKERS: &[Breaker] = &[
    Breaker {
        name: "rm -rf outside the workspace",
        check: rm_rf_outside,
    },
    Breaker {
        name: "find -delete outside the workspace",
        check: find_delete_outside,
    },
    Breaker {
        name: "privilege escalation",
        check: privilege_escalation,
    },
    Breaker {
        name: "download piped into a shell",
        check: download_into_shell,
    },
    Breaker {
        name: "filesystem format",
        check: mkfs,
    },
    Breaker {
        name: "dd onto a device",
        check: dd_onto_device,
    },
    Breaker {
        name: "shutdown or reboot",
        check: shutdown,
    },
    Breaker {
        name: "chmod -R 777",
        check: chmod_777,
    },
    Breaker {
        name: "write under a system directory",
        check: system_write,
    },
    Breaker {
        name: "write to a start-up file or git hook",
        check: startup_write,
    },
    Breaker {
        name: "kill every process",
        check: kill_all,
    },
    Breaker {
        name: "fork bomb",
        check: fork_bomb,
    },
    Breaker {
        name: COMPUTED_NAME,
        check: computed_name,
    },
];

/// The first breaker `part` trips, if any.
pub(crate) fn tripped(part: &Part, analysis: &Analysis) -> Option<&'static str> {
    BREAKERS
        .iter()
        .find(|b| (b.check)(part, analysis))
        .map(|b| b.name)
}

/// The first breaker one of the commands unread words may make trips (`Unread::views`). The
/// name check is left out: every word of a view may start it, and whether the unread words can
/// hide a command is the real command's own check ([`computed_name`]).
pub(crate) fn tripped_by_view(view: &Part) -> Option<&'static str> {
    let plain = Analysis::default();
    BREAKERS
        .iter()
        .filter(|b| b.name != COMPUTED_NAME)
        .find(|b| (b.check)(view, &plain))
        .map(|b| b.name)
}

/// The command name without its directory (`/bin/rm` is `rm`).
fn program(part: &Part) -> &str {
    part.program().map(basename).unwrap_or_default()
}

fn args(part: &Part) -> &[String] {
    part.words.get(1..).unwrap_or_default()
}

/// Arguments before `--` that start with `-`, and every other argument.
fn split_options(args: &[String]) -> (Vec<&str>, Vec<&str>) {
    let mut options = Vec::new();
    let mut operands = Vec::new();
    let mut only_operands = false;
    for arg in args {
        if only_operands || !arg.starts_with('-') || arg == "-" {
            operands.push(arg.as_str());
        } else if arg == "--" {
            only_operands = true;
        } else {
            options.push(arg.as_str());
        }
    }
    (options, operands)
}

/// Whether a short-option cluster (`-rf`) or one of the long names is among `options`.
fn has_flag(options: &[&str], short: &[char], long: &[&str]) -> bool {
    options.iter().any(|o| match o.strip_prefix("--") {
        Some(name) => long.contains(&name),
        None => o.chars().skip(1).any(|c| short.contains(&c)),
    })
}

fn rm_rf_outside(part: &Part, analysis: &Analysis) -> bool {
    if program(part) != "rm" {
        return false;
    }
    let (options, targets) = split_options(args(part));
    let recursive = has_flag(&options, &['r', 'R'], &["recursive"]);
    let force = has_flag(&options, &['f'], &["force"]);
    recursive && force && reaches_outside(part, analysis, &targets)
}

/// Whether the operands `targets` of `part` may name something outside the workspace: one does
/// by its spelling, `xargs` supplies unknown ones, or the command runs somewhere else.
fn reaches_outside(part: &Part, analysis: &Analysis, targets: &[&str]) -> bool {
    part.args_from_input
        || targets.iter().any(|t| outside_workspace(t))
        || moved_outside(part, analysis)
}

/// `/`, `~`, `$HOME`, `*`, `.`, `..`, any absolute path, any path with a `..` component, and
/// anything whose value is only known at run time (`$X`, `$(…)`, brace expansion).
fn outside_workspace(target: &str) -> bool {
    if target.starts_with(['/', '~']) || target.contains(['$', '`']) {
        return true;
    }
    if target.contains('{') && (target.contains(',') || target.contains("..")) {
        return true;
    }
    let mut rest = target.trim_end_matches('/');
    while let Some(stripped) = rest.strip_prefix("./") {
        rest = stripped.trim_start_matches('/');
    }
    matches!(rest, "" | "." | ".." | "*" | ".*") || target.split('/').any(|c| c == "..")
}

/// `find / -delete`: the starting points are the arguments before the first expression.
fn find_delete_outside(part: &Part, analysis: &Analysis) -> bool {
    let args = args(part);
    let starts: Vec<&str> = args
        .iter()
        .take_while(|a| !a.starts_with(['-', '(', '!']))
        .map(String::as_str)
        .collect();
    program(part) == "find"
        && args.iter().any(|a| a == "-delete")
        && reaches_outside(part, analysis, &starts)
}

fn privilege_escalation(part: &Part, _: &Analysis) -> bool {
    matches!(program(part), "sudo" | "su" | "doas" | "pkexec" | "run0")
}

fn is_download(part: &Part) -> bool {
    matches!(program(part), "curl" | "wget" | "fetch")
}

fn is_interpreter(part: &Part) -> bool {
    let name = program(part);
    let versioned = ["python", "perl", "ruby", "php", "lua", "node"]
        .iter()
        .any(|p| {
            name.strip_prefix(p)
                .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
        });
    versioned
        || matches!(
            name,
            "sh" | "bash"
                | "zsh"
                | "dash"
                | "ksh"
                | "mksh"
                | "ash"
                | "fish"
                | "nodejs"
                | "deno"
                | "bun"
                | "tclsh"
                | "pwsh"
                | "eval"
                | "source"
                | "."
        )
}

fn download_into_shell(part: &Part, analysis: &Analysis) -> bool {
    is_interpreter(part) && analysis.fed_by(part.id, is_download)
}

fn mkfs(part: &Part, _: &Analysis) -> bool {
    let name = program(part);
    name.starts_with("mkfs") || name == "mke2fs"
}

/// `dd of=/dev/sda`; `/dev/null` and the standard streams are harmless.
fn dd_onto_device(part: &Part, _: &Analysis) -> bool {
    program(part) == "dd"
        && args(part)
            .iter()
            .filter_map(|a| a.strip_prefix("of="))
            .any(|target| {
                target.starts_with("/dev/")
                    && !matches!(target, "/dev/null" | "/dev/stdout" | "/dev/stderr")
                    && !target.starts_with("/dev/fd/")
            })
}

fn shutdown(part: &Part, _: &Analysis) -> bool {
    let runlevel = |a: &String| a == "0" || a == "6";
    match program(part) {
        "shutdown" | "reboot" | "halt" | "poweroff" => true,
        "init" | "telinit" => args(part).iter().any(runlevel),
        "systemctl" => args(part)
            .iter()
            .any(|a| matches!(a.as_str(), "poweroff" | "reboot" | "halt" | "kexec")),
        _ => false,
    }
}

fn chmod_777(part: &Part, _: &Analysis) -> bool {
    if program(part) != "chmod" {
        return false;
    }
    let (options, operands) = split_options(args(part));
    let recursive = has_flag(&options, &['R'], &["recursive"]);
    let Some((mode, targets)) = operands.split_first() else {
        return false;
    };
    let wide_open = matches!(
        *mode,
        "777" | "0777" | "a+rwx" | "a=rwx" | "ugo+rwx" | "ugo=rwx"
    );
    wide_open && (recursive || targets.iter().any(|t| matches!(*t, "/" | "/*")))
}

/// Files a command writes: output redirections, `tee` arguments, `cp`/`mv`/`install`/`ln`
/// destinations and `dd of=`.
fn written_paths(part: &Part) -> Vec<&str> {
    let mut paths: Vec<&str> = part
        .redirects
        .iter()
        .filter(|r| r.writes())
        .map(|r| r.target.as_str())
        .collect();
    let (options, operands) = split_options(args(part));
    match program(part) {
        "tee" => paths.extend(operands),
        "cp" | "mv" | "install" | "ln" => {
            let target_dir = args(part)
                .iter()
                .zip(args(part).iter().skip(1))
                .find(|(o, _)| *o == "-t");
            let attached = options
                .iter()
                .find_map(|o| o.strip_prefix("--target-directory="));
            match (target_dir, attached) {
                (Some((_, dir)), _) => paths.push(dir),
                (None, Some(dir)) => paths.push(dir),
                (None, None) if operands.len() >= 2 => paths.extend(operands.last()),
                _ => {}
            }
        }
        "dd" => paths.extend(args(part).iter().filter_map(|a| a.strip_prefix("of="))),
        _ => {}
    }
    paths
}

/// Lexically normalised: `//` collapsed, `.` dropped, `..` applied; `~`/`$HOME` become `~`.
fn normalise(path: &str) -> String {
    let (home, rest) = ["~", "${HOME}", "$HOME"]
        .iter()
        .find_map(|h| {
            path.strip_prefix(h)
                .filter(|r| r.is_empty() || r.starts_with('/'))
        })
        .map_or((false, path), |r| (true, r));
    let mut parts: Vec<&str> = Vec::new();
    for component in rest.split('/') {
        match component {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    let prefix = if home {
        "~/"
    } else if rest.starts_with('/') {
        "/"
    } else {
        ""
    };
    format!("{prefix}{}", parts.join("/"))
}

fn system_write(part: &Part, _: &Analysis) -> bool {
    written_paths(part).iter().any(|path| {
        let path = normalise(path);
        ["/etc", "/usr", "/boot", "~/.ssh", "/root/.ssh"]
            .iter()
            .any(|dir| {
                path.strip_prefix(dir)
                    .is_some_and(|r| r.is_empty() || r.starts_with('/'))
            })
    })
}

/// `kill -9 -1`, `kill -KILL -1`, `kill -s KILL -- -1`: a signal to every process.
fn kill_all(part: &Part, _: &Analysis) -> bool {
    if program(part) != "kill" {
        return false;
    }
    let args = args(part);
    let skip = match args.first().map(String::as_str) {
        Some("-s" | "-n" | "--signal") => 2,
        Some("-l" | "-L" | "--list") => return false,
        Some(a) if a.starts_with('-') && a != "--" => 1,
        _ => 0,
    };
    args.iter().skip(skip).any(|a| a == "-1")
}

/// `:(){ :|:& };:` and its named variants: a function that calls itself piped or in the background.
fn fork_bomb(part: &Part, analysis: &Analysis) -> bool {
    let Some(name) = part
        .program()
        .filter(|n| part.in_function.as_deref() == Some(*n))
    else {
        return false;
    };
    let same = |id: usize| analysis.parts[id].program() == Some(name);
    let piped_to_itself = analysis
        .edges
        .iter()
        .any(|&(a, b)| (a == part.id && same(b)) || (b == part.id && same(a)));
    part.background || piped_to_itself
}

/// `$CMD -rf /`, `$(echo rm) …`, `/bin/r? …`, `{rm,-rf,/}`: no breaker can see what runs.
fn computed_name(part: &Part, _: &Analysis) -> bool {
    let Some(name) = part.program() else {
        return false;
    };
    if super::unread::hides_a_command(part) {
        return true;
    }
    let braces = name.contains('{') && name.contains('}');
    !matches!(name, "[" | "[[") && (braces || name.contains(['$', '`', '*', '?', '[']))
}
