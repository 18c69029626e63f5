//! Command-level shell reading for the policy gate: strips the wrappers that only run another
//! command (`timeout`, `env`, `nice`, `xargs`, …) so each command is judged as what it really
//! does, and keeps what the wrappers changed (variables, directory, arguments from input).

use super::expansion;
use super::words::{assignment_name, basename};

/// One word as written (for assignment detection) and as the shell passes it on.
#[derive(Debug, Clone)]
pub(crate) struct Word {
    /// The word as it appears in the command line, quotes and all.
    pub raw: String,
    /// The unquoted text.
    pub value: String,
}

impl Word {
    /// A word with no quoting, e.g. one `find -exec` or `env -S` hands on.
    pub(crate) fn plain(value: String) -> Self {
        Self {
            raw: value.clone(),
            value,
        }
    }
}

/// A simple command with its wrappers stripped.
#[derive(Debug, Default)]
pub(crate) struct Stripped {
    /// The command that actually runs, then its arguments.
    pub words: Vec<String>,
    /// Variables set for it (`LANG=C ls`, `env FOO=1 ls`).
    pub assignments: Vec<String>,
    /// The same assignments as written, unquoted: `LD_PRELOAD=./x.so`.
    pub prefix: Vec<String>,
    /// `xargs` appends arguments read from its input (or `-a FILE`): they are unknown.
    pub args_from_input: bool,
    /// The directory `env -C DIR` runs it in.
    pub chdir: Option<String>,
    /// The unquoted text of every word bash expands into something unread (wrappers' and
    /// assignments' words included): see [`expansion::unread`].
    pub unread: Vec<String>,
}

/// Removes leading assignments and every wrapper in front of the command that really runs.
/// A wrapper with nothing after it (`nice` alone) is itself the command.
pub(crate) fn strip_wrappers(mut words: Vec<Word>) -> Stripped {
    let mut out = Stripped::default();
    let mut i = 0;
    while let Some(name) = words.get(i).and_then(|w| assignment_name(&w.raw)) {
        out.assignments.push(name.to_string());
        out.prefix.push(words[i].value.clone());
        i += 1;
    }
    while let Some(first) = words.get(i) {
        out.args_from_input |= basename(&first.value) == "xargs";
        let next = match basename(&first.value) {
            "timeout" => skip_options(&words, i + 1, TIMEOUT).map(|j| j + 1),
            "nice" => after_nice(&words, i + 1),
            "nohup" | "builtin" | "busybox" => Some(i + 1),
            "setsid" => skip_options(&words, i + 1, SETSID),
            "stdbuf" => skip_options(&words, i + 1, STDBUF),
            "ionice" => skip_options(&words, i + 1, IONICE),
            "time" => skip_options(&words, i + 1, TIME),
            "exec" => skip_options(&words, i + 1, EXEC),
            "xargs" => skip_options(&words, i + 1, XARGS),
            "command" => skip_options(&words, i + 1, COMMAND),
            "env" => after_env(&mut words, i + 1, &mut out),
            _ => None,
        };
        match next {
            Some(j) if j < words.len() => i = j,
            _ => break,
        }
    }
    out.unread = words
        .iter()
        .enumerate()
        .filter(|(at, w)| expansion::unread(&w.raw, *at == i))
        .map(|(_, w)| w.value.clone())
        .collect();
    out.words = words.drain(i..).map(|w| w.value).collect();
    out
}

/// Options of one wrapper: flags that stand alone and flags that take a value.
struct Options {
    alone: &'static [&'static str],
    valued: &'static [&'static str],
}

const TIMEOUT: Options = Options {
    alone: &["--preserve-status", "--foreground", "-v", "--verbose"],
    valued: &["-s", "--signal", "-k", "--kill-after"],
};
const TIME: Options = Options {
    alone: &["-p", "--portability"],
    valued: &[],
};
const EXEC: Options = Options {
    alone: &["-c", "-l", "-cl", "-lc"],
    valued: &["-a"],
};
const SETSID: Options = Options {
    alone: &["-c", "-f", "-w", "--ctty", "--fork", "--wait"],
    valued: &[],
};
const STDBUF: Options = Options {
    alone: &[],
    valued: &["-i", "-o", "-e", "--input", "--output", "--error"],
};
const IONICE: Options = Options {
    alone: &["-t", "--ignore"],
    valued: &["-c", "-n", "--class", "--classdata"],
};
/// `command -v`/`-V` only looks a name up, so they are not in this list: the word stays.
const COMMAND: Options = Options {
    alone: &["-p"],
    valued: &[],
};
const XARGS: Options = Options {
    alone: &[
        "-0",
        "-r",
        "-t",
        "-p",
        "-x",
        "-o",
        "--null",
        "--no-run-if-empty",
        "--verbose",
        "--interactive",
        "--exit",
        "--open-tty",
    ],
    valued: &[
        "-n",
        "-L",
        "-P",
        "-I",
        "-d",
        "-s",
        "-E",
        "-a",
        "--max-args",
        "--max-lines",
        "--max-procs",
        "--replace",
        "--delimiter",
        "--max-chars",
        "--eof",
        "--arg-file",
    ],
};

/// Index of the first word after the options starting at `i`; `None` for an unknown option,
/// which leaves the wrapper in place rather than guess what follows it.
fn skip_options(words: &[Word], mut i: usize, options: Options) -> Option<usize> {
    while let Some(word) = words.get(i).map(|w| w.value.as_str()) {
        if word == "--" {
            return Some(i + 1);
        }
        if !word.starts_with('-') || word == "-" {
            break;
        }
        if options.alone.contains(&word) {
            i += 1;
        } else if options.valued.contains(&word) {
            i += 2;
        } else if options.valued.iter().any(|v| attached_value(word, v)) {
            i += 1;
        } else {
            return None;
        }
    }
    Some(i)
}

