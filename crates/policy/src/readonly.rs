//! The curated read-only command set the `guarded` and `read_only` modes allow without asking:
//! commands that only look (`ls`, `cat`, `grep`, read-only `git`, …) and write no file.

use super::git;
use super::part::Part;

/// Commands that only read, whatever their arguments.
const ALWAYS_READ_ONLY: &[&str] = &[
    "ls", "cat", "head", "tail", "wc", "grep", "pwd", "which", "diff",
];

/// `find` actions that run commands or write files.
const FIND_WRITES: &[&str] = &[
    "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
];

/// Variables a read-only command may be given; others (`GIT_EXTERNAL_DIFF`, `LD_PRELOAD`,
/// `PAGER`, …) can make a looking command run something else.
const HARMLESS_VARIABLES: &[&str] = &[
    "LANG", "TZ", "NO_COLOR", "TERM", "COLUMNS", "LINES", "CLICOLOR",
];

/// ripgrep options that run a program: `--pre` on every file searched, `--hostname-bin` for
/// hyperlinks, `-z`/`--search-zip` the decompressors found on `PATH`.
const RG_RUNS: &[&str] = &["--pre", "--hostname-bin", "--search-zip"];

/// Whether a variable may be set for a read-only command (or a transparent carrier).
pub(crate) fn harmless_variable(name: &str) -> bool {
    HARMLESS_VARIABLES.contains(&name) || name.starts_with("LC_")
}

/// Whether `part` is in the curated read-only set. The command name must be written bare
/// (`/tmp/x/ls` is not `ls`), no output may be redirected to a file, and its arguments must be
/// known (`xargs` appends some read from its input; an expansion makes words of its own).
pub(crate) fn is_read_only(part: &Part) -> bool {
    if part.redirects.iter().any(|r| r.writes()) || part.args_from_input || !part.unread.is_empty()
    {
        return false;
    }
    let Some((program, args)) = part.words.split_first() else {
        return part.prefix.iter().all(|a| local_assignment(a));
    };
    let harmless = |(name, word): (&String, &String)| {
        harmless_variable(name) || (program == "git" && git::REQUIRED_ENV.contains(&word.as_str()))
    };
    if !part.assignments.iter().zip(&part.prefix).all(harmless) {
        return false;
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match program.as_str() {
        p if ALWAYS_READ_ONLY.contains(&p) => true,
        "rg" => !args.iter().any(|a| rg_runs_a_program(a)),
        "find" => !args.iter().any(|a| FIND_WRITES.contains(a)),
        "command" => matches!(args.first(), Some(&"-v" | &"-V")),
        "git" => git::git_read_only(&part.prefix, &args),
        _ => false,
    }
}

/// zsh's lower-case names tied to search paths: `path=./bin` is `PATH=./bin` there.
const TIED_LOWER_CASE: &[&str] = &[
    "path",
    "cdpath",
    "fpath",
    "manpath",
    "mailpath",
    "module_path",
];

/// `NAME=value` alone, setting a shell variable: harmless when the name is lower-case (so not an
/// inherited one such as `PATH` or `IFS`) and the value expands nothing (`${x@P}` or `$((x))`
/// would run code stored in it).
fn local_assignment(word: &str) -> bool {
    let Some((name, value)) = word.split_once('=') else {
        return false;
    };
    let lower = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    lower && !TIED_LOWER_CASE.contains(&name) && !value.contains(['$', '`', '['])
}

fn rg_runs_a_program(arg: &str) -> bool {
    match arg.strip_prefix("--") {
        Some(_) => RG_RUNS
            .iter()
            .any(|o| arg == *o || arg.strip_prefix(o).is_some_and(|r| r.starts_with('='))),
        // A cluster of short flags with `z` in it; a value glued to `-e`/`-g` may over-ask.
        None => arg.starts_with('-') && arg.contains('z'),
    }
}
