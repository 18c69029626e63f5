//! The curated read-only command set the `guarded` and `read_only` modes allow without asking:
//! commands that only look (`ls`, `cat`, `grep`, read-only `git`, …) and write no file.

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

/// Whether `part` is in the curated read-only set. The command name must be written bare
/// (`/tmp/x/ls` is not `ls`), and no output may be redirected to a file.
pub(crate) fn is_read_only(part: &Part) -> bool {
    if part.redirects.iter().any(|r| r.writes()) {
        return false;
    }
    let harmless =
        |name: &String| HARMLESS_VARIABLES.contains(&name.as_str()) || name.starts_with("LC_");
    if !part.assignments.iter().all(harmless) {
        return false;
    }
    let Some((program, args)) = part.words.split_first() else {
        return true;
    };
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match program.as_str() {
        p if ALWAYS_READ_ONLY.contains(&p) => true,
        // `--pre` runs a program on every file searched.
        "rg" => !args
            .iter()
            .any(|a| *a == "--pre" || a.starts_with("--pre=")),
        "find" => !args.iter().any(|a| FIND_WRITES.contains(a)),
        "command" => matches!(args.first(), Some(&"-v" | &"-V")),
        "git" => git_read_only(&args),
        _ => false,
    }
}

/// `git status`, `log`, `diff`, `show`, `rev-parse`, `ls-files`, `blame`, `branch` (listing
/// only) and `remote [-v]`, with no global option other than `--no-pager`, `-P` and `-C DIR`.
fn git_read_only(args: &[&str]) -> bool {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        match *arg {
            "--no-pager" | "-P" | "--no-optional-locks" => i += 1,
            "-C" => i += 2,
            // `-c core.pager=…`, `--exec-path`, `--git-dir` and the like can run anything.
            a if a.starts_with('-') => return false,
            _ => break,
        }
    }
    let Some((sub, rest)) = args.get(i..).and_then(<[&str]>::split_first) else {
        return false;
    };
    match *sub {
        "status" | "rev-parse" | "ls-files" | "blame" => true,
        // `--output=FILE` writes the result to a file.
        "log" | "diff" | "show" => !rest.iter().any(|a| a.starts_with("--output")),
        "branch" => branch_lists_only(rest),
        "remote" => rest.iter().all(|a| matches!(*a, "-v" | "--verbose")),
        _ => false,
    }
}

/// `git branch` that lists: no delete/move/copy/upstream flag, and a name only after `--list`.
fn branch_lists_only(args: &[&str]) -> bool {
    const MUTATING_LONG: &[&str] = &[
        "--delete",
        "--move",
        "--copy",
        "--force",
        "--set-upstream-to",
        "--unset-upstream",
        "--edit-description",
        "--track",
        "--no-track",
        "--create-reflog",
    ];
    const VALUED: &[&str] = &[
        "--contains",
        "--no-contains",
        "--merged",
        "--no-merged",
        "--points-at",
        "--sort",
        "--format",
    ];
    let listing = args.iter().any(|a| matches!(*a, "--list" | "-l"));
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let long = arg.split('=').next().unwrap_or(arg);
        if MUTATING_LONG.contains(&long) {
            return false;
        }
        if let Some(flags) = arg.strip_prefix('-').filter(|f| !f.starts_with('-')) {
            if flags.chars().any(|c| "dDmMcCfut".contains(c)) {
                return false;
            }
        } else if VALUED.contains(arg) {
            i += 1;
        } else if !arg.starts_with('-') && !listing {
            return false;
        }
        i += 1;
    }
    true
}