/// `-n1` or `--max-args=1`: the option `name` with its value in the same word.
fn attached_value(word: &str, name: &str) -> bool {
    match word.strip_prefix(name) {
        Some(rest) if name.starts_with("--") => rest.starts_with('='),
        Some(rest) => !rest.is_empty(),
        None => false,
    }
}

/// `nice -n 5`, `nice -5`, `nice --adjustment=5`.
fn after_nice(words: &[Word], i: usize) -> Option<usize> {
    let numeric = |w: &str| {
        let digits = w.trim_start_matches('-');
        w.starts_with('-') && !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
    };
    match words.get(i).map(|w| w.value.as_str()) {
        Some(w) if numeric(w) => Some(i + 1),
        _ => skip_options(
            words,
            i,
            Options {
                alone: &[],
                valued: &["-n", "--adjustment"],
            },
        ),
    }
}

/// `env [-i] [-u NAME] [-C DIR] [-S 'words'] [NAME=value]… command`; `-S` is split in place.
fn after_env(words: &mut Vec<Word>, mut i: usize, out: &mut Stripped) -> Option<usize> {
    const ALONE: &[&str] = &[
        "-i",
        "-",
        "-0",
        "-v",
        "--ignore-environment",
        "--null",
        "--debug",
    ];
    const VALUED: &[&str] = &["-u", "--unset", "-C", "--chdir"];
    let mut splits = 0;
    while let Some(word) = words.get(i).map(|w| w.value.clone()) {
        if let Some(split) = split_string(words, i) {
            // `-S` can only nest so deep before it is an attempt to loop the reader.
            splits += 1;
            if splits > 8 {
                return None;
            }
            words.splice(i..i + split.0, split.1.into_iter().map(Word::plain));
        } else if word == "--" || ALONE.contains(&word.as_str()) {
            i += 1;
        } else if let Some(dir) = chdir(&word, words.get(i + 1)) {
            out.chdir = Some(dir);
            i += if matches!(word.as_str(), "-C" | "--chdir") {
                2
            } else {
                1
            };
        } else if VALUED.contains(&word.as_str()) {
            i += 2;
        } else if VALUED.iter().any(|v| attached_value(&word, v)) {
            i += 1;
        } else if word.starts_with('-') {
            return None;
        } else if let Some((name, _)) = word.split_once('=').filter(|(n, _)| !n.is_empty()) {
            out.assignments.push(name.to_string());
            out.prefix.push(word.clone());
            i += 1;
        } else {
            break;
        }
    }
    Some(i)
}

/// The directory of `env -C DIR`, `-CDIR`, `--chdir DIR` or `--chdir=DIR` at this word.
fn chdir(word: &str, next: Option<&Word>) -> Option<String> {
    match word {
        "-C" | "--chdir" => next.map(|w| w.value.clone()),
        _ => word
            .strip_prefix("--chdir=")
            .or_else(|| word.strip_prefix("-C").filter(|d| !d.is_empty()))
            .map(str::to_string),
    }
}

/// For `env -S 'a b'` (or `-Sa b`, `--split-string=…`) at `i`: how many words it spans and
/// the words it splits into.
fn split_string(words: &[Word], i: usize) -> Option<(usize, Vec<String>)> {
    let word = words[i].value.as_str();
    let (span, text) = match word {
        "-S" | "--split-string" => (2, words.get(i + 1)?.value.as_str()),
        _ => (
            1,
            word.strip_prefix("--split-string=")
                .or_else(|| word.strip_prefix("-S"))?,
        ),
    };
    let split = shlex::split(text).unwrap_or_else(|| vec![text.to_string()]);
    Some((span, split))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strip(line: &str) -> (String, Vec<String>) {
        let words = line
            .split(' ')
            .map(|w| Word::plain(w.to_string()))
            .collect();
        let stripped = strip_wrappers(words);
        (stripped.words.join(" "), stripped.assignments)
    }

    #[test]
    fn wrappers_are_stripped_down_to_the_real_command() {
        assert_eq!(strip("timeout 5 sudo x").0, "sudo x");
        assert_eq!(strip("timeout -s KILL --kill-after=2 5s rm x").0, "rm x");
        assert_eq!(strip("nice -n 10 nohup time -p ls").0, "ls");
        assert_eq!(strip("nice -5 ls").0, "ls");
        assert_eq!(
            strip("/usr/bin/env -i FOO=1 BAR=2 sudo x"),
            ("sudo x".into(), vec!["FOO".into(), "BAR".into()])
        );
        assert_eq!(strip("xargs -0 -n1 rm -rf").0, "rm -rf");
        assert_eq!(strip("command builtin exec -a name ls").0, "ls");
        assert_eq!(
            strip("LANG=C TZ=UTC git log"),
            ("git log".into(), vec!["LANG".into(), "TZ".into()])
        );
    }

    #[test]
    fn a_wrapper_alone_or_with_unknown_options_stays_the_command() {
        assert_eq!(strip("nice").0, "nice");
        assert_eq!(strip("xargs --weird rm").0, "xargs --weird rm");
        assert_eq!(strip("command -v git").0, "command -v git");
    }

    #[test]
    fn env_split_string_is_split_in_place() {
        let words = vec![
            Word::plain("env".into()),
            Word::plain("-S".into()),
            Word::plain("sudo rm -rf /".into()),
        ];
        assert_eq!(strip_wrappers(words).words, ["sudo", "rm", "-rf", "/"]);
    }
}
