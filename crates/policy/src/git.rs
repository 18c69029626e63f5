//! Read-only `git`, judged for what a repository's configuration can make it run.
//!
//! The policy judges a command line; it cannot rewrite one. A "read-only" git command still runs
//! programs its configuration names, and the agent can write that configuration with an earlier
//! call (`.git/config`, `~/.gitconfig`, an included file). So git is read-only only when the
//! command line itself switches every such program off:
//!
//! - `GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null`: no system or global file is read, so
//!   only the repository's own config (and the command line) count;
//! - `GIT_NO_LAZY_FETCH=1`: a partial clone's missing objects are not fetched, which would run a
//!   transport (`remote.*.uploadpack`, `core.sshCommand`, `ext::`) named by the repository
//!   (git 2.44 and later; an older git ignores it, and a partial clone stays a risk there);
//! - `--no-pager` (or `-P`): `core.pager` and `pager.<cmd>` are not run;
//! - `-c core.fsmonitor=false`: the fsmonitor hook, run whenever the index is read, is off;
//! - `-c core.hooksPath=/dev/null`: no hook runs, e.g. `post-index-change` on an index refresh;
//! - for `log`, `show` and `diff`: `--no-ext-diff` (`diff.external`, `diff.<driver>.command`),
//!   `--no-textconv` (`diff.<driver>.textconv`) and, for `log`/`show`,
//!   `--no-show-signature` (`log.showSignature` runs `gpg.program`), and for `log`/`show` an
//!   explicit format without `%G` placeholders (`--oneline`, `--format=%h %s`): the
//!   signature placeholders run `gpg.program` too, and a config's `format.pretty` or
//!   `pretty.<name>` could supply them.
//!
//! Command-line `-c` beats every config file. Drivers named by `.gitattributes` are the one
//! thing no fixed `-c` list can switch off: a `filter.<name>.clean` the repository names runs
//! whenever git hashes a worktree file. So the commands that read the worktree through
//! filters (`status`, a worktree `diff`, `blame`, `ls-files -m`) always ask; a `diff` must
//! be `--cached`/`--staged`. Rewriting the command instead belongs to the shell tool.

/// Leading assignments read-only git needs, exactly as written.
pub(crate) const REQUIRED_ENV: &[&str] = &[
    "GIT_CONFIG_NOSYSTEM=1",
    "GIT_CONFIG_GLOBAL=/dev/null",
    "GIT_NO_LAZY_FETCH=1",
];

/// `-c` overrides read-only git needs; no other `-c` is accepted.
const REQUIRED_OVERRIDES: &[&str] = &["core.fsmonitor=false", "core.hooksPath=/dev/null"];

/// Options `log`, `show` and `diff` need; the first two for `diff`.
const NO_DIFF_PROGRAMS: &[&str] = &["--no-ext-diff", "--no-textconv", "--no-show-signature"];

/// Options that turn the programs back on, or write a file.
const TURN_BACK_ON: &[&str] = &["--ext-diff", "--textconv", "--show-signature", "--no-index"];

/// Pretty formats git defines itself; any other `--pretty=NAME` is a config's `pretty.NAME`.
const BUILTIN_FORMATS: &[&str] = &[
    "oneline",
    "short",
    "medium",
    "full",
    "fuller",
    "reference",
    "email",
    "raw",
    "mboxrd",
];

/// Whether `args` choose a format, and every format chosen verifies no signature.
fn explicit_format(args: &[&str]) -> bool {
    let formats: Vec<&str> = args
        .iter()
        .filter_map(|a| {
            a.strip_prefix("--format=")
                .or_else(|| a.strip_prefix("--pretty="))
        })
        .collect();
    let safe = |f: &&str| (BUILTIN_FORMATS.contains(f) || f.contains('%')) && !f.contains("%G");
    (args.contains(&"--oneline") || !formats.is_empty()) && formats.iter().all(safe)
}

/// Whether `git <args>`, run with the leading assignments `prefix`, is read-only.
pub(crate) fn git_read_only(prefix: &[String], args: &[&str]) -> bool {
    let isolated = REQUIRED_ENV.iter().all(|e| prefix.iter().any(|p| p == e));
    let Some(i) = hardened_globals(args) else {
        return false;
    };
    let Some((sub, rest)) = args.get(i..).and_then(<[&str]>::split_first) else {
        return false;
    };
    let has = |option: &str| rest.contains(&option);
    let diff_safe = |needed: &[&str]| {
        needed.iter().all(|o| has(o))
            && !rest
                .iter()
                .any(|a| TURN_BACK_ON.contains(a) || a.starts_with("--output"))
    };
    isolated
        && match *sub {
            "rev-parse" => true,
            "ls-files" => !rest.iter().any(|a| reads_worktree_content(a)),
            "log" | "show" => diff_safe(NO_DIFF_PROGRAMS) && explicit_format(rest),
            "diff" => diff_safe(&NO_DIFF_PROGRAMS[..2]) && (has("--cached") || has("--staged")),
            // `%(signature)` verifies a signature with `gpg.program`.
            "branch" => branch_lists_only(rest) && !rest.iter().any(|a| a.contains("%(signature")),
            "remote" => rest.iter().all(|a| matches!(*a, "-v" | "--verbose")),
            _ => false,
        }
}

/// Index of the subcommand when the global options are `--no-pager`, every required `-c`
/// override and nothing else but `-C DIR` and `--no-optional-locks`.
fn hardened_globals(args: &[&str]) -> Option<usize> {
    let (mut pager_off, mut overrides) = (false, Vec::new());
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        match *arg {
            "--no-pager" | "-P" => pager_off = true,
            "--no-optional-locks" => {}
            "-C" => i += 1,
            "-c" => {
                let value = *args.get(i + 1)?;
                REQUIRED_OVERRIDES.contains(&value).then_some(())?;
                overrides.push(value);
                i += 1;
            }
            // `--exec-path`, `--git-dir`, `-p` and the like: not read-only.
            a if a.starts_with('-') => return None,
            _ => break,
        }
        i += 1;
    }
    let all = REQUIRED_OVERRIDES.iter().all(|o| overrides.contains(o));
    (pager_off && all).then_some(i)
}

/// `ls-files -m`/`-d`/`-k` compare worktree files with the index, through filter drivers.
fn reads_worktree_content(arg: &str) -> bool {
    match arg.strip_prefix("--") {
        Some(long) => matches!(long, "modified" | "deleted" | "killed"),
        None => arg.starts_with('-') && arg[1..].contains(['m', 'd', 'k']),
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
