//! Where a command runs: `cd`, `pushd` and `popd` earlier on the line, and `env -C DIR`, can
//! take a command out of the workspace, after which even `rm -rf home` is outside it.

use super::program;
use crate::part::{Analysis, Part};

/// Whether `part` may run outside the workspace: some `cd`-like command before it on the line
/// (in any subshell, to stay on the safe side), or its own `env -C`, leaves the workspace.
pub(super) fn moved_outside(part: &Part, analysis: &Analysis) -> bool {
    let mut depth: Vec<&str> = Vec::new();
    let earlier = analysis.parts.iter().filter(|p| p.id < part.id);
    // `CDPATH=/` makes `cd home` go to `/home`.
    if earlier.clone().any(sets_cdpath) {
        return true;
    }
    let own = part
        .chdir
        .as_deref()
        .map(|d| Some(d).filter(|d| is_followable(d)));
    for moved in earlier.filter_map(target).chain(own) {
        let Some(dir) = moved else {
            return true;
        };
        for component in dir.split('/') {
            match component {
                "" | "." => {}
                ".." if depth.pop().is_none() => return true,
                ".." => {}
                c => depth.push(c),
            }
        }
    }
    false
}

/// A relative directory whose place is known from the text (`build`, `../x`), as opposed to
/// `/`, `~`, `-`, `+1` or anything expanded at run time.
fn is_followable(dir: &str) -> bool {
    !dir.starts_with(['/', '~', '-', '+']) && !dir.contains(['$', '`', '*', '?', '[', '{'])
}

/// For a `cd`-like part: `Some(Some(dir))` for a directory it moves to, `Some(None)` for a move
/// that cannot be followed (`cd` alone is home, `cd -`, `popd`, `pushd +1`); `None` otherwise.
fn target(part: &Part) -> Option<Option<&str>> {
    match program(part) {
        "cd" | "pushd" | "chdir" => {}
        "popd" => return Some(None),
        _ => return None,
    }
    let operand = part.words[1..]
        .iter()
        .find(|w| !matches!(w.as_str(), "-L" | "-P" | "-e" | "-@" | "-n" | "--"));
    Some(operand.map(String::as_str).filter(|d| is_followable(d)))
}

/// `CDPATH=…` alone, before a command, or as `export`/`declare` arguments.
fn sets_cdpath(part: &Part) -> bool {
    part.assignments.iter().any(|a| a == "CDPATH")
        || part.words.iter().any(|w| w.starts_with("CDPATH="))
}
