//! The spellings of one simple command that deny and ask rules are matched against, so a
//! denied program cannot hide behind its path (`/usr/bin/curl`, `./curl`), a global option
//! (`git -c x=y push`) or a wrapper the engine does not strip (`sudo`, `chronic`, `flock F`).
//! Allow rules see only the command as written ([`Part::text`]): a wider match there would
//! grant more, here it only refuses more.

use super::part::{Part, Redirect};
use super::words::basename;

/// How many wrappers deep the views follow before giving up.
const MAX_WRAPPERS: usize = 8;

/// A wrapper that runs the rest of its arguments as a command.
struct Wrapper {
    /// The program name, as its basename.
    name: &'static str,
    /// Operands before the command (`flock FILE cmd`, `chroot DIR cmd`, `taskset MASK cmd`).
    operands: usize,
    /// Options that take a value in the next word.
    valued: &'static [&'static str],
}

/// Wrappers the analysis keeps as the command (privilege, tracing, locking, sandboxing ones),
/// peeled off only for deny and ask rules.
const WRAPPERS: &[Wrapper] = &[
    Wrapper {
        name: "sudo",
        operands: 0,
        valued: &["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"],
    },
    Wrapper {
        name: "doas",
        operands: 0,
        valued: &["-u", "-C"],
    },
    Wrapper {
        name: "run0",
        operands: 0,
        valued: &["-u", "-g", "-D"],
    },
    Wrapper {
        name: "pkexec",
        operands: 0,
        valued: &["--user"],
    },
    Wrapper {
        name: "chronic",
        operands: 0,
        valued: &[],
    },
    Wrapper {
        name: "unbuffer",
        operands: 0,
        valued: &[],
    },
    Wrapper {
        name: "caffeinate",
        operands: 0,
        valued: &["-w", "-t"],
    },
    Wrapper {
        name: "watch",
        operands: 0,
        valued: &["-n", "-d"],
    },
    Wrapper {
        name: "strace",
        operands: 0,
        valued: &["-o", "-e", "-p", "-s", "-u"],
    },
    Wrapper {
        name: "ltrace",
        operands: 0,
        valued: &["-o", "-e", "-p", "-s", "-u"],
    },
    Wrapper {
        name: "firejail",
        operands: 0,
        valued: &[],
    },
    Wrapper {
        name: "torsocks",
        operands: 0,
        valued: &[],
    },
    Wrapper {
        name: "proxychains",
        operands: 0,
        valued: &["-f"],
    },
    Wrapper {
        name: "proxychains4",
        operands: 0,
        valued: &["-f"],
    },
    Wrapper {
        name: "nsenter",
        operands: 0,
        valued: &["-t", "--target"],
    },
    Wrapper {
        name: "unshare",
        operands: 0,
        valued: &[],
    },
    Wrapper {
        name: "numactl",
        operands: 0,
        valued: &[],
    },
    Wrapper {
        name: "flock",
        operands: 1,
        valued: &["-w", "-E"],
    },
    Wrapper {
        name: "chroot",
        operands: 1,
        valued: &[],
    },
    Wrapper {
        name: "taskset",
        operands: 1,
        valued: &[],
    },
    Wrapper {
        name: "chrt",
        operands: 1,
        valued: &[],
    },
    Wrapper {
        name: "systemd-run",
        operands: 0,
        valued: &["-u", "--unit", "-p", "--property"],
    },
];

/// Options that take the next word as their value wherever they appear before a subcommand.
const GLOBAL_VALUED: &[&str] = &["-c", "-C"];

/// Every spelling of `part` a deny or ask rule should see: as written, without assignments,
/// with the program's basename, without its global options, and the same for each wrapper
/// peeled off.
pub(crate) fn deny_views(part: &Part) -> Vec<String> {
    let tail: Vec<String> = part.redirects.iter().map(Redirect::render).collect();
    let render = |words: &[String]| {
        let all: Vec<&str> = words.iter().chain(&tail).map(String::as_str).collect();
        all.join(" ")
    };
    let mut views = vec![part.text.clone(), part.core.clone()];
    let mut words = part.words.clone();
    for _ in 0..MAX_WRAPPERS {
        let Some(first) = words.first_mut() else {
            break;
        };
        *first = basename(first).to_string();
        views.push(render(&words));
        views.push(render(&without_global_options(&words)));
        match peel(&words) {
            Some(rest) if !rest.is_empty() => words = rest,
            _ => break,
        }
    }
    views
}

/// `git -c x=y -C dir push` → `git push`: the program, then what follows its leading options.
/// An alias defined on the line (`git -c alias.p=push p`) is replaced by what it stands for.
fn without_global_options(words: &[String]) -> Vec<String> {
    let mut aliases: Vec<(&str, &str)> = Vec::new();
    let mut i = 1;
    while let Some(word) = words.get(i).filter(|w| w.starts_with('-') && *w != "--") {
        if !GLOBAL_VALUED.contains(&word.as_str()) {
            i += 1;
            continue;
        }
        let value = words.get(i + 1).map(String::as_str).unwrap_or_default();
        let alias = value.strip_prefix("alias.").and_then(|a| a.split_once('='));
        aliases.extend(alias.filter(|_| word == "-c"));
        i += 2;
    }
    let rest = words.get(i..).unwrap_or_default();
    let expanded = rest.first().and_then(|sub| {
        let (_, value) = aliases.iter().rev().find(|(name, _)| name == sub)?;
        Some(value.split_whitespace().map(str::to_string))
    });
    let mut out = words[..1].to_vec();
    match expanded {
        Some(alias) => out.extend(alias.chain(rest[1..].iter().cloned())),
        None => out.extend(rest.iter().cloned()),
    }
    out
}

/// The command a known wrapper runs, if `words` starts with one.
fn peel(words: &[String]) -> Option<Vec<String>> {
    let wrapper = WRAPPERS.iter().find(|w| w.name == words[0])?;
    let mut i = 1;
    while let Some(word) = words.get(i).filter(|w| w.starts_with('-')) {
        i += if wrapper.valued.contains(&word.as_str()) {
            2
        } else {
            1
        };
        if word == "--" {
            break;
        }
    }
    Some(words.get(i + wrapper.operands..)?.to_vec())
}
